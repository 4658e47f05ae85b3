pub use other::Config;

pub fn load() -> Config {
    crate::b::read()
}
