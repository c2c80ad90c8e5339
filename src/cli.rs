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
    /// CSPA-like assign/dereference facts (`--out` is a directory).
    Cspa,
}

#[derive(clap::Args, Debug)]
struct GenGraphArgs {
    #[arg(long, value_enum)]
    kind: GraphKind,
    /// Vertices of a graph, or program variables of CSPA facts.
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
            eprintln!("error: internal compiler error (a bug in horsec); please report it");
            false
        }
        Err(e) => {
            eprintln!("error: cannot start the worker thread: {e}");
            false
        }
    };
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// `horsec bench prog.dl ...`: Datalog programs on their `--table`/`--data` inputs.
fn bench_datalog_files(args: &BenchArgs) -> bool {
    let device = match open_device(args.adapter.as_deref()) {
        Ok(device) => device,
        Err(e) => {
            eprintln!("error: horsec bench needs a GPU: {e}");
            return false;
        }
    };
    let _ = writeln!(std::io::stdout(), "device: {}", device.describe());
    args.files.iter().all(|file| {
        let inputs = match crate::datalog::bench::inputs(file) {
            Ok(inputs) => inputs,
            Err(e) => {
                eprint!("{e}");
                return false;
            }
        };
        let start = Instant::now();
        let Some(db) = datalog_database(&inputs, &args.tables, args.data.as_deref()) else {
            return false;
        };
        eprintln!(
            "{}: data loaded in {:.1} s",
            file.display(),
            start.elapsed().as_secs_f64()
        );
        let stdout = std::io::stdout();
        match crate::datalog::bench::bench_datalog(
            file,
            &db,
            &device,
            args.runs,
            args.time,
            &mut stdout.lock(),
        ) {
            Ok(()) => true,
            Err(e) => {
                eprintln!("error: {e}");
                false
            }
        }
    })
}

/// `horsec bench FILE...`: the query benchmark (see `crate::bench`).
fn bench_files(args: &BenchArgs) -> bool {
    if args
        .files
        .iter()
        .any(|f| crate::datalog::is_datalog(&f.display().to_string()))
    {
        return bench_datalog_files(args);
    }
    let device = match open_device(args.adapter.as_deref()) {
        Ok(device) => device,
        Err(e) => {
            eprintln!("error: horsec bench needs a GPU: {e}");
            return false;
        }
    };
    let start = Instant::now();
    let progress = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let loaded = match (&args.data, args.tpch) {
        (Some(dir), _) => Database::from_tbl_dir(dir, progress),
        (None, sf) => Database::tpch(sf.unwrap_or(0.01), progress),
    };
    let db = match loaded {
        Ok(db) => db,
        Err(e) => {
            eprintln!("error: loading data: {e}");
            return false;
        }
    };
    eprintln!("data loaded in {:.1} s", start.elapsed().as_secs_f64());
    let stdout = std::io::stdout();
    let cpu_runs = if args.gpu_only { 0 } else { args.runs };
    let mut out = stdout.lock();
    match crate::bench::bench_queries(
        &args.files,
        &db,
        &device,
        args.runs,
        cpu_runs,
        args.time,
        &mut out,
    ) {
        Ok(_) => {
            if let Err(e) = device.save_pipeline_cache() {
                eprintln!("warning: {e}");
            }
            true
        }
        Err(e) => {
            eprintln!("error: {e}");
            false
        }
    }
}

