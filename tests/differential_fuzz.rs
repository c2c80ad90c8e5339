//! The differential fuzzer (design in `tests/fuzz/mod.rs`): random HorseIR programs over
//! TPC-H, each run on the CPU and the GPU backend, which must give the same answer or the
//! same error. Fails listing every disagreement, each shrunk to a `.hir` reproduction.
//!
//! Environment:
//! - `HORSEC_FUZZ_PROGRAMS` (default 300): programs to run; `HORSEC_FUZZ_SEED` (default
//!   2026): the run's seed;
//! - `HORSEC_FUZZ_SECONDS`: stop taking new programs after this many seconds (the programs
//!   under way finish) and print the summary of those run: a time-limited run always
//!   reports, whatever `HORSEC_FUZZ_PROGRAMS` says;
//! - `HORSEC_FUZZ_JOBS` (default: the cores, at most 4): threads running programs;
//!   `HORSEC_FUZZ_DEVICES` (default: one per job): devices they share (job `j` uses device
//!   `j % n`; a shared device compiles a kernel once for its jobs, but random programs
//!   rarely share kernels, and jobs on one device wait for each other: slower);
//! - `HORSEC_FUZZ_SF` (default 0.001): the TPC-H scale factor of the data;
//! - `HORSEC_FUZZ_STMTS` (default 12): most statements of `main`;
//! - `HORSEC_FUZZ_ERRORS` (default 0.03): probability of a deliberately wrong statement;
//! - `HORSEC_FUZZ_RECYCLE` (default 2000): programs per device before it is opened afresh
//!   (which drops its cached pipelines, which only grow);
//! - `HORSEC_FUZZ_SHRINK` (default 3): failures shrunk and printed per kind (the others are
//!   counted, with their seeds);
//! - `HORSEC_FUZZ_NONFINITE=lenient`: rows where the CPU computed NaN or an infinity match
//!   any GPU value (by default they are compared like any other: see "Non-finite floats" in
//!   `tests/fuzz/mod.rs`);
//! - `HORSEC_FUZZ_ONE=<program seed>`: run one program, print it and what both backends did
//!   (shrunk when they disagree);
//! - `HORSEC_FUZZ_FILE=<path.hir>`: run a saved reproduction on both backends;
//! - `HORSEC_FUZZ_WARM=1`: time a second GPU run of each program (pipelines cached);
//!   `HORSEC_FUZZ_SLOW=<ms>`: print programs slower than that;
//! - `HORSEC_FUZZ_SHOW_APART=<relative>`: print programs that answer the same on both
//!   backends with floats apart by at least that relative difference (the summary gives the
//!   largest, per tolerance).
//!
//! A million programs locally, e.g.:
//! `HORSEC_FUZZ_PROGRAMS=1000000 HORSEC_FUZZ_SHRINK=1 cargo test --release --test
//! differential_fuzz backends -- --nocapture`

mod common;
mod fuzz;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use horsec_runtime::data::Database;
use horsec_runtime::engine::GpuEngine;
use horsec_runtime::gpu::Device;

use fuzz::check::{
    check, compare, summation_bounds, Disagreement, Kind, Outcome, Timings, Verdict,
};
use fuzz::generate::{generate, Options, Schema, CONTINUOUS, FLOAT_FUNCTIONS};
use fuzz::program::{Program, CLOSE, OPEN};
use fuzz::rng::program_seed;
use fuzz::shrink::shrink;

fn env<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(text) => text
            .parse()
            .unwrap_or_else(|_| panic!("{name}={text:?} does not parse")),
        Err(_) => default,
    }
}

fn database(sf: f64) -> Arc<Database> {
    static DB: OnceLock<Arc<Database>> = OnceLock::new();
    DB.get_or_init(|| {
        Arc::new(Database::tpch(sf, false).unwrap_or_else(|e| panic!("TPC-H SF {sf}: {e}")))
    })
    .clone()
}

fn options() -> Options {
    Options {
        max_stmts: env("HORSEC_FUZZ_STMTS", Options::default().max_stmts),
        error_rate: env("HORSEC_FUZZ_ERRORS", Options::default().error_rate),
    }
}

/// What a run found.
#[derive(Default)]
struct Findings {
    answered: u64,
    refused: BTreeMap<String, u64>,
    /// Program seeds per kind of disagreement.
    failures: BTreeMap<Kind, Vec<u64>>,
    /// Disagreements by a short signature (kind and the refusing side's message), counted.
    signatures: BTreeMap<String, (u64, u64)>,
    /// Shrunk reproductions, one per distinct (kind, builtins used).
    reports: Vec<(Kind, BTreeSet<String>, String)>,
    timings: Timings,
    /// Devices opened, and the pipelines they compiled in all (with the time it took).
    devices_opened: u64,
    pipelines_built: u64,
    pipeline_build_time: Duration,
}

fn builtins_in(text: &str) -> BTreeSet<String> {
    text.split('@')
        .skip(1)
        .map(|s| {
            s.chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect::<String>()
        })
        // User functions are `f0`, `f1`, ...
        .filter(|s| {
            let user = s.starts_with('f') && s[1..].bytes().all(|b| b.is_ascii_digit());
            !s.is_empty() && !user
        })
        .collect()
}

