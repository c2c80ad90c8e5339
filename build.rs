//! Generates the HorseIR parser from `grammar/horseir.lalrpop`.

fn main() {
    println!("cargo:rerun-if-changed=grammar");
    lalrpop::Configuration::new()
        .set_in_dir("grammar")
        .use_cargo_dir_conventions()
        .emit_rerun_directives(true)
        .process()
        .expect("the HorseIR grammar in grammar/ must build");
}
