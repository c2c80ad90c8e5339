//! Host time of warm GPU runs: a query compiled once and run many times on one engine, as
//! `horsec bench --gpu-only` runs it, each run timed by the running thread's CPU time (what the host
//! spends per run: the interpreter, encoding, submissions, polls and the driver's calls on
//! this thread; not the time it sleeps waiting for the device) beside wall time, with the
//! device operations per run.
//!
//!     cargo run --release --example host_time -- SF RUNS QUERY.hir...
//!
//! On lavapipe the driver's own work runs on its threads (not counted) and in its entry
//! points on this thread (counted: `perf` splits it off by library).

use std::time::{Duration, Instant};

use horsec::driver::{compile_for, Stage, Target};
use horsec::horsec_runtime::data::Database;
use horsec::horsec_runtime::engine::GpuEngine;
use horsec::horsec_runtime::gpu::Device;
use horsec::horsec_runtime::interp;
use horsec::horsec_runtime::profile::Profile;

/// CPU time of the calling thread so far (`clock_gettime(CLOCK_THREAD_CPUTIME_ID)`).
fn thread_cpu() -> Duration {
    #[repr(C)]
    struct Timespec {
        seconds: i64,
        nanos: i64,
    }
    extern "C" {
        fn clock_gettime(clock: i32, time: *mut Timespec) -> i32;
    }
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    let mut time = Timespec {
        seconds: 0,
        nanos: 0,
    };
    // SAFETY: `time` is a valid timespec for the call to fill.
    if unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut time) } != 0 {
        return Duration::ZERO;
    }
    Duration::new(time.seconds as u64, time.nanos as u32)
}

/// The `q`-quantile of `samples` (sorted here).
fn quantile(samples: &mut [Duration], q: f64) -> f64 {
    samples.sort();
    let at = ((samples.len() as f64 - 1.0) * q).round() as usize;
    samples.get(at).map_or(0.0, |d| d.as_secs_f64() * 1e6)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [sf, runs, files @ ..] = args.as_slice() else {
        return Err("usage: host_time SF RUNS QUERY.hir...".into());
    };
    let sf: f64 = sf.parse()?;
    let runs: u32 = runs.parse()?;
    let device = Device::new()?;
    let db = Database::tpch(sf, false)?;
    println!("device: {}", device.describe());
    println!(
        "{:<8} {:>10} {:>10} {:>10} {:>12} {:>8} {:>8} {:>8} {:>10} {:>8}",
        "query",
        "host p10",
        "host p50",
        "host mean",
        "wall us/run",
        "waits",
        "submits",
        "cmdbufs",
        "dispatches",
        "buffers"
    );
    for file in files {
        let text = std::fs::read_to_string(file)?;
        let compiled = compile_for(file, &text, Stage::Plan, Target::Gpu);
        if compiled.failed() {
            return Err(compiled.render_diagnostics().into());
        }
        let plan = compiled.plan.ok_or("no plan")?;
        let mut engine = GpuEngine::new(&device);
        let mut run = || -> Result<(), Box<dyn std::error::Error>> {
            let mut profile = Profile::new();
            interp::run_with(&plan, &db, &mut std::io::sink(), &mut engine, &mut profile)?;
            Ok(())
        };
        // Cold run and a few warm ones (pipelines, resident columns, pool, caches).
        for _ in 0..20 {
            run()?;
        }
        // A pause `perf` output shows as a gap: samples after it are the timed runs'.
        std::thread::sleep(Duration::from_millis(500));
        let costs = device.host_costs();
        let mut host = Vec::with_capacity(runs as usize);
        let wall = Instant::now();
        for _ in 0..runs {
            let cpu = thread_cpu();
            run()?;
            host.push(thread_cpu() - cpu);
        }
        let wall = wall.elapsed();
        let mean = host.iter().sum::<Duration>().as_secs_f64() * 1e6 / f64::from(runs);
        let costs = device.host_costs() - costs;
        let per = |n: u32| f64::from(n) / f64::from(runs);
        let name = std::path::Path::new(file)
            .file_stem()
            .map_or(file.clone(), |s| s.to_string_lossy().into_owned());
        println!(
            "{:<8} {:>10.1} {:>10.1} {:>10.1} {:>12.1} {:>8.2} {:>8.2} {:>8.2} {:>10.2} {:>8.2}",
            name,
            quantile(&mut host, 0.1),
            quantile(&mut host, 0.5),
            mean,
            wall.as_secs_f64() * 1e6 / f64::from(runs),
            per(costs.waits.0),
            per(costs.submits.0),
            per(costs.command_buffers),
            per(costs.encodes.0),
            per(costs.buffers.0),
        );
    }
    Ok(())
}
