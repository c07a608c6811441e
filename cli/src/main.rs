mod demo;
fn main() {}
