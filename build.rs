//! Generates the HorseIR parser from `grammar/horseir.lalrpop`.

fn main() {
    println!("cargo:rerun-if-changed=grammar");
    // `use_cargo_dir_conventions` sets the input directory to `src/`, so `grammar/` is set after.
    lalrpop::Configuration::new()
        .use_cargo_dir_conventions()
        .set_in_dir("grammar")
        .emit_rerun_directives(true)
        .process()
        .expect("the HorseIR grammar in grammar/ must build");
}
