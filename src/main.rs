fn main() {
    println!("horsec");
}