/// `horsec bench --load TABLES --data DIR`: the best of `--runs` loads of each table's file.
fn bench_load(args: &BenchArgs) -> bool {
    use horsec_runtime::data::FileFormat;
    let Some(dir) = &args.data else {
        return false;
    };
    for table in &args.load {
        let Some(path) = FileFormat::find_table(dir, table) else {
            eprintln!("error: no file of table `{table}` in `{}`", dir.display());
            return false;
        };
        let mut best = f64::INFINITY;
        let mut best_phases = Vec::new();
        let mut rows = 0;
        for _ in 0..args.runs.max(1) {
            let start = Instant::now();
            let mut db = Database::new();
            let (loaded, phases) = horsec_runtime::data::time_phases(|| db.load_file(table, &path));
            if let Err(e) = loaded {
                eprintln!("error: {e}");
                return false;
            }
            let seconds = start.elapsed().as_secs_f64();
            if seconds < best {
                best = seconds;
                best_phases = phases;
            }
            rows = db.table(table).map_or(0, |t| t.rows());
        }
        println!(
            "load {table} ({}): best {best:.3} s of {} ({rows} rows)",
            path.display(),
            args.runs.max(1)
        );
        let phases: Vec<String> = best_phases
            .iter()
            .map(|(phase, spent)| format!("{phase} {:.3} s", spent.as_secs_f64()))
            .collect();
        println!("  phases: {}", phases.join(", "));
    }
    true
}

/// `horsec bench --bandwidth`: the device's copy bandwidth, in a line scripts read.
fn bench_bandwidth(args: &BenchArgs) -> bool {
    use horsec_runtime::gpu::bandwidth::measure_copy_bandwidth;
    let device = match open_device(args.adapter.as_deref()) {
        Ok(device) => device,
        Err(e) => {
            eprintln!("error: horsec bench --bandwidth needs a GPU: {e}");
            return false;
        }
    };
    // 1 GiB (or the device's buffer limit), ten copies per submission, best of five.
    match measure_copy_bandwidth(&device, 1 << 30, 10, 5) {
        Ok(b) => {
            println!("device: {}", device.describe());
            println!(
                "device copy bandwidth: {:.1} GB/s ({} MiB copied {} times per submission, best of 5)",
                b.bytes_per_second() / 1e9,
                b.buffer_bytes >> 20,
                b.copies
            );
            true
        }
        Err(e) => {
            eprintln!("error: measuring the copy bandwidth: {e}");
            false
        }
    }
}

fn bench(args: &BenchArgs) -> bool {
    use horsec_runtime::graph::bench::{preset_named, run, GraphBench};
    use horsec_runtime::graph::gpu::GpuOptions;
    if args.bandwidth && !bench_bandwidth(args) {
        return false;
    }
    if !args.load.is_empty() {
        if !bench_load(args) {
            return false;
        }
        if args.files.is_empty() && args.graph.is_empty() && args.reach.is_none() {
            return true;
        }
    }
    if !args.files.is_empty() && !bench_files(args) {
        return false;
    }
    if let Some(graph) = &args.reach {
        return bench_reach(args, graph);
    }
    if args.graph.is_empty() {
        if args.files.is_empty() && !args.bandwidth {
            eprintln!(
                "error: nothing to benchmark: give query FILEs, --bandwidth or --graph SF1,SF10,SF100"
            );
            return false;
        }
        return true;
    }
    let mut presets = Vec::new();
    for name in &args.graph {
        match preset_named(name) {
            Some(preset) => presets.push(preset),
            None => {
                eprintln!("error: unknown graph `{name}`: expected SF1, SF10 or SF100");
                return false;
            }
        }
    }
    let config = GraphBench {
        presets,
        pair_counts: args.pairs.clone(),
        runs: args.runs,
        seed: args.seed,
        gpu: GpuOptions {
            lane_words: args.lane_words,
            ..GpuOptions::default()
        },
    };
    let stdout = std::io::stdout();
    match run(&config, &mut stdout.lock()) {
        Ok(()) => true,
        Err(e) => {
            eprintln!("error: {e}");
            false
        }
    }
}