/// A disagreement in a few words, numbers elided: what to count to see which defects are
/// common.
fn signature(d: &Disagreement) -> String {
    let first_line = |o: &Outcome| match o {
        Outcome::Values(_) => "values".to_string(),
        // An internal compiler error says what went wrong on its second line.
        Outcome::Refused(m) if m.starts_with("internal compiler error") => format!(
            "internal compiler error: {}",
            m.lines().nth(1).unwrap_or("")
        ),
        Outcome::Refused(m) => format!("refused: {}", m.lines().next().unwrap_or("")),
        Outcome::Panicked(m) => format!("panicked: {}", m.lines().next().unwrap_or("")),
    };
    let text = match d.kind {
        Kind::DifferentValues | Kind::DifferentTypes | Kind::NotStaticType => {
            d.detail.split(':').nth(1).unwrap_or("").to_string()
        }
        _ => format!("CPU {} / GPU {}", first_line(&d.cpu), first_line(&d.gpu)),
    };
    let mut elided = String::new();
    let mut after_letter = false;
    for c in text.chars() {
        // Numbers go; digits of names (`f64`, `main_k0`) stay.
        if c.is_ascii_digit() && !after_letter {
            if !elided.ends_with('N') {
                elided.push('N');
            }
        } else {
            after_letter = c.is_ascii_alphanumeric() || c == '_';
            elided.push(c);
        }
    }
    let short: String = elided.chars().take(160).collect();
    format!("{:?}: {short}", d.kind)
}

fn report(seed: u64, program: &Program, d: &Disagreement) -> String {
    format!(
        "--- program seed {seed}: {:?} {}\n{}    CPU {}\n    GPU {}\n",
        d.kind,
        d.detail,
        program.text(),
        d.cpu.describe(),
        d.gpu.describe()
    )
}

fn still_fails(program: &Program, kind: Kind, db: &Database, engine: &mut GpuEngine<'_>) -> bool {
    let mut t = Timings::default();
    match check(&program.text(), db, engine, &mut t) {
        Verdict::Disagree(d) => d.kind == kind,
        _ => false,
    }
}

/// A device shared by jobs, with the programs run on it so far.
type Leased = (Arc<Device>, u64);

/// The configuration of a run, from the environment, and what its jobs share.
struct Run<'a> {
    db: &'a Database,
    schema: Schema,
    options: Options,
    programs: u64,
    seed: u64,
    jobs: usize,
    shrink_per_kind: usize,
    recycle: u64,
    /// The devices the jobs share (`HORSEC_FUZZ_DEVICES`, job `j` uses device `j % n`), each
    /// with the programs run on it; reopened after `recycle` programs.
    devices: Vec<Mutex<Option<Leased>>>,
    /// Print programs whose compile and run took longer than this (`HORSEC_FUZZ_SLOW`, ms).
    slow_ms: Option<f64>,
    /// No new program starts after this (`HORSEC_FUZZ_SECONDS`).
    deadline: Option<Instant>,
    next: AtomicU64,
    /// Programs run to the end (below `programs` when the deadline stopped the run).
    done: AtomicU64,
    findings: Mutex<Findings>,
    start: Instant,
    last_progress: Mutex<Instant>,
}

impl<'a> Run<'a> {
    fn from_env(db: &'a Database) -> Run<'a> {
        // Jobs overlap one program's pipeline compiles with another's GPU waits: two jobs
        // run twice as many programs per second as one, even on two cores.
        let parallelism = std::thread::available_parallelism().map_or(1, |n| n.get());
        let start = Instant::now();
        let seconds: Option<f64> = std::env::var("HORSEC_FUZZ_SECONDS").ok().map(|text| {
            text.parse()
                .unwrap_or_else(|_| panic!("HORSEC_FUZZ_SECONDS={text:?} is not a number"))
        });
        let jobs = env("HORSEC_FUZZ_JOBS", parallelism.clamp(1, 4));
        let devices = env("HORSEC_FUZZ_DEVICES", jobs).clamp(1, jobs.max(1));
        Run {
            db,
            schema: Schema::of(db),
            options: options(),
            programs: env("HORSEC_FUZZ_PROGRAMS", 300),
            seed: env("HORSEC_FUZZ_SEED", 2026),
            jobs,
            shrink_per_kind: env("HORSEC_FUZZ_SHRINK", 3),
            recycle: env("HORSEC_FUZZ_RECYCLE", 2000),
            devices: (0..devices).map(|_| Mutex::new(None)).collect(),
            slow_ms: std::env::var("HORSEC_FUZZ_SLOW")
                .ok()
                .map(|ms| ms.parse().unwrap_or(100.0)),
            deadline: seconds.map(|s| start + Duration::from_secs_f64(s)),
            next: AtomicU64::new(0),
            done: AtomicU64::new(0),
            findings: Mutex::new(Findings::default()),
            start,
            last_progress: Mutex::new(Instant::now()),
        }
    }

    /// Runs every program on `jobs` threads.
    fn run(&self) {
        std::thread::scope(|scope| {
            for job in 0..self.jobs {
                scope.spawn(move || self.job(job));
            }
        });
        for slot in &self.devices {
            if let Some((device, _)) = slot.lock().unwrap().take() {
                self.retire(&device);
            }
        }
    }

    /// The next program's index, or None when the run is over (all taken, or the deadline
    /// of `HORSEC_FUZZ_SECONDS` passed).
    fn take_program(&self) -> Option<u64> {
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return None;
        }
        let index = self.next.fetch_add(1, Ordering::Relaxed);
        (index < self.programs).then_some(index)
    }

    /// The device job `job` runs its next program on, counted as used once more: the
    /// shared device of its slot, opened again once it ran `recycle` programs (a device
    /// caches a pipeline per distinct kernel, and random programs bring new kernels without
    /// end).
    fn lease(&self, job: usize) -> Arc<Device> {
        let mut slot = self.devices[job % self.devices.len()].lock().unwrap();
        if slot.as_ref().is_none_or(|(_, used)| *used >= self.recycle) {
            if let Some((old, _)) = slot.take() {
                self.retire(&old);
            }
            let device = Device::new().unwrap_or_else(|e| panic!("opening the GPU: {e}"));
            *slot = Some((Arc::new(device), 0));
        }
        let (device, used) = slot.as_mut().expect("opened above");
        *used += 1;
        device.clone()
    }

