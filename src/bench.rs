//! `horsec bench FILE...`: medians over repeated runs of each query program, on the GPU and
//! on the CPU in the same process, split as `--time` splits one run.
//!
//! Per query: compile (parse → plan, including WGSL generation), the first GPU run (cold:
//! pipelines are created and every column the query reads is uploaded), untimed warm runs
//! for the warm-up time (a GPU idle before the query runs at low clocks, and a few short runs
//! do not raise them; the first runs over freshly uploaded columns can be slower, see
//! `--warm-up`), then `runs` timed GPU runs on the same engine (warm: columns stay
//! resident on the GPU, as in a database whose tables live there; intermediate results
//! still move), and `runs` CPU runs. A benchmark, never a test: numbers depend on the
//! machine and its load.

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use horsec_runtime::data::Database;
use horsec_runtime::engine::GpuEngine;
use horsec_runtime::gpu::{Device, HostCosts};
use horsec_runtime::interp;
use horsec_runtime::profile::{
    Placement, Profile, DISPATCHES, HOST_WAITS, PIPELINE_LOOKUPS, SUBMISSIONS,
};

use crate::driver::{compile_for, Stage, Target};

/// One query's medians.
#[derive(Clone, Debug)]
pub struct QueryBench {
    pub name: String,
    pub compile: Duration,
    pub gpu_cold: Duration,
    pub gpu: Duration,
    pub gpu_kernels: Duration,
    /// Uploads and downloads of kernel inputs and outputs (library kernels move their own).
    pub transfer: Duration,
    /// GPU time of the generated kernels by timestamp queries (zero without the feature).
    pub gpu_busy: Duration,
    pub gpu_library: Duration,
    pub cpu_steps: Duration,
    pub cpu: Duration,
    /// Compute steps that ran on the CPU under the GPU backend.
    pub cpu_fallbacks: Vec<String>,
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples.get(samples.len() / 2).copied().unwrap_or_default()
}

/// One warm GPU run: its wall time, profile, and the device's host costs during it.
struct WarmRun {
    time: Duration,
    profile: Profile,
    costs: HostCosts,
    downloaded: u64,
    uploaded: u64,
}

/// How [`bench_queries`] times each query.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// Timed warm GPU runs (at least one).
    pub runs: usize,
    /// CPU runs (no CPU column when 0).
    pub cpu_runs: usize,
    /// Untimed warm GPU runs until this much time has passed (at least one run when not
    /// zero), after the cold run and before the timed ones.
    pub warm_up: Duration,
    /// Split each query's median warm run by kind of work (see `breakdown_lines`); library
    /// kernels then get GPU timestamps too.
    pub breakdown: bool,
}

/// Most untimed warm-up runs of one query, however short its runs.
const MAX_WARM_UP_RUNS: usize = 100_000;
/// Most compiles a query's compile time is the median of.
const MAX_COMPILE_RUNS: usize = 101;

