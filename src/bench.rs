//! `horsec bench FILE...`: medians over repeated runs of each query program, on the GPU and
//! on the CPU in the same process, split as `--time` splits one run.
//!
//! Per query: compile (parse → plan, including WGSL generation), the first GPU run (cold:
//! pipelines are created and every column the query reads is uploaded), then `runs` timed
//! GPU runs on the same engine (warm: columns stay resident on the GPU, as in a database
//! whose tables live there; intermediate results still move), and `runs` CPU runs. A
//! benchmark, never a test: numbers depend on the machine and its load.

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use horsec_runtime::data::Database;
use horsec_runtime::engine::GpuEngine;
use horsec_runtime::gpu::Device;
use horsec_runtime::interp;
use horsec_runtime::profile::{Placement, Profile};

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

/// Benchmarks `files` on `db`: `runs` warm GPU runs and `cpu_runs` CPU runs per query (no CPU
/// column when 0); writes a table to `out` as each query finishes.
pub fn bench_queries(
    files: &[PathBuf],
    db: &Database,
    device: &Device,
    runs: usize,
    cpu_runs: usize,
    out: &mut dyn Write,
) -> Result<Vec<QueryBench>, String> {
    let runs = runs.max(1);
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
        let mut compile_times = Vec::with_capacity(runs);
        let mut gpu_plan = None;
        let mut cpu_plan = None;
        for _ in 0..runs {
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
        let mut run_gpu = || -> Result<(Duration, Profile), String> {
            let mut profile = Profile::new();
            let mut sink = std::io::sink();
            let start = Instant::now();
            interp::run_with(&gpu_plan, db, &mut sink, &mut engine, &mut profile)
                .map_err(|e| format!("{}:{e}", file.display()))?;
            device.wait_idle().map_err(|e| e.to_string())?;
            Ok((start.elapsed(), profile))
        };
        let (gpu_cold, _) = run_gpu()?;
        let (mut gpu, mut kernels, mut library, mut host) = (vec![], vec![], vec![], vec![]);
        let mut transfer = Vec::with_capacity(runs);
        let mut busy = Vec::with_capacity(runs);
        let mut fallbacks = Vec::new();
        for _ in 0..runs {
            let (t, profile) = run_gpu()?;
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
        let ms = |d: Duration| format!("{:.2}", d.as_secs_f64() * 1e3);
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
            ms(result.gpu_busy),
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
        results.push(result);
    }
    let _ = writeln!(
        out,
        "times in ms, medians of {runs} runs; busy: GPU timestamps of the generated kernels; gpu cold: the first run (pipelines created, \
         columns uploaded); gpu: later runs (columns resident); cpu/gpu > 1: the GPU is faster"
    );
    Ok(results)
}
