use crate::a::BASE;

pub fn decimal<S: serde::Serializer>(v: &u128, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{v} in base {BASE}"))
}