/// Benchmarks `files` on `db` as `options` say; writes a table to `out` as each query
/// finishes, each query's row followed by its breakdown lines with `options.breakdown`.
pub fn bench_queries(
    files: &[PathBuf],
    db: &Database,
    device: &Device,
    options: &BenchOptions,
    out: &mut dyn Write,
) -> Result<Vec<QueryBench>, String> {
    let (runs, cpu_runs, breakdown) = (options.runs.max(1), options.cpu_runs, options.breakdown);
    device.set_profiling(breakdown);
    let _ = writeln!(out, "device: {}", device.describe());
    let _ = writeln!(
        out,
        "{:<10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8}  cpu steps",
        "query",
        "compile",
        "gpu cold",
        "gpu",
        "kernels",
        "busy",
        "transfer",
        "library",
        "host+cpu",
        "cpu",
        "cpu/gpu"
    );
    let mut results = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file)
            .map_err(|e| format!("{}: cannot read: {e}", file.display()))?;
        let name = file.file_stem().map_or_else(
            || file.display().to_string(),
            |s| s.to_string_lossy().into_owned(),
        );
        // Compile time is a median too, of at most MAX_COMPILE_RUNS compiles: with many
        // runs (a profile of warm runs wants tens of thousands) the compiles would
        // otherwise take longer than the runs.
        let compiles = runs.clamp(1, MAX_COMPILE_RUNS);
        let mut compile_times = Vec::with_capacity(compiles);
        let mut gpu_plan = None;
        let mut cpu_plan = None;
        for _ in 0..compiles {
            let start = Instant::now();
            let c = compile_for(&file.display().to_string(), &text, Stage::Plan, Target::Gpu);
            compile_times.push(start.elapsed());
            if c.failed() {
                return Err(c.render_diagnostics());
            }
            gpu_plan = c.plan;
        }
        let c = compile_for(&file.display().to_string(), &text, Stage::Plan, Target::Cpu);
        if c.failed() {
            return Err(c.render_diagnostics());
        }
        cpu_plan = cpu_plan.or(c.plan);
        let (Some(gpu_plan), Some(cpu_plan)) = (gpu_plan, cpu_plan) else {
            return Err(format!("{}: no plan", file.display()));
        };

        let mut engine = GpuEngine::new(device);
        let mut run_gpu = || -> Result<WarmRun, String> {
            let mut profile = Profile::new();
            let mut sink = std::io::sink();
            let (costs, traffic) = (device.host_costs(), device.traffic());
            let start = Instant::now();
            // The run returns once the device has done its work (the engine waits), so the
            // time covers the GPU's part.
            interp::run_with(&gpu_plan, db, &mut sink, &mut engine, &mut profile)
                .map_err(|e| format!("{}:{e}", file.display()))?;
            Ok(WarmRun {
                time: start.elapsed(),
                profile,
                costs: device.host_costs() - costs,
                downloaded: (device.traffic() - traffic).downloaded,
                uploaded: (device.traffic() - traffic).uploaded,
            })
        };
        let gpu_cold = run_gpu()?.time;
        let warm_up = Instant::now();
        for _ in 0..MAX_WARM_UP_RUNS {
            if warm_up.elapsed() >= options.warm_up {
                break;
            }
            run_gpu()?;
        }
        let mut warm_runs = Vec::with_capacity(runs);
        let (mut gpu, mut kernels, mut library, mut host) = (vec![], vec![], vec![], vec![]);
        let mut transfer = Vec::with_capacity(runs);
        let mut busy = Vec::with_capacity(runs);
        let mut fallbacks = Vec::new();
        for _ in 0..runs {
            let run = run_gpu()?;
            let (t, profile) = (run.time, &run.profile);
            gpu.push(t);
            kernels.push(profile.total(Placement::GpuKernel));
            transfer.push(profile.total(Placement::Transfer));
            busy.push(profile.gpu_busy);
            library.push(profile.total(Placement::GpuLibrary));
            host.push(profile.total(Placement::Cpu) + profile.total(Placement::Host));
            fallbacks = profile
                .cpu_compute_steps()
                .into_iter()
                .map(|(n, _)| n.to_string())
                .collect();
            warm_runs.push(run);
        }
        let mut cpu = Vec::with_capacity(cpu_runs);
        for _ in 0..cpu_runs {
            let mut sink = std::io::sink();
            let start = Instant::now();
            interp::run(&cpu_plan, db, &mut sink).map_err(|e| format!("{}:{e}", file.display()))?;
            cpu.push(start.elapsed());
        }
        let result = QueryBench {
            name,
            compile: median(compile_times),
            gpu_cold,
            gpu: median(gpu),
            gpu_kernels: median(kernels),
            transfer: median(transfer),
            gpu_busy: median(busy),
            gpu_library: median(library),
            cpu_steps: median(host),
            cpu: median(cpu),
            cpu_fallbacks: fallbacks,
        };
        // Under a millisecond to the microsecond: two decimals would round q6's 0.094 ms on
        // an H200 to 0.09, a tenth of its time.
        let ms = |d: Duration| {
            let ms = d.as_secs_f64() * 1e3;
            if ms < 1.0 {
                format!("{ms:.3}")
            } else {
                format!("{ms:.2}")
            }
        };
        // Without CPU runs the CPU columns say `-`.
        let (cpu_ms, ratio) = if cpu_runs == 0 {
            ("-".to_string(), "-".to_string())
        } else {
            (
                ms(result.cpu),
                format!(
                    "{:.2}",
                    result.cpu.as_secs_f64() / result.gpu.as_secs_f64().max(1e-9)
                ),
            )
        };
        let _ = writeln!(
            out,
            "{:<10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8}  {}",
            result.name,
            ms(result.compile),
            ms(result.gpu_cold),
            ms(result.gpu),
            ms(result.gpu_kernels),
            // Timestamps are written only under `--time` (their read-back costs a wait).
            if breakdown {
                ms(result.gpu_busy)
            } else {
                "-".to_string()
            },
            ms(result.transfer),
            ms(result.gpu_library),
            ms(result.cpu_steps),
            cpu_ms,
            ratio,
            if result.cpu_fallbacks.is_empty() {
                "none".to_string()
            } else {
                result.cpu_fallbacks.join(",")
            }
        );
        if breakdown {
            warm_runs.sort_by_key(|r| r.time);
            if let Some(run) = warm_runs.get(warm_runs.len() / 2) {
                for line in breakdown_lines(run) {
                    let _ = writeln!(out, "  {line}");
                }
            }
        }
        results.push(result);
    }
    let _ = writeln!(
        out,
        "times in ms, medians of {runs} runs (compile: of at most {MAX_COMPILE_RUNS}); busy: GPU timestamps of the generated kernels (with --time); gpu cold: the first run (pipelines created, \
         columns uploaded); gpu: later runs (columns resident), after {:.2} s of untimed warm runs; cpu/gpu > 1: the GPU is faster",
        options.warm_up.as_secs_f64()
    );
    Ok(results)
}

