// mimalloc rather than the system allocator: compiling a query allocates many small
// values (facts, shapes, WGSL strings), and glibc's malloc was a quarter of compile time.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    horsec::cli::main()
}