    /// Counts the pipelines a device compiled, and the time that took, when it is dropped
    /// from its slot (jobs still running a program on it finish with it).
    fn retire(&self, device: &Device) {
        let (built, time) = device.pipelines_built();
        let mut f = self.findings.lock().unwrap();
        f.devices_opened += 1;
        f.pipelines_built += u64::from(built);
        f.pipeline_build_time += time;
    }

    /// One job: programs until none are left. A job keeps one engine per device it leases,
    /// so the columns it uploaded stay on the device for the next program (each program
    /// would otherwise upload its tables again); a new device gets a new engine.
    fn job(&self, job: usize) {
        let Some(mut index) = self.take_program() else {
            return;
        };
        let mut device = self.lease(job);
        loop {
            let mut engine = GpuEngine::new(&device);
            let next_device = loop {
                self.program(index, &mut engine);
                index = match self.take_program() {
                    Some(index) => index,
                    None => return,
                };
                let next = self.lease(job);
                if !Arc::ptr_eq(&next, &device) {
                    break next;
                }
            };
            drop(engine);
            device = next_device;
        }
    }

    /// Generates, runs and compares program `index`; shrinks it when it is one of the first
    /// few failures of its kind.
    fn program(&self, index: u64, engine: &mut GpuEngine<'_>) {
        let seed = program_seed(self.seed, index);
        let mut t = Timings::default();
        let generated = Instant::now();
        let program = generate(seed, &self.schema, self.options);
        let text = program.text();
        t.generate += generated.elapsed();
        let verdict = check(&text, self.db, engine, &mut t);
        if let Some(limit) = self.slow_ms {
            let took = (t.run_cpu + t.run_gpu + t.compile_gpu).as_secs_f64() * 1e3;
            if took > limit {
                eprintln!("slow program {seed}: {took:.0} ms\n{text}");
            }
        }
        let reproduction = match &verdict {
            Verdict::Disagree(d) if self.first_of_kind(d.kind) => {
                let small = shrink(&program, 300, |p| still_fails(p, d.kind, self.db, engine));
                let mut t = Timings::default();
                Some(match check(&small.text(), self.db, engine, &mut t) {
                    Verdict::Disagree(d) => {
                        (d.kind, builtins_in(&small.text()), report(seed, &small, &d))
                    }
                    _ => (d.kind, builtins_in(&text), report(seed, &program, d)),
                })
            }
            _ => None,
        };
        let mut f = self.findings.lock().unwrap();
        f.timings.add(&t);
        match verdict {
            Verdict::Answered => f.answered += 1,
            Verdict::Refused(m) => *f.refused.entry(m).or_default() += 1,
            Verdict::Disagree(d) => {
                f.signatures.entry(signature(&d)).or_insert((0, seed)).0 += 1;
                f.failures.entry(d.kind).or_default().push(seed)
            }
        }
        if let Some((kind, builtins, text)) = reproduction {
            let seen = f
                .reports
                .iter()
                .any(|(k, b, _)| *k == kind && *b == builtins);
            if !seen {
                eprintln!("{text}");
                f.reports.push((kind, builtins, text));
            }
        }
        drop(f);
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        let mut last = self.last_progress.lock().unwrap();
        if last.elapsed() > Duration::from_secs(30) {
            *last = Instant::now();
            let rate = done as f64 / self.start.elapsed().as_secs_f64();
            eprintln!("... {done} programs, {rate:.1} programs/s");
        }
    }

    /// Whether a disagreement of `kind` is among the first `shrink_per_kind` of the run.
    fn first_of_kind(&self, kind: Kind) -> bool {
        let f = self.findings.lock().unwrap();
        f.failures.get(&kind).map_or(0, Vec::len) < self.shrink_per_kind
    }

