use crate::b;

pub const NAME: &str = "a";

pub fn start() {
    b::c::run();
}
