mod a;
mod b;

fn main() {}
