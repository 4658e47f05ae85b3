use crate::Item;

pub fn use_item(_: Item) {}
