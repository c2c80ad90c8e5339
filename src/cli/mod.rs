//! The `horsec` command line: `check`, `compile --emit …`, `run`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand, ValueEnum};
use horsec_runtime::data::{ArrowFileFormat, Database};
use horsec_runtime::format::OutputFormat;
use horsec_runtime::gpu::{Device, GpuError};

use crate::api::{Engine, Output, Query};
use crate::driver::{compile_for, Compilation, Stage, Target};

/// `eprintln!` for the command's messages, except that a standard error nobody reads any
/// more (`2>&1 | head`) drops the message instead of panicking, as [`write_stdout`] does for
/// a closed standard output.
macro_rules! report {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// [`report!`] without the line break (`eprint!`).
macro_rules! report_text {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr(), $($arg)*);
    }};
}

mod bench;
mod compile;
mod generate;
mod run;

use bench::*;
use compile::*;
use generate::*;
use run::*;

#[derive(Parser, Debug)]
#[command(name = "horsec", version, about = "A GPU query compiler for HorseIR")]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Parse and type-check programs; exit 0 when all are valid.
    Check {
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Compile a program and print one stage's output.
    Compile {
        file: PathBuf,
        /// Which stage to print.
        #[arg(long, value_enum, default_value_t = Emit::Typed)]
        emit: Emit,
        /// Write the output to this directory (as FILE-STEM.EXT) instead of stdout.
        #[arg(long)]
        out: Option<PathBuf>,
        /// The backend `--emit plan` compiles for.
        #[arg(long, value_enum, default_value_t = Backend::Gpu)]
        backend: Backend,
    },
    /// Run a program and print the table it returns.
    Run(RunArgs),
    /// Write TPC-H at a scale factor as dbgen `.tbl`, Parquet or Arrow IPC files (the data
    /// `run --data DIR` reads).
    GenTpch {
        /// Scale factor (1 = 6 million lineitems).
        #[arg(long, value_name = "SF")]
        sf: f64,
        /// Directory to write `<table>.tbl` (or `.parquet`, `.arrow`) into (created when
        /// missing).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// File format: dbgen text, Parquet (Snappy) or an Arrow IPC file.
        #[arg(long, value_enum, default_value_t = TableFormat::Tbl)]
        format: TableFormat,
    },
    /// Write seeded Datalog inputs: a power-law or grid (road-like) graph as CSV
    /// (`src,dst`), or CSPA-like `assign.facts` and `dereference.facts` into a directory.
    GenGraph(GenGraphArgs),
    /// Benchmark: `--graph SF10,SF100` times shortest-path lengths of random pairs, GPU IBFS
    /// beside the multi-threaded CPU MS-BFS (checking they agree); `--reach dag` times the
    /// reachability index (`@reach_index`) build and queries on both backends.
    Bench(BenchArgs),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum TableFormat {
    Tbl,
    Parquet,
    Arrow,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum GraphKind {
    /// Directed, power-law degrees.
    PowerLaw,
    /// Road-like: links between neighbours of a square grid.
    Grid,
    /// CSPA-like assign/dereference facts (`--out` is a directory) with the locality of
    /// real points-to facts: variables in functions of 4–28 (16 on average), 98 % of
    /// assigns local and short (`a = b`, `b` among the 4 variables declared before `a`),
    /// 2 % calls (an argument into or a return value out of a callee of power-law
    /// popularity), dereferences inside one function on a few popular pointers. httpd's
    /// size: `--vertices 1000000 --assign 360000 --dereference 1100000` (fewer variables
    /// than dereferences makes the aliases spread across the program).
    Cspa,
}

#[derive(clap::Args, Debug)]
struct GenGraphArgs {
    #[arg(long, value_enum)]
    kind: GraphKind,
    /// Vertices of a graph, or program variables of CSPA facts (at least 8; about one per
    /// dereference keeps the points-to fixpoint local).
    #[arg(long)]
    vertices: u64,
    /// Edges of a graph.
    #[arg(long, default_value_t = 0)]
    edges: u64,
    /// CSPA: `assign` facts (httpd: 360000).
    #[arg(long, default_value_t = 360_000)]
    assign: u64,
    /// CSPA: `dereference` facts (httpd: 1100000).
    #[arg(long, default_value_t = 1_100_000)]
    dereference: u64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The CSV file (graphs) or directory (CSPA) to write.
    #[arg(long)]
    out: PathBuf,
}

#[derive(clap::Args, Debug)]
struct BenchArgs {
    /// Query programs to benchmark on the GPU and the CPU (TPC-H data from --tpch/--data).
    files: Vec<PathBuf>,
    /// TPC-H scale factor generated in process for the query programs (default 0.01).
    #[arg(long, value_name = "SF", conflicts_with = "data")]
    tpch: Option<f64>,
    /// A directory of dbgen `.tbl` files for the query programs (for `.dl` programs: of
    /// `REL.facts` files).
    #[arg(long, value_name = "DIR")]
    data: Option<PathBuf>,
    /// For `.dl` programs: the CSV file of input relation NAME; repeatable.
    #[arg(long = "table", value_name = "NAME=PATH", value_parser = parse_table_arg)]
    tables: Vec<(String, PathBuf)>,
    /// Use the adapter whose name contains this text (also `HORSEC_ADAPTER`).
    #[arg(long, value_name = "NAME")]
    adapter: Option<String>,
    /// Median over this many timed runs.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Generated graphs sized like LDBC SNB persons/knows: SF1, SF10, SF100 (comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "PRESET")]
    graph: Vec<String>,
    /// Random (source, destination) pairs per search (comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "COUNT", default_values_t = [1024, 16384, 65536])]
    pairs: Vec<usize>,
    /// Seed of the generated graph and pairs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// GPU lanes per vertex in u32 words (omega = 32 x W, W up to 32); 0 chooses.
    #[arg(long, default_value_t = 0)]
    lane_words: usize,
    /// Reachability-index benchmark on a generated graph: dag, citation or clustered.
    #[arg(long, value_name = "GRAPH")]
    reach: Option<String>,
    /// --reach: vertices of the generated graph.
    #[arg(long, default_value_t = 1_500_000)]
    vertices: usize,
    /// --reach: average out-degree (edges = vertices x degree).
    #[arg(long, default_value_t = 50)]
    degree: usize,
    /// --reach: labels per component (1 to 8).
    #[arg(long, default_value_t = 3)]
    labels: usize,
    /// --reach: random pairs queried.
    #[arg(long, default_value_t = 100_000)]
    reach_pairs: usize,
    /// --reach: pairs (a prefix) given to plain @reachable on both backends; default: all.
    #[arg(long)]
    plain_pairs: Option<usize>,
    /// --reach: hub components whose reach sets settle pairs before the pruned search (0 to
    /// 1024; 0: labels alone).
    #[arg(long, default_value_t = horsec_runtime::graph::grail_gpu::DEFAULT_HUBS)]
    hubs: usize,
    /// Measure the device's copy bandwidth (buffer to buffer on the device) and print it as
    /// `device copy bandwidth: X GB/s` (bytes read plus written per second).
    #[arg(long)]
    bandwidth: bool,
    /// Time the query programs on the GPU only (no CPU backend runs).
    #[arg(long)]
    gpu_only: bool,
    /// Seconds of untimed warm GPU runs of each query before its timed runs: an idle GPU
    /// runs at low clocks and short runs do not raise them (on an H100, q6 at SF 10 took
    /// 2.4 ms alone and 0.6 ms after a busy spell), and the first runs over freshly uploaded
    /// columns can be slower (q1 at SF 10: GPU busy 3.7 ms for about 40 runs, then 2.3–3.0 ms
    /// for about 60, then 1.0 ms; a pause after the upload does not shorten it, runs do);
    /// 0 times the runs straight after the cold one.
    #[arg(long, default_value_t = 1.0, value_name = "SECONDS")]
    warm_up: f64,
    /// Time loading these TPC-H tables (comma-separated), every column, each from its file
    /// in --data DIR (`.tbl`, `.parquet`, …; foreign keys as plain keys); prints
    /// `load TABLE (FILE): best S s of RUNS (ROWS rows)`, then the best run's wall time by
    /// phase: `  phases: read file S s, parse S s, …`.
    #[arg(long, value_delimiter = ',', value_name = "TABLE", requires = "data")]
    load: Vec<String>,
    /// Split each query's median warm GPU run by kind of work (kernel and library steps
    /// with their GPU time, host waits, read-backs, buffers created, encoding, submissions).
    #[arg(long)]
    time: bool,
}

#[derive(clap::Args, Debug)]
struct RunArgs {
    file: PathBuf,
    /// Where builtins execute. Default: the GPU; on a machine with no GPU adapter at all,
    /// the CPU, with a warning saying so.
    #[arg(long, value_enum)]
    backend: Option<Backend>,
    /// Use the adapter whose name contains this text (also `HORSEC_ADAPTER`).
    #[arg(long, value_name = "NAME")]
    adapter: Option<String>,
    /// Generate TPC-H data in process at this scale factor. Without --tpch, --data or
    /// --table, the default data is TPC-H SF 0.01, generated once into the cache directory
    /// (`$HORSEC_CACHE_DIR`, else `$XDG_CACHE_HOME/horsec`, else `~/.cache/horsec`) as Parquet
    /// and read from there on later runs.
    #[arg(long, value_name = "SF", conflicts_with = "data")]
    tpch: Option<f64>,
    /// Load TPC-H from a directory holding each table as `<table>.tbl` (dbgen), `.parquet`,
    /// `.arrow`/`.feather` (Arrow IPC) or `.csv`. Only the tables and columns the program
    /// reads are loaded.
    #[arg(long, value_name = "DIR")]
    data: Option<PathBuf>,
    /// Output format; parquet and arrow write a file and need --out.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Write the result to this file instead of stdout.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Print where the time went (to stderr).
    #[arg(long)]
    time: bool,
    /// Load a file as table NAME, its format by extension; repeatable. `.parquet` and
    /// `.arrow`/`.feather` columns keep their types (decimals become f64, strings sym,
    /// timestamps dt; a type horsec cannot hold is an error naming the column). A `.csv`
    /// header names the columns, with an optional type (`price:f64`: i32, i64, f64, date,
    /// sym or str; a value that does not parse is an error naming file, line and column);
    /// other CSV column types are inferred (i64, f64, date, else sym). Every column the
    /// program reads must be there. Without --tpch or --data, only these tables are loaded.
    #[arg(long = "table", value_name = "NAME=PATH", value_parser = parse_table_arg)]
    tables: Vec<(String, PathBuf)>,
}

/// `NAME=PATH` of `--table`.
fn parse_table_arg(text: &str) -> Result<(String, PathBuf), String> {
    match text.split_once('=') {
        Some((name, path)) if !name.is_empty() && !path.is_empty() => {
            Ok((name.to_string(), PathBuf::from(path)))
        }
        _ => Err(format!("expected NAME=PATH, got `{text}`")),
    }
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Emit {
    /// The HorseIR a Datalog (`.dl`) program lowers to; for a `.hir` file, the parsed
    /// program printed back.
    Hir,
    /// The parsed program printed back as HorseIR.
    Ast,
    /// The typed program, every type explicit.
    Typed,
    /// The shape of every value of every function.
    Shapes,
    /// The outlined program: host statements, library calls and `kernel` definitions.
    Outline,
    /// The dependence graph in Graphviz dot, kernels as clusters.
    Dot,
    /// One WGSL module per kernel (with --out: one `<kernel>.wgsl` file each).
    Wgsl,
    /// The runtime plan.
    Plan,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Backend {
    /// Kernels and library builtins on the GPU through wgpu (the default).
    Gpu,
    /// Every builtin on the CPU (the reference implementation).
    Cpu,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Format {
    Table,
    Tsv,
    Csv,
    Json,
    /// A Parquet file (Snappy); needs --out.
    Parquet,
    /// An Arrow IPC file; needs --out.
    Arrow,
}

impl Format {
    /// The text format, or the Arrow file format.
    fn output(self) -> Result<OutputFormat, ArrowFileFormat> {
        match self {
            Format::Table => Ok(OutputFormat::Table),
            Format::Tsv => Ok(OutputFormat::Tsv),
            Format::Csv => Ok(OutputFormat::Csv),
            Format::Json => Ok(OutputFormat::Json),
            Format::Parquet => Err(ArrowFileFormat::Parquet),
            Format::Arrow => Err(ArrowFileFormat::ArrowIpc),
        }
    }
}

/// Parses the command line and runs it. Exit code 0 on success, 1 on any error.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    // Deeply recursive HorseIR programs recurse in the interpreter: give it room, and let
    // the interpreter's own depth limit turn runaway recursion into an error.
    let worker = std::thread::Builder::new()
        .stack_size(512 << 20)
        .spawn(move || match cli.command {
            Command::Check { files } => check(&files),
            Command::Compile {
                file,
                emit,
                out,
                backend,
            } => compile_command(&file, emit, out.as_deref(), backend),
            Command::Run(args) => run(&args),
            Command::GenTpch { sf, out, format } => gen_tpch(sf, &out, format),
            Command::Bench(args) => bench(&args),
            Command::GenGraph(args) => gen_graph(&args),
        });
    let ok = match worker.map(|w| w.join()) {
        Ok(Ok(ok)) => ok,
        Ok(Err(_)) => {
            report!("error: internal compiler error (a bug in horsec); please report it");
            false
        }
        Err(e) => {
            report!("error: cannot start the worker thread: {e}");
            false
        }
    };
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn read_source(path: &Path) -> Option<String> {
    match std::fs::read(path) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(text) => Some(text),
            Err(e) => {
                let offset = e.utf8_error().valid_up_to();
                report!(
                    "{}: error: the file is not valid UTF-8 (at byte {offset})",
                    path.display()
                );
                None
            }
        },
        Err(e) => {
            report!("{}: error: cannot read the file: {e}", path.display());
            None
        }
    }
}

/// Compiles `path` up to `until`, printing diagnostics; None when it failed.
fn compile_file(path: &Path, until: Stage, backend: Backend) -> Option<Compilation> {
    let text = read_source(path)?;
    let target = match backend {
        Backend::Gpu => Target::Gpu,
        Backend::Cpu => Target::Cpu,
    };
    let compilation = compile_for(&path.display().to_string(), &text, until, target);
    report_text!("{}", compilation.render_diagnostics());
    if compilation.failed() {
        None
    } else {
        Some(compilation)
    }
}

fn write_output(file: &Path, out: Option<&Path>, ext: &str, text: &str) -> bool {
    let Some(dir) = out else {
        return write_stdout(text);
    };
    let stem = file
        .file_stem()
        .map_or_else(|| "out".to_string(), |s| s.to_string_lossy().into_owned());
    let target = dir.join(format!("{stem}.{ext}"));
    let written = std::fs::create_dir_all(dir).and_then(|_| std::fs::write(&target, text));
    if let Err(e) = written {
        report!("{}: error: cannot write: {e}", target.display());
        return false;
    }
    true
}

/// Whether the user asked for an adapter by name (`--adapter` or `HORSEC_ADAPTER`).
fn adapter_named(args: &RunArgs) -> bool {
    args.adapter.is_some()
        || std::env::var(horsec_runtime::gpu::ADAPTER_ENV).is_ok_and(|name| !name.is_empty())
}

/// The GPU device: the named adapter, or the best one (`Device::new` honours
/// `HORSEC_ADAPTER`).
fn open_device(adapter: Option<&str>) -> Result<Device, GpuError> {
    match adapter {
        Some(name) => Device::with_adapter_filter(Some(name)),
        None => Device::new(),
    }
}

/// Writes `text` to stdout; a reader that went away (`| head`) is not an error.
fn write_stdout(text: &str) -> bool {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Ok(()) => true,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => true,
        Err(e) => {
            report!("error: writing to stdout: {e}");
            false
        }
    }
}

fn ms(d: Duration) -> String {
    format!("{:>10.3} ms", d.as_secs_f64() * 1e3)
}
