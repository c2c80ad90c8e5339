//! `horsec bench prog.dl`: a Datalog program on the GPU and on the CPU backend over the same
//! inputs, medians of repeated runs, with the semi-naive iteration count and the size of
//! each `.output` relation (checked equal on both backends).

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use horsec_runtime::data::Database;
use horsec_runtime::engine::GpuEngine;
use horsec_runtime::gpu::Device;
use horsec_runtime::interp;
use horsec_runtime::profile::Profile;
use horsec_runtime::value::Value;

use crate::driver::{compile_datalog, Stage, Target};

use super::{InputRelation, LowerOptions};

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples.get(samples.len() / 2).copied().unwrap_or_default()
}

/// The inputs a Datalog file reads, for loading its data before the benchmark.
pub fn inputs(file: &Path) -> Result<Vec<InputRelation>, String> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("{}: cannot read: {e}", file.display()))?;
    let c = compile_datalog(
        &file.display().to_string(),
        &text,
        Stage::Parse,
        Target::Cpu,
        LowerOptions::default(),
    );
    if c.failed() {
        return Err(c.render_diagnostics());
    }
    c.datalog
        .map(|l| l.inputs)
        .ok_or_else(|| format!("{}: not lowered", file.display()))
}

/// Rows of each output relation and the iteration count (the last table).
fn sizes(values: &[Value]) -> (Vec<usize>, i64) {
    let mut rows: Vec<usize> = values
        .iter()
        .map(|v| match v {
            Value::Table(t) => t.rows(),
            other => other.len(),
        })
        .collect();
    let iterations = match values.last() {
        Some(Value::Table(t)) => match t.columns.first() {
            Some(Value::Vector(v)) => v.as_i64s().and_then(|x| x.first().copied()).unwrap_or(0),
            _ => 0,
        },
        _ => 0,
    };
    rows.pop();
    (rows, iterations)
}

/// The value of a program whose one output is one number (a count, such as
/// `triangles_count.dl`'s), so that a script can check it against another system's.
fn single_value(values: &[Value]) -> Option<i64> {
    // The last table is the iteration count.
    let [Value::Table(t), _] = values else {
        return None;
    };
    match t.columns.as_slice() {
        [Value::Vector(v)] if t.rows() == 1 => v.as_i64s().and_then(|x| x.first().copied()),
        _ => None,
    }
}

/// Medians of one program's runs: the first GPU run (compiling its kernels), then `runs`
/// timed runs on each backend, checked equal.
struct Measured {
    /// None where the backend was skipped (`HORSEC_BENCH_BACKENDS`).
    cold: Option<Duration>,
    gpu: Option<Duration>,
    cpu: Option<Duration>,
    values: Vec<Value>,
    /// The `--time` report of the last timed GPU run (its steps, waits and submissions).
    gpu_report: Option<String>,
}

/// The backends to measure: `HORSEC_BENCH_BACKENDS` = `gpu`, `cpu` or `gpu,cpu` (the
/// default). One backend alone lets a script give each its own time limit on large inputs.
fn backends() -> Result<(bool, bool), String> {
    let Some(text) = std::env::var_os("HORSEC_BENCH_BACKENDS") else {
        return Ok((true, true));
    };
    let text = text.to_string_lossy().into_owned();
    let (mut gpu, mut cpu) = (false, false);
    for name in text.split(',').map(str::trim) {
        match name {
            "gpu" => gpu = true,
            "cpu" => cpu = true,
            other => {
                return Err(format!(
                    "HORSEC_BENCH_BACKENDS: unknown backend `{other}` (gpu, cpu)"
                ))
            }
        }
    }
    if !gpu && !cpu {
        return Err("HORSEC_BENCH_BACKENDS names no backend (gpu, cpu)".to_string());
    }
    Ok((gpu, cpu))
}

