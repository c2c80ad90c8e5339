//! The `horsec` command line: `check`, `compile --emit …`, `run`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand, ValueEnum};
use horsec_runtime::data::Database;
use horsec_runtime::format::{write_value, OutputFormat};
use horsec_runtime::interp;

use crate::driver::{compile, Compilation, Stage};

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
    },
    /// Run a program and print the table it returns.
    Run(RunArgs),
    /// Write TPC-H at a scale factor as dbgen `.tbl` files (the data `run --data DIR` reads).
    GenTpch {
        /// Scale factor (1 = 6 million lineitems).
        #[arg(long, value_name = "SF")]
        sf: f64,
        /// Directory to write `<table>.tbl` into (created when missing).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
}

#[derive(clap::Args, Debug)]
struct RunArgs {
    file: PathBuf,
    /// Where builtins execute.
    #[arg(long, value_enum, default_value_t = Backend::Cpu)]
    backend: Backend,
    /// Generate TPC-H data in process at this scale factor (the default data: SF 0.01).
    #[arg(long, value_name = "SF", conflicts_with = "data")]
    tpch: Option<f64>,
    /// Load TPC-H from a directory of dbgen `.tbl` files.
    #[arg(long, value_name = "DIR")]
    data: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Print where the time went (to stderr).
    #[arg(long)]
    time: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Emit {
    /// The parsed program printed back as HorseIR.
    Ast,
    /// The typed program, every type explicit.
    Typed,
    /// The runtime plan.
    Plan,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Backend {
    /// Every builtin on the CPU (the reference implementation).
    Cpu,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Format {
    Table,
    Tsv,
    Csv,
    Json,
}

impl From<Format> for OutputFormat {
    fn from(f: Format) -> OutputFormat {
        match f {
            Format::Table => OutputFormat::Table,
            Format::Tsv => OutputFormat::Tsv,
            Format::Csv => OutputFormat::Csv,
            Format::Json => OutputFormat::Json,
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
            Command::Compile { file, emit, out } => compile_command(&file, emit, out.as_deref()),
            Command::Run(args) => run(&args),
            Command::GenTpch { sf, out } => gen_tpch(sf, &out),
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

fn gen_tpch(sf: f64, out: &Path) -> bool {
    let start = std::time::Instant::now();
    match horsec_runtime::data::write_tpch_tbl(sf, out, true) {
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
fn compile_file(path: &Path, until: Stage) -> Option<Compilation> {
    let text = read_source(path)?;
    let compilation = compile(&path.display().to_string(), &text, until);
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
        all_ok &= compile_file(file, Stage::Analyze).is_some();
    }
    all_ok
}

fn compile_command(file: &Path, emit: Emit, out: Option<&Path>) -> bool {
    let until = match emit {
        Emit::Ast => Stage::Parse,
        Emit::Typed => Stage::Analyze,
        Emit::Plan => Stage::Plan,
    };
    let Some(c) = compile_file(file, until) else {
        return false;
    };
    let (text, ext) = match emit {
        Emit::Ast => (
            c.ast.as_ref().map(crate::syntax::printer::print_program),
            "hir",
        ),
        Emit::Typed => (
            c.typed.as_ref().map(crate::sema::printer::print_typed),
            "typed.hir",
        ),
        Emit::Plan => (c.plan.as_ref().map(|p| p.to_string()), "plan"),
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

fn write_output(file: &Path, out: Option<&Path>, ext: &str, text: &str) -> bool {
    let Some(dir) = out else {
        print!("{text}");
        return true;
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
    let start = Instant::now();
    let Some(c) = compile_file(&args.file, Stage::Plan) else {
        return false;
    };
    let compile_time = start.elapsed();
    let Some(plan) = c.plan.as_ref() else {
        return false;
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
    let load_time = start.elapsed();

    let start = Instant::now();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let result = interp::run(plan, &db, &mut out);
    let exec_time = start.elapsed();
    let values = match result {
        Ok(values) => values,
        Err(e) => {
            eprintln!("{}:{e}", args.file.display());
            return false;
        }
    };
    let start = Instant::now();
    for value in &values {
        if let Err(e) = write_value(value, args.format.into(), &mut out) {
            eprintln!("error: writing the result: {e}");
            return false;
        }
    }
    let _ = out.flush();
    let output_time = start.elapsed();

    if args.time {
        let mut report = String::from("time:\n");
        for (stage, t) in &c.stage_times {
            report += &format!("  compile/{stage:<10} {}\n", ms(*t));
        }
        report += &format!("  compile total      {}\n", ms(compile_time));
        report += &format!("  load data          {}\n", ms(load_time));
        report += &format!("  execute (cpu)      {}\n", ms(exec_time));
        report += &format!("  output             {}\n", ms(output_time));
        report += &format!("  backend: {:?}; every step ran on the CPU\n", args.backend);
        eprint!("{report}");
    }
    true
}

fn ms(d: Duration) -> String {
    format!("{:>10.3} ms", d.as_secs_f64() * 1e3)
}
