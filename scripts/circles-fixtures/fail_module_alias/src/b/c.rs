use crate::a::NAME;

pub fn run() {
    let _ = NAME;
}