    /// Prints the counts, the time per phase and the commonest refusals and disagreements;
    /// returns how many programs disagreed.
    fn summary(&self) -> usize {
        let elapsed = self.start.elapsed();
        let programs = self.done.load(Ordering::Relaxed);
        let f = self.findings.lock().unwrap();
        let t = &f.timings;
        let ms = |d: Duration| d.as_secs_f64() * 1e3 / programs.max(1) as f64;
        let refused: u64 = f.refused.values().sum();
        let failed: usize = f.failures.values().map(Vec::len).sum();
        eprintln!(
            "differential fuzz: {programs} programs{} in {:.1} s ({:.1} programs/s): {} same \
             answer, {refused} same error (both refused), {failed} disagreements",
            if programs < self.programs {
                " (stopped by HORSEC_FUZZ_SECONDS)"
            } else {
                ""
            },
            elapsed.as_secs_f64(),
            programs as f64 / elapsed.as_secs_f64(),
            f.answered,
        );
        eprintln!(
            "  per program (ms, summed over jobs): generate {:.2}, compile CPU {:.2}, compile \
             GPU {:.2}, run CPU {:.2}, run GPU {:.2} (of which compiling pipelines {:.2}; a \
             second, warm run {:.2}), compare {:.2}; {:.2} pipelines compiled",
            ms(t.generate),
            ms(t.compile_cpu),
            ms(t.compile_gpu),
            ms(t.run_cpu),
            ms(t.run_gpu),
            ms(t.compile_pipelines),
            ms(t.run_gpu_warm),
            ms(t.compare),
            t.pipelines_compiled as f64 / programs.max(1) as f64
        );
        eprintln!(
            "  {} jobs on {} shared devices, {} opened (one per {} programs): {} pipelines \
             compiled in {:.1} s",
            self.jobs,
            self.devices.len(),
            f.devices_opened,
            self.recycle,
            f.pipelines_built,
            f.pipeline_build_time.as_secs_f64()
        );
        eprintln!(
            "  {} programs with floats apart beyond the relative tolerance, {} of them within \
             the bound of their summation order (tests/fuzz/bound.rs)",
            t.beyond_tolerance, t.within_summation_bound
        );
        eprintln!(
            "  programs answering the same with floats apart: {} computing in f32 (largest \
             relative difference {:.3e}, {:.2} f32 ulp; tolerance {:.0} ulp), {} in f64 only \
             (largest {:.3e}; tolerance {:.0e}); HORSEC_FUZZ_SHOW_APART=<relative> prints them",
            t.f32_programs_apart,
            t.f32_largest_apart,
            t.f32_largest_apart * (1u64 << 23) as f64,
            fuzz::check::F32_TOLERANCE * (1u64 << 23) as f64,
            t.f64_programs_apart,
            t.f64_largest_apart,
            fuzz::check::F64_TOLERANCE
        );
        let mut common: Vec<(&String, &u64)> = f.refused.iter().collect();
        common.sort_by_key(|(_, n)| std::cmp::Reverse(**n));
        for (message, n) in common.iter().take(8) {
            eprintln!("  refused by both {n}x: {message}");
        }
        let mut signatures: Vec<(&String, &(u64, u64))> = f.signatures.iter().collect();
        signatures.sort_by_key(|(_, (n, _))| std::cmp::Reverse(*n));
        for (signature, (n, seed)) in signatures.iter().take(25) {
            eprintln!("  disagreement {n}x (first: seed {seed}): {signature}");
        }
        for (kind, seeds) in &f.failures {
            let shown: Vec<String> = seeds.iter().take(10).map(u64::to_string).collect();
            eprintln!(
                "  {kind:?}: {} programs, seeds {}",
                seeds.len(),
                shown.join(" ")
            );
        }
        failed
    }
}

/// `HORSEC_FUZZ_FILE`: one saved program on both backends.
fn check_file(path: &str, db: &Database, device: &Device) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut t = Timings::default();
    match check(&text, db, &mut GpuEngine::new(device), &mut t) {
        Verdict::Disagree(d) => panic!(
            "{path}: {:?} {}\n    CPU {}\n    GPU {}",
            d.kind,
            d.detail,
            d.cpu.describe(),
            d.gpu.describe()
        ),
        other => println!("{path}: agree: {other:?}"),
    }
}

/// `HORSEC_FUZZ_ONE`: the program of one seed, printed, run, and shrunk when it fails.
fn check_seed(seed: u64, db: &Database, device: &Device) {
    let program = generate(seed, &Schema::of(db), options());
    println!("{}", program.text());
    let mut t = Timings::default();
    let mut engine = GpuEngine::new(device);
    match check(&program.text(), db, &mut engine, &mut t) {
        Verdict::Disagree(d) => {
            let small = shrink(&program, 400, |p| still_fails(p, d.kind, db, &mut engine));
            let mut t = Timings::default();
            if let Verdict::Disagree(d) = check(&small.text(), db, &mut engine, &mut t) {
                panic!("disagreement, shrunk:\n{}", report(seed, &small, &d));
            }
            panic!("{}", report(seed, &program, &d));
        }
        other => println!("agree: {other:?}"),
    }
}

/// The fuzzer: every generated program gives the same answer, or the same error, on both
/// backends.
#[test]
fn backends_agree_on_random_programs() {
    let Some(device) = common::gpu() else {
        return;
    };
    let sf: f64 = env("HORSEC_FUZZ_SF", 0.001);
    let db = database(sf);
    if let Ok(path) = std::env::var("HORSEC_FUZZ_FILE") {
        return check_file(&path, &db, device);
    }
    if let Ok(seed) = std::env::var("HORSEC_FUZZ_ONE") {
        let seed = seed.parse().expect("HORSEC_FUZZ_ONE is a program seed");
        return check_seed(seed, &db, device);
    }
    let run = Run::from_env(&db);
    eprintln!(
        "differential fuzz: {} programs, seed {}, {} jobs, TPC-H SF {sf} (lineitem {} rows), {}",
        run.programs,
        run.seed,
        run.jobs,
        db.table("lineitem").map(|t| t.rows()).unwrap_or(0),
        device.describe()
    );
    run.run();
    let failed = run.summary();
    assert!(
        failed == 0,
        "the backends disagree on {failed} of {} programs; reproductions above \
         (HORSEC_FUZZ_ONE=<seed> reruns one)",
        run.done.load(Ordering::Relaxed)
    );
}

/// Runs every `.hir` file of `dir` on both backends; returns the files where they disagree,
/// with how.
fn disagreements_in(dir: &std::path::Path, db: &Database, device: &Device) -> Vec<String> {
    let mut found = Vec::new();
    for path in common::programs(dir) {
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut t = Timings::default();
        // A fresh engine per file: each reproduction runs as `horsec run` would.
        if let Verdict::Disagree(d) = check(&text, db, &mut GpuEngine::new(device), &mut t) {
            found.push(format!(
                "{}: {:?} {}\n    CPU {}\n    GPU {}",
                path.display(),
                d.kind,
                d.detail,
                d.cpu.describe(),
                d.gpu.describe()
            ));
        }
    }
    found
}

