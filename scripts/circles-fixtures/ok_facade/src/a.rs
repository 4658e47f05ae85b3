pub struct Item;
