fn main() -> std::process::ExitCode {
    horsec::cli::main()
}
