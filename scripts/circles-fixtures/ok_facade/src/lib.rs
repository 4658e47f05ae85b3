mod a;
mod b;

pub use a::Item;
pub use b::use_item;
