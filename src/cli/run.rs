//! `horsec run`: the program's data, its execution, its result and the `--time` report.

use super::*;

pub(super) fn run(args: &RunArgs) -> bool {
    if let (Err(file_format), None) = (args.format.output(), &args.out) {
        let name = match file_format {
            ArrowFileFormat::Parquet => "parquet",
            ArrowFileFormat::ArrowIpc => "arrow",
        };
        report!("error: --format {name} writes a file: give --out FILE");
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
                report!(
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
                report!("error: {flag}: {e}");
                return false;
            }
        },
    };

    let Some(text) = read_source(&args.file) else {
        return false;
    };
    let query = match engine.compile(&args.file.display().to_string(), &text) {
        Ok(query) => {
            report_text!("{}", query.warnings());
            query
        }
        Err(e) => {
            report_text!("{}", e.message);
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

    // With --time, generated and library kernels get GPU timestamps.
    if let Some(device) = engine.device() {
        device.set_profiling(args.time);
    }
    let output = match engine.run(&query, &db) {
        Ok(output) => output,
        Err(e) => {
            report_text!("{}", e.message);
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
            report!("warning: {e}");
        }
    }
    if args.time {
        report_text!(
            "{}",
            time_report(&query, engine.device(), &output, load_time, output_time)
        );
    }
    true
}

/// Writes what the program printed and the values it returned, to stdout or `--out`.
pub(super) fn write_result(args: &RunArgs, output: &Output) -> bool {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if let Err(e) = out.write_all(&output.printed) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            return true;
        }
        report!("error: writing to stdout: {e}");
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
                report!("error: writing the result: {e}");
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
                report!("{}: error: writing the result: {e}", path.display());
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
                    report!("error: writing the result: {e}");
                    false
                }
            }
        }
        (Err(_), None) => false,
    }
}

/// The `--time` report: compile stages, loading, pipelines, execution, the profile, and
/// the bytes moved.
pub(super) fn time_report(
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
pub(super) fn database(args: &RunArgs, query: &Query) -> Option<Database> {
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
            report!("error: loading data: {e}");
            return None;
        }
    };
    for (name, path) in &args.tables {
        if let Err(e) = db.load_file(name, path) {
            report!("error: loading table `{name}`: {e}");
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
                report!(
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
pub(super) fn default_tpch(
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
        report!("note: {notice}");
    }
    Ok(db)
}

/// The `.input` relations of a Datalog program: `--table NAME=FILE.csv` (header naming the
/// columns), else `NAME.facts` (tab-separated) in `--data DIR`.
pub(super) fn datalog_database(
    inputs: &[crate::datalog::InputRelation],
    tables: &[(String, PathBuf)],
    data: Option<&Path>,
) -> Option<Database> {
    use horsec_runtime::data::{FactFormat, FactType};
    for (name, _) in tables {
        if !inputs.iter().any(|r| &r.name == name) {
            let known: Vec<&str> = inputs.iter().map(|r| r.name.as_str()).collect();
            report!(
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
                report!(
                    "error: `.input {0}` has no data: give --table {0}=FILE.csv or --data DIR holding {0}.facts",
                    relation.name
                );
                return None;
            }
        };
        if let Err(e) = db.load_relation(&relation.name, &path, &columns, format) {
            report!("error: loading relation `{}`: {e}", relation.name);
            return None;
        }
    }
    Some(db)
}
