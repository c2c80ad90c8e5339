#[global_allocator]
static ALLOCATOR: horsec::allocator::Mimalloc = horsec::allocator::Mimalloc;

fn main() -> std::process::ExitCode {
    horsec::cli::main()
}