fn measure(
    name: &str,
    text: &str,
    options: LowerOptions,
    db: &Database,
    device: &Device,
    runs: usize,
) -> Result<Measured, String> {
    let plan = |target, options| {
        let c = compile_datalog(name, text, Stage::Plan, target, options);
        if c.failed() {
            return Err(c.render_diagnostics());
        }
        c.plan.ok_or_else(|| format!("{name}: no plan"))
    };
    // The cold GPU run and the CPU runs count the iterations; the timed GPU runs run the
    // plan of `horsec run`, without the counter: the outliner fuses the counter's scalar
    // `@plus` into the loop's delta-length kernel, which then runs on the CPU and reads every
    // delta back (the time `bench` gave beside `run --time`).
    let uncounted = LowerOptions {
        count_iterations: false,
        ..options
    };
    let (gpu_plan, timed_plan, cpu_plan) = (
        plan(Target::Gpu, options)?,
        plan(Target::Gpu, uncounted)?,
        plan(Target::Cpu, options)?,
    );
    let mut engine = GpuEngine::new(device);
    let mut gpu_report = None;
    let mut run_gpu = |gpu_plan: &horsec_runtime::plan::Plan,
                       report: &mut Option<String>|
     -> Result<(Duration, Vec<Value>), String> {
        let mut profile = Profile::new();
        let costs = device.host_costs();
        let start = Instant::now();
        let values = interp::run_with(
            gpu_plan,
            db,
            &mut std::io::sink(),
            &mut engine,
            &mut profile,
        )
        .map_err(|e| format!("{name}: GPU: {}", e.message))?;
        device.wait_idle().map_err(|e| e.to_string())?;
        let time = start.elapsed();
        let d = device.host_costs() - costs;
        *report = Some(format!(
            "{}  device operations: {} dispatches, {} submissions, {} host waits ({:.1} ms), \
             {} buffers created ({:.1} ms)\n",
            profile.report(),
            d.encodes.0,
            d.submits.0,
            d.waits.0,
            d.waits.1.as_secs_f64() * 1e3,
            d.buffers.0,
            d.buffers.1.as_secs_f64() * 1e3,
        ));
        Ok((time, values))
    };
    let (use_gpu, use_cpu) = backends()?;
    let (mut cold, mut gpu, mut gpu_values) = (None, Vec::new(), None);
    if use_gpu {
        let (time, values) = run_gpu(&gpu_plan, &mut gpu_report)?;
        cold = Some(time);
        gpu_values = Some(values);
        for _ in 0..runs {
            let (time, values) = run_gpu(&timed_plan, &mut gpu_report)?;
            // The same tables as the counted run's, less its iteration count.
            if gpu_values.as_ref().is_some_and(|counted: &Vec<Value>| {
                counted[..counted.len() - usize::from(options.count_iterations)] != values[..]
            }) {
                return Err(format!("{name}: the GPU runs give different results"));
            }
            gpu.push(time);
        }
    }
    let mut cpu = Vec::new();
    let mut cpu_values = None;
    if use_cpu {
        for _ in 0..runs {
            let start = Instant::now();
            cpu_values = Some(
                interp::run(&cpu_plan, db, &mut std::io::sink())
                    .map_err(|e| format!("{name}: CPU: {}", e.message))?,
            );
            cpu.push(start.elapsed());
        }
    }
    let values = match (gpu_values, cpu_values) {
        (Some(g), Some(c)) if g != c => {
            return Err(format!("{name}: the GPU and CPU results differ"))
        }
        (Some(values), _) | (None, Some(values)) => values,
        (None, None) => return Err(format!("{name}: no backend ran")),
    };
    Ok(Measured {
        cold,
        gpu: use_gpu.then(|| median(gpu)),
        cpu: use_cpu.then(|| median(cpu)),
        values,
        gpu_report,
    })
}

/// A time in milliseconds, or `skipped`.
fn ms(d: Option<Duration>) -> String {
    d.map_or("skipped".to_string(), |d| {
        format!("{:.1} ms", d.as_secs_f64() * 1e3)
    })
}

/// `slow / fast` as `N.NNx`, or `-` where one was skipped.
fn ratio(slow: Option<Duration>, fast: Option<Duration>) -> String {
    match (slow, fast) {
        (Some(s), Some(f)) => format!("{:.2}x", s.as_secs_f64() / f.as_secs_f64().max(1e-9)),
        _ => "-".to_string(),
    }
}

/// Benchmarks `file` on `db`: one cold GPU run, then `runs` timed runs on each backend. A
/// program with multiway joins is measured again with every rule as binary joins (the
/// comparison plan; a failure there, such as running out of memory on the paths a triangle
/// query builds, is reported, not fatal).
pub fn bench_datalog(
    file: &Path,
    db: &Database,
    device: &Device,
    runs: usize,
    time: bool,
    out: &mut dyn Write,
) -> Result<(), String> {
    let runs = runs.max(1);
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("{}: cannot read: {e}", file.display()))?;
    let options = LowerOptions {
        count_iterations: true,
        binary_joins: false,
    };
    let name = file.display().to_string();
    let m = measure(&name, &text, options, db, device, runs)?;
    let (rows, iterations) = sizes(&m.values);
    let _ = writeln!(
        out,
        "{name}: gpu {} (cold {}), cpu {}, cpu/gpu {}, iterations {iterations}, result rows {} (total {}){}",
        ms(m.gpu),
        ms(m.cold),
        ms(m.cpu),
        ratio(m.cpu, m.gpu),
        rows.iter().map(usize::to_string).collect::<Vec<_>>().join(" + "),
        rows.iter().sum::<usize>(),
        single_value(&m.values).map_or(String::new(), |v| format!(", value {v}"))
    );
    if let (true, Some(report)) = (time, &m.gpu_report) {
        let _ = write!(out, "last timed GPU run:\n{report}");
    }
    let multiway = super::compile(&text, options)
        .0
        .is_some_and(|l| l.rule_plans.iter().any(|p| p.contains("multiway")));
    // HORSEC_BENCH_NO_BINARY=1 skips the comparison (its paths outgrow memory on large graphs).
    if multiway && std::env::var_os("HORSEC_BENCH_NO_BINARY").is_none() {
        let binary = LowerOptions {
            binary_joins: true,
            ..options
        };
        match measure(&name, &text, binary, db, device, runs) {
            Ok(b) if b.values != m.values => {
                return Err(format!(
                    "{name}: the binary-join plan gives another result than the multiway joins"
                ))
            }
            Ok(b) => {
                let _ = writeln!(
                    out,
                    "{name} (binary joins): gpu {}, cpu {}; multiway join speed-up: gpu {}, cpu {}",
                    ms(b.gpu),
                    ms(b.cpu),
                    ratio(b.gpu, m.gpu),
                    ratio(b.cpu, m.cpu),
                );
            }
            Err(e) => {
                let _ = writeln!(out, "{name} (binary joins): failed: {e}");
            }
        }
    }
    Ok(())
}
