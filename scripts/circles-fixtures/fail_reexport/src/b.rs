pub fn read() -> crate::a::Config {
    Default::default()
}