fn gen_graph(args: &GenGraphArgs) -> bool {
    use horsec_runtime::graph::facts::{cspa, grid, power_law, write_pairs};
    let written = match args.kind {
        GraphKind::PowerLaw | GraphKind::Grid => {
            let generate = if args.kind == GraphKind::Grid {
                grid
            } else {
                power_law
            };
            generate(args.vertices, args.edges, args.seed).and_then(|edges| {
                write_pairs(&args.out, &edges, Some(("src", "dst"))).map(|_| edges.len())
            })
        }
        GraphKind::Cspa => std::fs::create_dir_all(&args.out)
            .map_err(|e| {
                horsec_runtime::error::RuntimeError::new(format!("{}: {e}", args.out.display()))
            })
            .and_then(|_| cspa(args.vertices, args.assign, args.dereference, args.seed))
            .and_then(|(assign, dereference)| {
                write_pairs(&args.out.join("assign.facts"), &assign, None)?;
                write_pairs(&args.out.join("dereference.facts"), &dereference, None)?;
                Ok(assign.len() + dereference.len())
            }),
    };
    match written {
        Ok(n) => {
            eprintln!("wrote {n} tuples to {}", args.out.display());
            true
        }
        Err(e) => {
            eprintln!("error: {e}");
            false
        }
    }
}

fn bench_reach(args: &BenchArgs, graph: &str) -> bool {
    use horsec_runtime::graph::reach_bench::{run, ReachBench, ReachGraph};
    let Some(kind) = ReachGraph::named(graph) else {
        eprintln!(
            "error: unknown graph `{graph}` for --reach: expected dag, citation or clustered"
        );
        return false;
    };
    if !(1..=8).contains(&args.labels) {
        eprintln!("error: --labels must be 1 to 8, got {}", args.labels);
        return false;
    }
    if args.hubs > horsec_runtime::graph::grail_gpu::MAX_HUBS {
        eprintln!(
            "error: --hubs must be 0 to {}, got {}",
            horsec_runtime::graph::grail_gpu::MAX_HUBS,
            args.hubs
        );
        return false;
    }
    let config = ReachBench {
        graph: kind,
        vertices: args.vertices,
        degree: args.degree,
        labels: args.labels,
        pairs: args.reach_pairs,
        plain_pairs: args.plain_pairs.unwrap_or(args.reach_pairs),
        hubs: args.hubs,
        runs: args.runs,
        seed: args.seed,
    };
    let stdout = std::io::stdout();
    match run(&config, &mut stdout.lock()) {
        Ok(()) => true,
        Err(e) => {
            eprintln!("error: {e}");
            false
        }
    }
}

fn gen_tpch(sf: f64, out: &Path, format: TableFormat) -> bool {
    use horsec_runtime::data::{write_tpch_files, write_tpch_tbl, ArrowFileFormat};
    let start = std::time::Instant::now();
    let written = match format {
        TableFormat::Tbl => write_tpch_tbl(sf, out, true),
        TableFormat::Parquet => write_tpch_files(sf, out, ArrowFileFormat::Parquet, true),
        TableFormat::Arrow => write_tpch_files(sf, out, ArrowFileFormat::ArrowIpc, true),
    };
    match written {
        Ok(()) => {
            eprintln!(
                "wrote TPC-H SF {sf} to {} in {:.1} s",
                out.display(),
                start.elapsed().as_secs_f64()
            );
            true
        }
        Err(e) => {
            eprintln!("error: {e}");
            false
        }
    }
}

fn read_source(path: &Path) -> Option<String> {
    match std::fs::read(path) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(text) => Some(text),
            Err(e) => {
                let offset = e.utf8_error().valid_up_to();
                eprintln!(
                    "{}: error: the file is not valid UTF-8 (at byte {offset})",
                    path.display()
                );
                None
            }
        },
        Err(e) => {
            eprintln!("{}: error: cannot read the file: {e}", path.display());
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
    eprint!("{}", compilation.render_diagnostics());
    if compilation.failed() {
        None
    } else {
        Some(compilation)
    }
}

fn check(files: &[PathBuf]) -> bool {
    let mut all_ok = true;
    for file in files {
        all_ok &= compile_file(file, Stage::Analyze, Backend::Cpu).is_some();
    }
    all_ok
}