/// The fuzzer's findings, shrunk and saved (`tests/fuzz/corpus/`), as regression tests: on
/// each, both backends give the same answer or the same error. Findings whose fix has not
/// landed yet wait in `corpus/open/`: they run, and are listed, but do not fail the test; one
/// that agrees now is listed to be moved up.
#[test]
fn saved_reproductions_agree() {
    let Some(device) = common::gpu() else {
        return;
    };
    let db = database(env("HORSEC_FUZZ_SF", 0.001));
    let corpus = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz/corpus");
    let open = corpus.join("open");
    let still_open = disagreements_in(&open, &db, device);
    let open_count = common::programs(&open).len();
    eprintln!(
        "known open disagreements: {} of {open_count} in {} still disagree",
        still_open.len(),
        open.display()
    );
    for text in &still_open {
        eprintln!("  open: {text}");
    }
    let fixed: Vec<String> = common::programs(&open)
        .into_iter()
        .map(|p| p.display().to_string())
        .filter(|p| !still_open.iter().any(|s| s.starts_with(p.as_str())))
        .collect();
    for path in &fixed {
        eprintln!("  now agrees (move it to {}): {path}", corpus.display());
    }
    let failures = disagreements_in(&corpus, &db, device);
    assert!(
        failures.is_empty(),
        "saved reproductions disagree again:\n{}",
        failures.join("\n")
    );
}

/// An engine kept across programs, as the fuzzer's jobs (and an embedding application) keep
/// one, reports each run's own error: a kernel failure found only when a run ends (its
/// output was never read back) belongs to that run, not to the next run that fails.
#[test]
fn an_engine_kept_across_runs_reports_each_runs_own_error() {
    let Some(device) = common::gpu() else {
        return;
    };
    let db = database(0.001);
    // The minimum's kernel fails, and nothing reads its output back before the run ends.
    let unread_failure = "module m {
  import Builtin.*;
  def main() : i32 {
    t:table = @load_table(`nation:sym);
    k:i32 = check_cast(@column_value(t, `n_nationkey:sym), i32);
    none:bool = @lt(k, 0:i32);
    c:i32 = @compress(none, k);
    m:i32 = @min(c);
    return k;
  }
}";
    // Fails later in its source than the first program's failure did.
    let later_failure = "module m {
  import Builtin.*;
  def main() : i64 {
    t:table = @load_table(`nation:sym);
    k:i32 = check_cast(@column_value(t, `n_nationkey:sym), i32);
    a:i64 = @plus(k, 1:i64);
    b:i64 = @plus(a, 1:i64);
    c:i64 = @plus(b, 1:i64);
    z:i32 = @minus(k, k);
    d:i64 = @mod(c, z);
    return d;
  }
}";
    let mut engine = GpuEngine::new(device);
    for (text, error) in [
        (unread_failure, "@min: no minimum of no elements"),
        (later_failure, "@mod: integer modulo by zero"),
        (unread_failure, "@min: no minimum of no elements"),
    ] {
        let mut t = Timings::default();
        match check(text, &db, &mut engine, &mut t) {
            Verdict::Refused(message) => assert!(
                message.contains(error),
                "expected {error:?}, both backends said {message:?}"
            ),
            Verdict::Disagree(d) => panic!(
                "{:?} {}\n    CPU {}\n    GPU {}",
                d.kind,
                d.detail,
                d.cpu.describe(),
                d.gpu.describe()
            ),
            Verdict::Answered => panic!("expected {error:?}, both backends answered"),
        }
    }
}

