#[derive(serde::Serialize)]
pub struct Row {
    #[serde(serialize_with = "crate::b::decimal")]
    pub amount: u128,
}

pub const BASE: u32 = 10;
