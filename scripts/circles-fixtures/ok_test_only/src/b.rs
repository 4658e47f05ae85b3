use crate::a::LIMIT;

pub fn check(n: u32) -> bool {
    n <= LIMIT
}