/// The variables a generated line passes to each builtin it calls: `(builtin, variables)`
/// for every `@name(...)` of the line with its arguments' placeholders (a function literal
/// such as `@sum` in `@each(@sum, x)` is not a call: it has no parenthesis).
fn builtin_arguments(line: &str) -> Vec<(String, Vec<usize>)> {
    let mut calls = Vec::new();
    for (start, _) in line.match_indices('@') {
        let rest = &line[start + 1..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let Some(args) = rest[name.len()..].strip_prefix('(') else {
            continue;
        };
        // The arguments up to the matching parenthesis.
        let mut depth = 1;
        let end = args
            .char_indices()
            .find_map(|(i, c)| {
                match c {
                    '(' => depth += 1,
                    ')' => depth -= 1,
                    _ => {}
                }
                (depth == 0).then_some(i)
            })
            .unwrap_or(args.len());
        let vars = args[..end]
            .split(OPEN)
            .skip(1)
            .filter_map(|s| {
                // `x_i` and `g_k` are names made from a variable's (a loop's counter, a
                // group's keys), not the variable.
                let (number, after) = s.split_once(CLOSE)?;
                (!after.starts_with('_')).then(|| number.parse().ok())?
            })
            .collect();
        calls.push((name, vars));
    }
    calls
}

/// The summation-order limit of exact comparison ("Summation order" in `tests/fuzz/mod.rs`;
/// `corpus/limits/mod_of_a_quotient_near_an_integer.hir` is an example): a float whose last
/// bits depend on the order of a summation is passed only to builtins that move it
/// continuously (`generate::CONTINUOUS`), move it whole (gathers, compression, slices,
/// `@reverse`, lists, `@raze`), or reduce it, never to one that decides on it (a comparison, `@mod`, a
/// rounding, a division, a key of a relational builtin, a user function). Generation only:
/// no backend runs.
#[test]
fn generated_programs_decide_nothing_on_a_summation_order() {
    let db = database(0.001);
    let schema = Schema::of(&db);
    // `@append` moves both operands whole (the bound siblings move `W` with them too).
    let movers = [
        "index",
        // `@index_a(x, i, v)` moves `v`'s values into `x` at `i` (the last writer wins by
        // position, whatever the values).
        "index_a",
        "append",
        "compress",
        "take",
        "drop",
        "reverse",
        "raze",
        "list",
        "each_right",
        "each",
        "sum",
        "avg",
        "min",
        "max",
        "len",
        "count",
    ];
    let mut reordered_uses = 0;
    for seed in 0..4000 {
        let program = generate(seed, &schema, Options::default());
        let lines = program
            .stmts
            .iter()
            .chain(program.functions.iter().flat_map(|f| &f.body))
            .flat_map(|s| &s.lines);
        for line in lines {
            for (builtin, vars) in builtin_arguments(line) {
                if !vars.iter().any(|&v| program.vars[v].reordered) {
                    continue;
                }
                reordered_uses += 1;
                let continuous = CONTINUOUS.iter().any(|b| b.name() == builtin);
                assert!(
                    continuous || movers.contains(&builtin.as_str()),
                    "program seed {seed}: @{builtin} decides on a float summed in an order \
                     the backends choose differently:\n{}",
                    program.text()
                );
            }
        }
    }
    assert!(
        reordered_uses > 0,
        "no generated program passes a reordered float to a builtin: the check saw nothing"
    );
}

/// Generated programs call the logic builtins beside `@and`/`@or`, `@reverse`,
/// `@datetime_diff`, `@range` of a value's length (positions, also used as indexes),
/// `@take`/`@drop` (also of more elements than there are), and `@tolist`.
/// Generation only: no backend runs.
#[test]
fn generated_programs_call_the_less_common_builtins() {
    let db = database(0.001);
    let schema = Schema::of(&db);
    let seeds = 2000;
    let wanted = [
        "= @nand(",
        "= @nor(",
        "= @xor(",
        "= @reverse(",
        "= @datetime_diff(",
        "= @range(n",
        "= @take(",
        "= @drop(",
        "= @tolist(",
    ];
    // A count beyond the length, either way: each of the four is a few in a thousand
    // programs, too few to ask of each alone for a fixed set of seeds.
    let beyond = [
        "= @take(100000:i64",
        "= @take(-100000:i64",
        "= @drop(100000:i64",
        "= @drop(-100000:i64",
    ];
    let mut calls: BTreeMap<&str, usize> = BTreeMap::new();
    let mut beyond_calls = 0;
    for seed in 0..seeds {
        let text = generate(seed, &schema, Options::default()).text();
        for call in wanted {
            *calls.entry(call).or_default() += text.matches(call).count();
        }
        beyond_calls += beyond
            .iter()
            .map(|c| text.matches(c).count())
            .sum::<usize>();
    }
    eprintln!("calls in {seeds} generated programs: {calls:?}, {beyond_calls} beyond the length");
    for (call, n) in &calls {
        assert!(*n >= 5, "`{call}` in {n} of {seeds} generated programs");
    }
    assert!(
        beyond_calls >= 5,
        "@take or @drop beyond the length in {beyond_calls} of {seeds} generated programs"
    );
}

/// Generated programs call every floating function (`generate::FLOAT_FUNCTIONS`) with an f32
/// result (the GPU computes it in f64 in a kernel and rounds it) and with an f64 one (a step
/// the GPU runs on the CPU), and divide by zero before them (infinities and NaN for their
/// arguments). Generation only: no backend runs.
#[test]
fn generated_programs_call_every_floating_function() {
    let db = database(0.001);
    let schema = Schema::of(&db);
    let seeds = 4000;
    let (mut calling, mut by_zero) = (0, 0);
    let mut calls: BTreeMap<String, usize> = BTreeMap::new();
    for seed in 0..seeds {
        let text = generate(seed, &schema, Options::default()).text();
        let mut any = false;
        for (builtin, _) in FLOAT_FUNCTIONS {
            for ty in ["f32", "f64"] {
                // The declared type (a declaration of the other precision converts it).
                let n = text
                    .matches(&format!(":{ty} = @{}(", builtin.name()))
                    .count();
                *calls
                    .entry(format!("@{} {ty}", builtin.name()))
                    .or_default() += n;
                any |= n > 0;
            }
        }
        calling += usize::from(any);
        by_zero += usize::from(text.contains(", 0:i32);") || text.contains(", 0.0:f"));
    }
    eprintln!(
        "{calling} of {seeds} programs call a floating function, {by_zero} divide by a zero \
         literal; calls: {calls:?}"
    );
    for (call, n) in &calls {
        assert!(*n >= 5, "{call} in {n} of {seeds} generated programs");
    }
    assert!(calling >= seeds as usize / 10 && by_zero > 0);
}

/// One f64 value per row, as a backend returns it.
fn f64_values(rows: &[f64]) -> Outcome {
    Outcome::Values(vec![horsec_runtime::value::Value::Vector(
        horsec_runtime::value::Vector::F64(rows.to_vec().into()),
    )])
}

/// `@sum` of `terms` as the generator writes it, returned by `main`.
fn sum_of_literals(terms: &str) -> String {
    format!(
        "module fuzz {{
  import Builtin.*;

  def main() : f64 {{
    l0:f64 = ({terms}):f64;
    r1:f64 = @sum(l0);
    return r1;
  }}
}}"
    )
}