/// The median warm run split by kind of work, as lines for `bench --time`: the generated
/// kernels' and library kernels' step time and GPU time (timestamps), and the host's costs
/// of driving the device (waits for it, read-backs, buffers created, dispatches encoded,
/// submissions, pipeline look-ups). Host costs overlap the steps they happen in: they say
/// what the steps' time is made of.
fn breakdown_lines(run: &WarmRun) -> Vec<String> {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let p = &run.profile;
    let kernels = p.total(Placement::GpuKernel);
    let library = p.total(Placement::GpuLibrary);
    let transfer = p.total(Placement::Transfer);
    let host = p.total(Placement::Cpu) + p.total(Placement::Host);
    let steps = kernels + library + transfer + host;
    let c = &run.costs;
    let kind = |what: &str, (n, t): (u32, Duration)| format!("{what} {n} × {:.3} ms", ms(t));
    let mut library_steps: Vec<(String, Duration, u32)> = p
        .steps()
        .filter(|(placement, _, _)| *placement == Placement::GpuLibrary)
        .map(|(_, name, t)| (name.to_string(), t.time, t.count))
        .collect();
    library_steps.sort_by_key(|s| std::cmp::Reverse(s.1));
    let library_list: Vec<String> = library_steps
        .iter()
        .map(|(name, t, n)| {
            let tally = |what| p.tallied(name, what);
            format!(
                "{name} ×{n} {:.3} ms ({} waits, {} dispatches, {} submissions, {} look-ups)",
                ms(*t),
                tally(HOST_WAITS),
                tally(DISPATCHES),
                tally(SUBMISSIONS),
                tally(PIPELINE_LOOKUPS),
            )
        })
        .collect();
    let transfers: Vec<String> = p
        .steps()
        .filter(|(placement, _, t)| *placement == Placement::Transfer && t.count > 0)
        .map(|(_, name, t)| format!("{name} ×{} {:.3} ms", t.count, ms(t.time)))
        .collect();
    let reads: u32 = p.read_backs().map(|(_, n, _)| n).sum::<u32>()
        + p.step_reads().map(|(_, n, _)| n).sum::<u32>();
    vec![
        format!(
            "breakdown (median warm run, {:.3} ms): kernel steps {:.3} ms (GPU busy {:.3} ms), \
             library steps {:.3} ms (GPU busy {:.3} ms), transfer {:.3} ms, host+cpu {:.3} ms, \
             outside steps {:.3} ms",
            ms(run.time),
            ms(kernels),
            ms(p.gpu_busy),
            ms(library),
            ms(p.gpu_busy_library),
            ms(transfer),
            ms(host),
            ms(run.time.saturating_sub(steps)),
        ),
        format!(
            "host costs: {}, {}, {}, {} ({} command buffers), {}; read-backs in {reads} steps, \
             {} B; uploaded {} B",
            kind("waits", c.waits),
            kind("buffers created", c.buffers),
            kind("dispatches encoded", c.encodes),
            kind("submissions", c.submits),
            c.command_buffers,
            kind("pipeline look-ups", c.pipelines),
            run.downloaded,
            run.uploaded,
        ),
        format!(
            "library: {}",
            if library_list.is_empty() {
                "none".to_string()
            } else {
                library_list.join(", ")
            }
        ),
        format!(
            "transfer: {}",
            if transfers.is_empty() {
                "none".to_string()
            } else {
                transfers.join(", ")
            }
        ),
    ]
}