fn compile_command(file: &Path, emit: Emit, out: Option<&Path>, backend: Backend) -> bool {
    let until = match emit {
        Emit::Hir | Emit::Ast => Stage::Parse,
        Emit::Typed => Stage::Analyze,
        Emit::Shapes | Emit::Outline | Emit::Dot | Emit::Wgsl => Stage::Outline,
        Emit::Plan => Stage::Plan,
    };
    let Some(c) = compile_file(file, until, backend) else {
        return false;
    };
    if let Emit::Wgsl = emit {
        return emit_wgsl(file, &c, out);
    }
    let (text, ext) = match emit {
        Emit::Hir => match &c.datalog {
            Some(lowered) => (Some(lowered.hir.clone()), "hir"),
            None => (
                c.ast.as_ref().map(crate::syntax::printer::print_program),
                "hir",
            ),
        },
        Emit::Ast => (
            c.ast.as_ref().map(crate::syntax::printer::print_program),
            "hir",
        ),
        Emit::Typed => (
            c.typed.as_ref().map(crate::sema::printer::print_typed),
            "typed.hir",
        ),
        Emit::Shapes => (
            outlined_text(&c, crate::outline::print_all_shapes),
            "shapes",
        ),
        Emit::Outline => (
            outlined_text(&c, crate::outline::print_outline),
            "outline.hir",
        ),
        Emit::Dot => (outlined_text(&c, crate::outline::print_dot), "dot"),
        Emit::Plan => (
            c.plan.as_ref().map(|p| match &c.datalog {
                // How each Datalog rule runs (multiway or binary joins), then the plan.
                Some(lowered) => {
                    let mut text = String::from("// datalog rules\n");
                    for line in &lowered.rule_plans {
                        text.push_str(&format!("//   {line}\n"));
                    }
                    text + &p.display(horsec_runtime::call_sites(p.target)).to_string()
                }
                None => p.display(horsec_runtime::call_sites(p.target)).to_string(),
            }),
            "plan",
        ),
        Emit::Wgsl => (None, "wgsl"),
    };
    let Some(text) = text else {
        eprintln!(
            "{}: error: the stage produced nothing to print",
            file.display()
        );
        return false;
    };
    write_output(file, out, ext, &text)
}

/// `--emit wgsl`: every kernel's module, to stdout one after another, or with `out` one
/// `<kernel>.wgsl` file per kernel.
fn emit_wgsl(file: &Path, c: &Compilation, out: Option<&Path>) -> bool {
    let (Some(typed), Some(outlined)) = (c.typed.as_ref(), c.outlined.as_ref()) else {
        eprintln!("{}: error: the program was not outlined", file.display());
        return false;
    };
    let modules = match crate::codegen::generate_program(typed, outlined) {
        Ok(modules) => modules,
        Err(e) => {
            eprintln!("{}: error: {e}", file.display());
            return false;
        }
    };
    let Some(dir) = out else {
        let text: String = modules
            .iter()
            .map(|module| format!("// ===== kernel {} =====\n{}", module.name, module.wgsl))
            .collect();
        return write_stdout(&text);
    };
    if let Err(e) = std::fs::create_dir_all(dir) {
        eprintln!("{}: error: cannot create: {e}", dir.display());
        return false;
    }
    modules.iter().all(|module| {
        let target = dir.join(format!("{}.wgsl", module.name));
        match std::fs::write(&target, &module.wgsl) {
            Ok(()) => true,
            Err(e) => {
                eprintln!("{}: error: cannot write: {e}", target.display());
                false
            }
        }
    })
}