/// The comparator accepts two sums of terms that cancel when they are apart by less than the
/// summation-order bound of the terms (`tests/fuzz/bound.rs`), and rejects a wrong sum: a
/// term missing, or a difference the small terms cannot explain. The bounds come from the
/// bound-computing sibling run on the CPU, as in a fuzz run.
#[test]
fn the_comparator_bounds_sums_by_their_terms() {
    let db = database(0.001);
    let types = [horsec_runtime::types::Type::F64];
    let verdict = |terms: &str, cpu: f64, gpu: f64| {
        let text = sum_of_literals(terms);
        compare(
            f64_values(&[cpu]),
            f64_values(&[gpu]),
            &types,
            fuzz::check::F64_TOLERANCE,
            || summation_bounds(&text, &db),
        )
    };
    let cancelling = "1000000.0, -1000000.0, 1000000.0, -1000000.0";
    // The bound of these terms: 2 (c + 1) u · n Σ|x| = 4 · 2^-53 · 4 · 4e6, about 7.1e-9.
    let bounds = summation_bounds(&sum_of_literals(cancelling), &db);
    let allowed = bounds[0].as_ref().expect("a bound for a float sum")[0];
    assert!(
        (7.0e-9..7.2e-9).contains(&allowed),
        "bound {allowed} for {cancelling}"
    );
    // The H100's case: the exact sum is 0, each backend's rounding depends on its order.
    assert!(matches!(
        verdict(cancelling, 1.0e-10, 0.0),
        Verdict::Answered
    ));
    assert!(matches!(
        verdict(cancelling, 0.0, -2.0e-9),
        Verdict::Answered
    ));
    // A term missing (the GPU's 0 where 3 is right), beyond the bound.
    let with_three = "1000000.0, -1000000.0, 3.0, 1000000.0, -1000000.0";
    assert!(matches!(
        verdict(with_three, 3.0, 0.0),
        Verdict::Disagree(d) if d.kind == Kind::DifferentValues
            && d.detail.contains("beyond its summation bound")
    ));
    // Small terms: 1 against 0 is wrong, not rounding.
    assert!(matches!(
        verdict("0.5, 0.25, 0.25", 1.0, 0.0),
        Verdict::Disagree(d) if d.kind == Kind::DifferentValues
    ));
    // Values apart beyond the tolerance that depend on no summation order get no bound.
    let no_sum = "module fuzz {
  import Builtin.*;

  def main() : f64 {
    l0:f64 = (1.0, 2.0):f64;
    return l0;
  }
}";
    assert!(summation_bounds(no_sum, &db).iter().all(Option::is_none));
    assert!(matches!(
        compare(
            f64_values(&[1.0e-10, 2.0]),
            f64_values(&[0.0, 2.0]),
            &types,
            fuzz::check::F64_TOLERANCE,
            || summation_bounds(no_sum, &db),
        ),
        Verdict::Disagree(_)
    ));
    // Integers are equal or not: no relative tolerance.
    let i64_values = |x: i64| {
        Outcome::Values(vec![horsec_runtime::value::Value::Vector(
            horsec_runtime::value::Vector::I64(vec![x].into()),
        )])
    };
    assert!(matches!(
        compare(
            i64_values(1_000_000_000_000),
            i64_values(1_000_000_000_001),
            &[horsec_runtime::types::Type::I64],
            fuzz::check::F64_TOLERANCE,
            Vec::new,
        ),
        Verdict::Disagree(d) if d.kind == Kind::DifferentValues
    ));
}

/// An f64 that depends on no summation order must print the same on both backends, to the
/// last digit: each is the same correctly rounded operations. An ulp apart there is a defect
/// (a shader compiler regrouping `(x * 3.0) * 7.0`); a sum may be an ulp apart.
#[test]
fn an_f64_of_no_summation_is_compared_to_the_last_digit() {
    let product = "module fuzz {
  import Builtin.*;

  def main() : f64 {
    l0:f64 = (0.1, 0.7):f64;
    v1:f64 = @mul(l0, 3:i32);
    v2:f64 = @mul(v1, 7:i32);
    return v2;
  }
}";
    let (cpu, gpu) = (0.1 * 3.0 * 7.0, 0.1 * 21.0);
    assert_ne!(cpu, gpu, "an ulp apart");
    let detail = fuzz::check::rounded_apart(
        product,
        &f64_values(&[cpu, 14.7]),
        &f64_values(&[gpu, 14.7]),
    );
    assert!(
        detail.is_some_and(|d| d.contains("row 0 apart though it depends on no summation order")),
    );
    assert_eq!(
        fuzz::check::rounded_apart(product, &f64_values(&[cpu]), &f64_values(&[cpu])),
        None
    );
    let sum = sum_of_literals("0.1, 0.2, 0.3");
    assert_eq!(
        fuzz::check::rounded_apart(
            &sum,
            &f64_values(&[0.6000000000000001]),
            &f64_values(&[0.6])
        ),
        None
    );
}

/// The bound-computing sibling of the H100's program (seed 7920365047743087880): `@sum` of
/// balances minus the sorted balances becomes n · Σ|terms|, and the other statements stay.
#[test]
fn the_sibling_of_a_cancelling_sum_computes_its_terms_magnitude() {
    let db = database(0.001);
    let text = std::fs::read_to_string(
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fuzz/corpus/sum_of_balances_minus_sorted_balances.hir"),
    )
    .expect("the corpus file");
    let sibling = fuzz::bound::bound_program(&text).expect("a sibling");
    assert_eq!(sibling.returns, vec![Some(1)]);
    assert!(
        sibling.text.contains("o3:i64 = @order(ok2, (0, 0):bool);"),
        "{}",
        sibling.text
    );
    let bounds = summation_bounds(&text, &db);
    let allowed = bounds[0].as_ref().expect("a bound")[0];
    // Σ|c - sorted c| over the customers (about 5.5e5 at SF 0.001), times their number
    // (150), times 4 u: about 3.7e-8, above the CPU's 1.0e-10 against the GPU's 0.
    assert!(
        (1.0e-8..1.0e-7).contains(&allowed),
        "bound {allowed} of the balances"
    );
}

