//! The GPU backend keeps data on the device (issue 11): on lavapipe at SF 0.05, each of the
//! 22 TPC-H programs — the conformance ones and our `queries/tpch/` ones — reads back from
//! the device at most its result's own size plus 64 KiB (`bytes downloaded` of `--time`).
//!
//! Programs that do not meet it yet are listed in [`OVER_BUDGET`] with the reason; for them
//! the test prints the figures, and fails when one of them meets the budget (so the list
//! only ever shrinks). `HORSEC_TRAFFIC_SF` changes the scale factor.
//!
//! One test walks all programs in turn: the device's byte counters are shared, so the
//! programs must not run at the same time.

mod common;

use std::path::{Path, PathBuf};

use horsec::driver::{compile_for, Stage, Target};
use horsec_runtime::data::Database;
use horsec_runtime::engine::GpuEngine;
use horsec_runtime::interp;
use horsec_runtime::kernel::GpuElement;
use horsec_runtime::profile::Profile;
use horsec_runtime::value::{List, Value};

/// Slack over the result's size: scalars steering control flow, compaction counts, error
/// words, per-group results read back for host steps.
const SLACK: u64 = 64 * 1024;

/// Programs (`conformance/qN` or `ours/qN`) that read back more, and why.
const OVER_BUDGET: &[(&str, &str)] = &[];

/// Bytes of `value` in the device layout: what reading it back costs at least.
fn result_bytes(value: &Value) -> u64 {
    match value {
        Value::Vector(v) => {
            GpuElement::of_type(&v.ty()).map_or(8, GpuElement::size) * v.len() as u64
        }
        Value::Device(d) => d.byte_len(),
        Value::DeviceList(l) => l.values.byte_len() + 4 * (l.cells as u64 + 1),
        Value::List(List::Flat { values, offsets }) => {
            result_bytes(&Value::Vector(values.clone())) + 4 * offsets.len() as u64
        }
        Value::List(List::Mixed(cells)) => cells.iter().map(result_bytes).sum(),
        Value::Dict(d) => result_bytes(&d.keys) + result_bytes(&d.values),
        Value::Enum(e) => 8 * e.index.len() as u64,
        Value::Table(t) => t.columns.iter().map(result_bytes).sum(),
        Value::KTable(k, v) => {
            k.columns.iter().map(result_bytes).sum::<u64>()
                + v.columns.iter().map(result_bytes).sum::<u64>()
        }
    }
}

struct Traffic {
    downloaded: u64,
    result: u64,
    read_backs: String,
}

fn traffic_of(path: &Path, db: &Database, device: &horsec_runtime::gpu::Device) -> Traffic {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let c = compile_for(&path.display().to_string(), &text, Stage::Plan, Target::Gpu);
    assert!(!c.failed(), "{}", c.render_diagnostics());
    let plan = c.plan.as_ref().expect("a plan");
    let before = device.traffic();
    let mut engine = GpuEngine::new(device);
    let mut profile = Profile::new();
    let values = interp::run_with(plan, db, &mut std::io::sink(), &mut engine, &mut profile)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let moved = device.traffic() - before;
    let read_backs = profile
        .read_backs()
        .map(|(step, n, bytes)| format!("{step} ×{n} {bytes} B"))
        .chain(
            profile
                .step_reads()
                .map(|(step, n, bytes)| format!("inside {step} ×{n} {bytes} B")),
        )
        .collect::<Vec<_>>()
        .join(", ");
    Traffic {
        downloaded: moved.downloaded,
        result: values.iter().map(result_bytes).sum(),
        read_backs,
    }
}

#[test]
fn every_tpch_program_reads_back_little_more_than_its_result() {
    let (Some(conformance), Some(device)) = (common::tpch_queries_dir(), common::gpu()) else {
        return;
    };
    let sf: f64 = std::env::var("HORSEC_TRAFFIC_SF")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.05);
    let db = Database::tpch(sf, false).expect("TPC-H data");
    let mut programs: Vec<(String, PathBuf)> = Vec::new();
    for q in 1..=22 {
        programs.push((
            format!("conformance/q{q}"),
            conformance.join(format!("q{q}.hir")),
        ));
        programs.push((format!("ours/q{q}"), common::our_program(q)));
    }
    let mut failures = Vec::new();
    for (name, path) in &programs {
        let t = traffic_of(path, &db, device);
        let budget = t.result + SLACK;
        let known = OVER_BUDGET.iter().find(|(n, _)| n == name);
        eprintln!(
            "{name}: {} B downloaded, result {} B, budget {budget} B{}; read back for: {}",
            t.downloaded,
            t.result,
            if known.is_some() { " (known over)" } else { "" },
            if t.read_backs.is_empty() {
                "nothing"
            } else {
                &t.read_backs
            }
        );
        match (t.downloaded <= budget, known) {
            (true, None) | (false, Some(_)) => {}
            (false, None) => failures.push(format!(
                "{name}: {} B downloaded, over the budget of {budget} B (read back for: {})",
                t.downloaded, t.read_backs
            )),
            (true, Some(_)) => failures.push(format!(
                "{name} now meets its budget: remove it from OVER_BUDGET"
            )),
        }
    }
    assert!(failures.is_empty(), "at SF {sf}:\n{}", failures.join("\n"));
}