/// A printer of the outlined program applied to the compilation, when it got that far.
fn outlined_text(
    c: &Compilation,
    print: fn(&crate::sema::typed::TypedProgram, &crate::outline::OutlinedProgram) -> String,
) -> Option<String> {
    Some(print(c.typed.as_ref()?, c.outlined.as_ref()?))
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
        eprintln!("{}: error: cannot write: {e}", target.display());
        return false;
    }
    true
}

fn run(args: &RunArgs) -> bool {
    if let (Err(file_format), None) = (args.format.output(), &args.out) {
        let name = match file_format {
            ArrowFileFormat::Parquet => "parquet",
            ArrowFileFormat::ArrowIpc => "arrow",
        };
        eprintln!("error: --format {name} writes a file: give --out FILE");
        return false;
    }
    // The device first: which backend runs decides what to compile.
    let engine = match args.backend {
        Some(Backend::Cpu) => Engine::cpu(),
        wanted => match open_device(args.adapter.as_deref()) {
            Ok(device) => Engine::with_device(device),
            // Without a GPU the CPU runs, unless the user named an adapter: then a name
            // that matches none is an error listing the adapters there are.
            Err(e) if wanted.is_none() && e.is_no_adapter() && !adapter_named(args) => {
                eprintln!(
                    "warning: {e}; running on the CPU backend \
                     (install a Vulkan driver, e.g. mesa-vulkan-drivers, for the GPU)"
                );
                Engine::cpu()
            }
            Err(e) => {
                let flag = if adapter_named(args) {
                    "--adapter"
                } else {
                    "--backend gpu"
                };
                eprintln!("error: {flag}: {e}");
                return false;
            }
        },
    };

    let Some(text) = read_source(&args.file) else {
        return false;
    };
    let query = match engine.compile(&args.file.display().to_string(), &text) {
        Ok(query) => {
            eprint!("{}", query.warnings());
            query
        }
        Err(e) => {
            eprint!("{}", e.message);
            return false;
        }
    };

    let start = Instant::now();
    let db = match &query.compilation().datalog {
        Some(lowered) => datalog_database(&lowered.inputs, &args.tables, args.data.as_deref()),
        None => database(args, &query),
    };
    let Some(db) = db else {
        return false;
    };
    let load_time = start.elapsed();

    // With --time, library kernels get GPU timestamps too.
    if let Some(device) = engine.device() {
        device.set_profiling(args.time);
    }
    let output = match engine.run(&query, &db) {
        Ok(output) => output,
        Err(e) => {
            eprint!("{}", e.message);
            return false;
        }
    };
    let start = Instant::now();
    if !write_result(args, &output) {
        return false;
    }
    let output_time = start.elapsed();
    if let Some(device) = engine.device() {
        // Compiled pipelines for the next process; a cache that cannot be written costs
        // only time, so it is a warning.
        if let Err(e) = device.save_pipeline_cache() {
            eprintln!("warning: {e}");
        }
    }
    if args.time {
        eprint!(
            "{}",
            time_report(&query, engine.device(), &output, load_time, output_time)
        );
    }
    true
}

/// Writes what the program printed and the values it returned, to stdout or `--out`.
fn write_result(args: &RunArgs, output: &Output) -> bool {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if let Err(e) = out.write_all(&output.printed) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            return true;
        }
        eprintln!("error: writing to stdout: {e}");
        return false;
    }
    match (args.format.output(), &args.out) {
        (Err(file_format), Some(path)) => {
            let written = output
                .record_batches()
                .map_err(|e| e.message)
                .and_then(|batches| {
                    horsec_runtime::data::write_batches(path, &batches, file_format)
                        .map_err(|e| e.message)
                });
            if let Err(e) = written {
                eprintln!("error: writing the result: {e}");
                return false;
            }
            true
        }
        (Ok(format), Some(path)) => {
            let mut text = Vec::new();
            let written = output
                .write_text(format, &mut text)
                .and_then(|_| std::fs::write(path, text));
            if let Err(e) = written {
                eprintln!("{}: error: writing the result: {e}", path.display());
                return false;
            }
            true
        }
        (Ok(format), None) => {
            match output
                .write_text(format, &mut out)
                .and_then(|_| out.flush())
            {
                Ok(()) => true,
                // The reader went away (`horsec run … | head`): what it wanted, it has.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => true,
                Err(e) => {
                    eprintln!("error: writing the result: {e}");
                    false
                }
            }
        }
        (Err(_), None) => false,
    }
}

