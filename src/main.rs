fn main() {
    println!("moot");
}