/// Programs whose summed floats reach a decision, or declare a name twice, get no sibling:
/// their values are compared within the relative tolerance alone.
#[test]
fn no_sibling_where_a_summed_float_decides() {
    let decides = "module fuzz {
  import Builtin.*;

  def main() : f64, bool {
    l0:f64 = (1.5, 2.5):f64;
    r1:f64 = @sum(l0);
    b2:bool = @lt(r1, 4.0:f64);
    return r1, b2;
  }
}";
    assert!(fuzz::bound::bound_program(decides).is_none());
    let unbounded = "module fuzz {
  import Builtin.*;

  def main() : f64, f64 {
    l0:f64 = (1.5, 2.5):f64;
    r1:f64 = @sum(l0);
    q2:f64 = @sqrt(r1);
    m3:f64 = @mul(r1, l0);
    return q2, m3;
  }
}";
    let sibling = fuzz::bound::bound_program(unbounded).expect("a sibling");
    // sqrt has no rule; r1 · l0 is of order 1 + 0 + 1.
    assert_eq!(sibling.returns, vec![None, Some(2)]);
}

/// The bound-computing siblings of generated programs (`tests/fuzz/bound.rs`) run on the CPU
/// wherever their programs do, return every value that depends on no summation order
/// unchanged (the sibling changes only values the generator keeps from decisions), and
/// bound each value that does by at least its magnitude (`W(v) >= |v|`). CPU only.
#[test]
fn bound_siblings_of_generated_programs_run_beside_them() {
    let db = database(0.001);
    let schema = Schema::of(&db);
    let (mut siblings, mut bounded, mut unbounded) = (0, 0, 0);
    for seed in 0..20000 {
        let program = generate(seed, &schema, Options::default());
        let text = program.text();
        // The sibling's analysis finds values depending on a summation order among those the
        // generator marks `reordered` (which also marks the other floats of a statement, a
        // group's keys beside its sums).
        let reordered: Vec<bool> = program
            .returns
            .iter()
            .map(|&v| program.vars[v].reordered)
            .collect();
        let Some(sibling) = fuzz::bound::bound_program(&text) else {
            assert!(
                !reordered.contains(&true),
                "program seed {seed}: no sibling, returns reordered {reordered:?}:\n{text}"
            );
            continue;
        };
        for (found, marked) in sibling.reordered.iter().zip(&reordered) {
            assert!(!found || *marked, "program seed {seed}:\n{text}");
        }
        let Outcome::Values(values) = fuzz::check::run_on_cpu(&text, &db) else {
            continue;
        };
        siblings += 1;
        let Outcome::Values(bounds) = fuzz::check::run_on_cpu(&sibling.text, &db) else {
            panic!(
                "program seed {seed}: the program runs, its sibling does not:\n{}\n{:?}",
                sibling.text,
                fuzz::check::run_on_cpu(&sibling.text, &db).describe()
            );
        };
        let returns = sibling.returns.iter().zip(&sibling.reordered);
        for ((value, w), (order, reordered)) in values.iter().zip(&bounds).zip(returns) {
            let (value, w) = (fuzz::check::tsv(value), fuzz::check::tsv(w));
            if !reordered {
                assert_eq!(value, w, "program seed {seed}:\n{}", sibling.text);
                continue;
            }
            if order.is_none() {
                // Computed through a builtin without a rule: compared as before.
                unbounded += 1;
                continue;
            }
            bounded += 1;
            let (value, w) = (value.expect("printable"), w.expect("printable"));
            assert_eq!(value.lines().count(), w.lines().count(), "seed {seed}");
            for (v, w) in value.lines().zip(w.lines()) {
                let (v, w): (f64, f64) = (v.parse().expect("a float"), w.parse().expect("W"));
                assert!(
                    !v.is_finite() || !w.is_finite() || w >= v.abs() * (1.0 - 1e-12),
                    "program seed {seed}: W = {w} below |{v}|:\n{}",
                    sibling.text
                );
            }
        }
    }
    eprintln!("{siblings} siblings run, {bounded} values bounded, {unbounded} without a bound");
    assert!(bounded > 0, "no generated program returned a bounded value");
}

/// A group's sums and means get a bound per group: its size times the sum of its terms'
/// magnitudes (its size plus one times their mean, for a mean), of order 1.
#[test]
fn group_sums_are_bounded_per_group() {
    let db = database(0.001);
    let group = |reducer: &str| {
        format!(
            "module fuzz {{
  import Builtin.*;

  def main() : f64 {{
    k0:i64 = (1, 1, 2):i64;
    x1:f64 = (1000000.0, -1000000.0, 3.0):f64;
    g2:? = @group(k0);
    g2_rows:? = @values(g2);
    g2_cells:? = @each_right(@index, x1, g2_rows);
    g2_aggs:? = @each(@{reducer}, g2_cells);
    ga3:f64 = @raze(g2_aggs);
    return ga3;
  }}
}}"
        )
    };
    let u = fuzz::bound::UNIT_ROUNDOFF;
    for (reducer, w) in [("sum", [4.0e6, 3.0]), ("avg", [3.0e6, 6.0])] {
        let bounds = summation_bounds(&group(reducer), &db);
        let allowed = bounds[0].as_ref().expect("a bound per group");
        let expected: Vec<f64> = w.iter().map(|w| 4.0 * u * w).collect();
        assert_eq!(allowed, &expected, "@{reducer}");
    }
}
