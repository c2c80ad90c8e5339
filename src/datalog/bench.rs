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

/// Benchmarks `file` on `db`: one cold GPU run, then `runs` timed runs on each backend.
pub fn bench_datalog(
    file: &Path,
    db: &Database,
    device: &Device,
    runs: usize,
    out: &mut dyn Write,
) -> Result<(), String> {
    let runs = runs.max(1);
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("{}: cannot read: {e}", file.display()))?;
    let options = LowerOptions {
        count_iterations: true,
    };
    let name = file.display().to_string();
    let plan = |target| {
        let c = compile_datalog(&name, &text, Stage::Plan, target, options);
        if c.failed() {
            return Err(c.render_diagnostics());
        }
        c.plan.ok_or_else(|| format!("{name}: no plan"))
    };
    let (gpu_plan, cpu_plan) = (plan(Target::Gpu)?, plan(Target::Cpu)?);
    let mut engine = GpuEngine::new(device);
    let mut run_gpu = || -> Result<(Duration, Vec<Value>), String> {
        let mut profile = Profile::new();
        let start = Instant::now();
        let values = interp::run_with(
            &gpu_plan,
            db,
            &mut std::io::sink(),
            &mut engine,
            &mut profile,
        )
        .map_err(|e| format!("{name}: GPU: {}", e.message))?;
        device.wait_idle().map_err(|e| e.to_string())?;
        Ok((start.elapsed(), values))
    };
    let (cold, gpu_values) = run_gpu()?;
    let mut gpu = Vec::with_capacity(runs);
    for _ in 0..runs {
        gpu.push(run_gpu()?.0);
    }
    let mut cpu = Vec::with_capacity(runs);
    let mut cpu_values = Vec::new();
    for _ in 0..runs {
        let start = Instant::now();
        cpu_values = interp::run(&cpu_plan, db, &mut std::io::sink())
            .map_err(|e| format!("{name}: CPU: {}", e.message))?;
        cpu.push(start.elapsed());
    }
    if gpu_values != cpu_values {
        return Err(format!("{name}: the GPU and CPU results differ"));
    }
    let (rows, iterations) = sizes(&gpu_values);
    let (gpu, cpu) = (median(gpu), median(cpu));
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let _ = writeln!(
        out,
        "{name}: gpu {:.1} ms (cold {:.1} ms), cpu {:.1} ms, cpu/gpu {:.2}x, iterations {iterations}, result rows {} (total {})",
        ms(gpu),
        ms(cold),
        ms(cpu),
        cpu.as_secs_f64() / gpu.as_secs_f64().max(1e-9),
        rows.iter().map(usize::to_string).collect::<Vec<_>>().join(" + "),
        rows.iter().sum::<usize>()
    );
    Ok(())
}