/// The `--time` report: compile stages, loading, pipelines, execution, the profile, and
/// the bytes moved.
fn time_report(
    query: &Query,
    device: Option<&Device>,
    output: &Output,
    load_time: Duration,
    output_time: Duration,
) -> String {
    let mut report = String::from("time:\n");
    for (stage, t) in &query.compilation().stage_times {
        report += &format!("  compile/{stage:<10} {}\n", ms(*t));
    }
    report += &format!("  compile total      {}\n", ms(query.compile_time()));
    report += &format!("  load data          {}\n", ms(load_time));
    if let Some(device) = device {
        let (built, build_time) = device.pipelines_built();
        report += &format!("  pipelines cached   {:>10}\n", device.cached_pipelines());
        report += &format!(
            "  pipelines built    {} ({built} pipelines)\n",
            ms(build_time)
        );
        report += &format!("  pipeline cache     {}\n", device.pipeline_cache_status());
    }
    report += &format!("  execute            {}\n", ms(output.execute_time));
    report += &format!("  output             {}\n", ms(output_time));
    report += &match device {
        Some(device) => format!("  backend: GPU ({})\n", device.describe()),
        None => "  backend: CPU\n".to_string(),
    };
    report += &output.profile.report();
    // Every byte of the run either way (columns, kernels, library kernels, counts,
    // results), in a fixed form that scripts read.
    let traffic = device.map(|d| d.traffic()).unwrap_or_default();
    if let Some(peak) = device.and_then(|d| d.peak_memory()) {
        report += &format!("  peak device memory {peak} bytes (after each GPU step)\n");
    }
    if let Some(device) = device {
        // Counts, not times, are what a software driver says about a discrete GPU.
        let costs = device.host_costs();
        let pool = device.pool_counts();
        report += &format!(
            "  device operations: {} dispatches, {} submissions, {} host waits ({}), \
             {} buffers created, {} reused from the pool\n",
            costs.encodes.0,
            costs.submits.0,
            costs.waits.0,
            ms(costs.waits.1).trim(),
            pool.created,
            pool.reused
        );
    }
    report += &format!("bytes uploaded: {}\n", traffic.uploaded);
    report += &format!("bytes downloaded: {}\n", traffic.downloaded);
    report
}

/// The data of a HorseIR program: TPC-H (cached, generated or read from `--data DIR`) and
/// `--table` files. Only the tables and columns the program reads are loaded.
fn database(args: &RunArgs, query: &Query) -> Option<Database> {
    let progress = std::io::IsTerminal::is_terminal(&std::io::stderr());
    // `--table` files stand in for TPC-H tables of the same name.
    let wanted: Option<Vec<String>> = query.tables().map(|names| {
        names
            .into_iter()
            .filter(|name| !args.tables.iter().any(|(table, _)| table == name))
            .collect()
    });
    let used = query.columns();
    let columns: Option<Vec<String>> = used
        .as_ref()
        .map(|used| used.values().flatten().cloned().collect());
    let loaded = match (&args.data, args.tpch) {
        (Some(dir), _) => Database::from_dir(dir, progress, wanted.as_deref(), columns.as_deref()),
        // `--table` alone: the program's own tables instead of TPC-H.
        (None, None) if !args.tables.is_empty() => Ok(Database::new()),
        (None, None) => default_tpch(progress, wanted.as_deref(), columns.as_deref()),
        (None, Some(sf)) => Database::tpch_tables(sf, progress, wanted.as_deref()),
    };
    let mut db = match loaded {
        Ok(db) => db,
        Err(e) => {
            eprintln!("error: loading data: {e}");
            return None;
        }
    };
    for (name, path) in &args.tables {
        if let Err(e) = db.load_file(name, path) {
            eprintln!("error: loading table `{name}`: {e}");
            return None;
        }
        // A file without a column the program reads fails here, naming it, rather than at
        // the `@column_value` that would find it missing.
        let read = used.as_ref().and_then(|used| used.get(name));
        if let (Some(read), Ok(table)) = (read, db.table(name)) {
            if let Some(missing) = read
                .iter()
                .find(|column| !table.names.iter().any(|n| n.as_ref() == column.as_str()))
            {
                let has: Vec<&str> = table.names.iter().map(|n| n.as_ref()).collect();
                eprintln!(
                    "error: {}: table `{name}` has no column `{missing}`, which the program reads (its columns: {})",
                    path.display(),
                    has.join(", ")
                );
                return None;
            }
        }
    }
    Some(db)
}

