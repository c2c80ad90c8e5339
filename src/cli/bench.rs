//! `horsec bench`: query programs and Datalog programs side by side on the GPU and the CPU,
//! table loading, the device's copy bandwidth, and the reachability-index benchmark.

use super::*;

/// `horsec bench prog.dl ...`: Datalog programs on their `--table`/`--data` inputs.
pub(super) fn bench_datalog_files(args: &BenchArgs) -> bool {
    let device = match open_device(args.adapter.as_deref()) {
        Ok(device) => device,
        Err(e) => {
            report!("error: horsec bench needs a GPU: {e}");
            return false;
        }
    };
    let _ = writeln!(std::io::stdout(), "device: {}", device.describe());
    args.files.iter().all(|file| {
        let inputs = match crate::datalog::bench::inputs(file) {
            Ok(inputs) => inputs,
            Err(e) => {
                report_text!("{e}");
                return false;
            }
        };
        let start = Instant::now();
        let Some(db) = datalog_database(&inputs, &args.tables, args.data.as_deref()) else {
            return false;
        };
        report!(
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
                report!("error: {e}");
                false
            }
        }
    })
}

/// `horsec bench FILE...`: the query benchmark (see `crate::bench`).
pub(super) fn bench_files(args: &BenchArgs) -> bool {
    if args
        .files
        .iter()
        .any(|f| crate::datalog::is_datalog(&f.display().to_string()))
    {
        return bench_datalog_files(args);
    }
    let Ok(warm_up) = std::time::Duration::try_from_secs_f64(args.warm_up) else {
        report!(
            "error: --warm-up {}: expected a number of seconds, 0 or more",
            args.warm_up
        );
        return false;
    };
    let device = match open_device(args.adapter.as_deref()) {
        Ok(device) => device,
        Err(e) => {
            report!("error: horsec bench needs a GPU: {e}");
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
            report!("error: loading data: {e}");
            return false;
        }
    };
    report!("data loaded in {:.1} s", start.elapsed().as_secs_f64());
    let stdout = std::io::stdout();
    let cpu_runs = if args.gpu_only { 0 } else { args.runs };
    let mut out = stdout.lock();
    let options = crate::bench::BenchOptions {
        runs: args.runs,
        cpu_runs,
        warm_up,
        breakdown: args.time,
    };
    match crate::bench::bench_queries(&args.files, &db, &device, &options, &mut out) {
        Ok(_) => {
            if let Err(e) = device.save_pipeline_cache() {
                report!("warning: {e}");
            }
            true
        }
        Err(e) => {
            report!("error: {e}");
            false
        }
    }
}

/// `horsec bench --load TABLES --data DIR`: the best of `--runs` loads of each table's file.
pub(super) fn bench_load(args: &BenchArgs) -> bool {
    use horsec_runtime::data::FileFormat;
    let Some(dir) = &args.data else {
        return false;
    };
    for table in &args.load {
        let Some(path) = FileFormat::find_table(dir, table) else {
            report!("error: no file of table `{table}` in `{}`", dir.display());
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
                report!("error: {e}");
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
pub(super) fn bench_bandwidth(args: &BenchArgs) -> bool {
    use horsec_runtime::gpu::bandwidth::{measure_copy_bandwidth, CopyMethod};
    let device = match open_device(args.adapter.as_deref()) {
        Ok(device) => device,
        Err(e) => {
            report!("error: horsec bench --bandwidth needs a GPU: {e}");
            return false;
        }
    };
    // 1 GiB (or the device's buffer limit), ten copies per submission, best of five.
    match measure_copy_bandwidth(&device, 1 << 30, 10, 5) {
        Ok([best, other]) => {
            let name = |method| match method {
                CopyMethod::Command => "copy command",
                CopyMethod::Kernel => "copy kernel",
            };
            println!("device: {}", device.describe());
            println!(
                "device copy bandwidth: {:.1} GB/s (the {}; the {}: {:.1} GB/s; {} MiB copied {} times per submission, best of 5)",
                best.bytes_per_second() / 1e9,
                name(best.method),
                name(other.method),
                other.bytes_per_second() / 1e9,
                best.buffer_bytes >> 20,
                best.copies
            );
            true
        }
        Err(e) => {
            report!("error: measuring the copy bandwidth: {e}");
            false
        }
    }
}

pub(super) fn bench(args: &BenchArgs) -> bool {
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
            report!(
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
                report!("error: unknown graph `{name}`: expected SF1, SF10 or SF100");
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
            report!("error: {e}");
            false
        }
    }
}

pub(super) fn bench_reach(args: &BenchArgs, graph: &str) -> bool {
    use horsec_runtime::graph::reach_bench::{run, ReachBench, ReachGraph};
    let Some(kind) = ReachGraph::named(graph) else {
        report!("error: unknown graph `{graph}` for --reach: expected dag, citation or clustered");
        return false;
    };
    if !(1..=8).contains(&args.labels) {
        report!("error: --labels must be 1 to 8, got {}", args.labels);
        return false;
    }
    if args.hubs > horsec_runtime::graph::grail_gpu::MAX_HUBS {
        report!(
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
            report!("error: {e}");
            false
        }
    }
}
