//! Compile time per stage, for the compile-time goal of issue 11 (parse → WGSL in at most
//! 1 ms per TPC-H query): compiles each given `.hir` file for the GPU `RUNS` times (default
//! 21, the files taken in turn) in one process and prints the median of each stage, of their
//! sum (`total`) and of the whole call with the compilation dropped (`wall`).
//!
//! `cargo run --release --example compile_stages -- ../shared/conformance/tpch/queries/*.hir`

use std::time::Duration;

use horsec::driver::{compile_for, Stage, Target};

// The allocator the `horsec` binary uses (see src/main.rs), so that the figures are the CLI's.
#[global_allocator]
static ALLOCATOR: horsec::allocator::Mimalloc = horsec::allocator::Mimalloc;

/// One file's compile times: per stage, their sums and the whole calls.
#[derive(Clone, Default)]
struct Samples {
    stages: Vec<Vec<Duration>>,
    totals: Vec<Duration>,
    walls: Vec<Duration>,
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times.get(times.len() / 2).copied().unwrap_or_default()
}

fn ms(t: Duration) -> String {
    format!("{:.3}", t.as_secs_f64() * 1e3)
}

fn main() {
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(21);
    let files: Vec<String> = std::env::args().skip(1).collect();
    let mut texts = Vec::with_capacity(files.len());
    for file in &files {
        match std::fs::read_to_string(file) {
            Ok(text) => texts.push(text),
            Err(e) => {
                eprintln!("error: {file}: {e}");
                std::process::exit(1);
            }
        }
    }
    let mut stage_names: Vec<&'static str> = Vec::new();
    let mut samples = vec![Samples::default(); files.len()];
    // Round-robin over the files, so that a slow start of the process (cold caches, a CPU
    // clock still rising) spreads over every file instead of landing on the first ones.
    for _ in 0..runs {
        for ((file, text), sample) in files.iter().zip(&texts).zip(samples.iter_mut()) {
            let start = std::time::Instant::now();
            let c = compile_for(file, text, Stage::Plan, Target::Gpu);
            if c.plan.is_none() {
                eprintln!(
                    "error: {file} does not compile:\n{}",
                    c.render_diagnostics()
                );
                std::process::exit(1);
            }
            if stage_names.is_empty() {
                stage_names = c.stage_times.iter().map(|(s, _)| *s).collect();
            }
            sample.stages.resize(c.stage_times.len(), Vec::new());
            for (k, (_, t)) in c.stage_times.iter().enumerate() {
                sample.stages[k].push(*t);
            }
            sample
                .totals
                .push(c.stage_times.iter().map(|(_, t)| *t).sum());
            drop(c);
            sample.walls.push(start.elapsed());
        }
    }
    let mut rows = Vec::new();
    for (file, sample) in files.iter().zip(samples) {
        let name = std::path::Path::new(file)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| file.clone());
        rows.push((
            name,
            sample.stages.into_iter().map(median).collect::<Vec<_>>(),
            median(sample.totals),
            median(sample.walls),
        ));
    }
    print!("{:<8}", "query");
    for s in &stage_names {
        print!(" {s:>9}");
    }
    println!(" {:>9} {:>9}", "total", "wall");
    for (name, stages, total, wall) in &rows {
        print!("{name:<8}");
        for t in stages {
            print!(" {:>9}", ms(*t));
        }
        println!(" {:>9} {:>9}", ms(*total), ms(*wall));
    }
    println!(
        "medians of {runs} compiles (ms), parse → plan for the GPU, one process, files in turn"
    );
}