/// The default data, TPC-H SF 0.01: read from the cache directory, generated into it the
/// first time (with a note), or generated in process when there is no cache directory.
fn default_tpch(
    progress: bool,
    tables: Option<&[String]>,
    columns: Option<&[String]>,
) -> horsec_runtime::error::Result<Database> {
    const SF: f64 = 0.01;
    if tables.is_some_and(|t| t.is_empty()) {
        return Ok(Database::new());
    }
    let Some(cache) = horsec_runtime::gpu::cache_dir() else {
        return Database::tpch_tables(SF, progress, tables);
    };
    let (db, notice) = Database::tpch_cached(SF, &cache, progress, tables, columns)?;
    if let Some(notice) = notice {
        eprintln!("note: {notice}");
    }
    Ok(db)
}

/// The `.input` relations of a Datalog program: `--table NAME=FILE.csv` (header naming the
/// columns), else `NAME.facts` (tab-separated) in `--data DIR`.
pub(crate) fn datalog_database(
    inputs: &[crate::datalog::InputRelation],
    tables: &[(String, PathBuf)],
    data: Option<&Path>,
) -> Option<Database> {
    use horsec_runtime::data::{FactFormat, FactType};
    for (name, _) in tables {
        if !inputs.iter().any(|r| &r.name == name) {
            let known: Vec<&str> = inputs.iter().map(|r| r.name.as_str()).collect();
            eprintln!(
                "error: --table {name}: the program has no `.input {name}` (its inputs: {})",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            );
            return None;
        }
    }
    let mut db = Database::new();
    for relation in inputs {
        let columns: Vec<(String, FactType)> = relation
            .attrs
            .iter()
            .map(|(name, ty)| {
                let ty = match ty {
                    crate::datalog::ast::AttrType::Number => FactType::Number,
                    crate::datalog::ast::AttrType::Symbol => FactType::Symbol,
                };
                (name.clone(), ty)
            })
            .collect();
        let table = tables.iter().rev().find(|(name, _)| *name == relation.name);
        let (path, format) = match (table, data) {
            (Some((_, path)), _) => (path.clone(), FactFormat::Csv),
            (None, Some(dir)) => (
                dir.join(format!("{}.facts", relation.name)),
                FactFormat::Facts,
            ),
            (None, None) => {
                eprintln!(
                    "error: `.input {0}` has no data: give --table {0}=FILE.csv or --data DIR holding {0}.facts",
                    relation.name
                );
                return None;
            }
        };
        if let Err(e) = db.load_relation(&relation.name, &path, &columns, format) {
            eprintln!("error: loading relation `{}`: {e}", relation.name);
            return None;
        }
    }
    Some(db)
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
            eprintln!("error: writing to stdout: {e}");
            false
        }
    }
}

fn ms(d: Duration) -> String {
    format!("{:>10.3} ms", d.as_secs_f64() * 1e3)
}
