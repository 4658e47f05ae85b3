use crate::a::DEFAULT;

pub fn names() -> Vec<String> {
    vec![DEFAULT.to_owned()]
}
