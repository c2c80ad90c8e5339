//! Shared helpers for integration tests: the conformance directory, running programs, and
//! the answer comparison rule of the TPC-H tests.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use horsec::driver::{compile, Stage};
use horsec_runtime::data::Database;
use horsec_runtime::format::{write_value, OutputFormat};
use horsec_runtime::interp;

/// The conformance directory (`HORSEC_CONFORMANCE`, default `../shared/conformance`), or None
/// after a loud notice when it is missing: tests that need it then skip.
pub fn conformance_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("HORSEC_CONFORMANCE").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance"),
        PathBuf::from,
    );
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "SKIPPED: conformance directory {} not found (set HORSEC_CONFORMANCE)",
            dir.display()
        );
        None
    }
}

/// The TPC-H query directory of the conformance suite, or None after the notice.
pub fn tpch_queries_dir() -> Option<PathBuf> {
    conformance_dir().map(|d| d.join("tpch/queries"))
}

/// Conformance TPC-H program `q{query}.hir`, or None when the suite is missing.
pub fn conformance_program(query: u32) -> Option<PathBuf> {
    tpch_queries_dir().map(|d| d.join(format!("q{query}.hir")))
}

/// Our own TPC-H program `queries/tpch/q{query}.hir`.
pub fn our_program(query: u32) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("queries/tpch/q{query}.hir"))
}

/// The `.hir` files of `dir`, sorted.
pub fn programs(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "hir"))
        .collect();
    files.sort();
    files
}

/// TPC-H at scale factor `sf` (0.01 or 1), made once per test binary and shared: SF 1 is
/// read from the `.tbl` directory `HORSEC_TPCH_SF1` names, when it names one, and otherwise
/// generated in process.
pub fn tpch(sf: f64) -> Arc<Database> {
    static SMALL: OnceLock<Arc<Database>> = OnceLock::new();
    static SF1: OnceLock<Arc<Database>> = OnceLock::new();
    let cell = if sf >= 1.0 { &SF1 } else { &SMALL };
    cell.get_or_init(|| {
        let dir = std::env::var_os("HORSEC_TPCH_SF1")
            .map(PathBuf::from)
            .filter(|d| sf >= 1.0 && d.is_dir());
        let db = match dir {
            Some(dir) => Database::from_tbl_dir(&dir, false),
            None => Database::tpch(sf, false),
        };
        Arc::new(db.unwrap_or_else(|e| panic!("TPC-H SF {sf}: {e}")))
    })
    .clone()
}

/// Compiles and runs the program in `path` on `db` with the CPU interpreter; returns its
/// result as TSV.
pub fn run_tsv(path: &std::path::Path, db: &Database) -> Result<String, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let c = compile(&path.display().to_string(), &text, Stage::Plan);
    if c.failed() {
        return Err(c.render_diagnostics());
    }
    let plan = c.plan.as_ref().ok_or("no plan")?;
    let mut printed = Vec::new();
    let values = interp::run(plan, db, &mut printed).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for v in &values {
        write_value(v, OutputFormat::Tsv, &mut out).map_err(|e| e.to_string())?;
    }
    String::from_utf8(out).map_err(|e| e.to_string())
}

/// One GPU device for the whole test binary (opening one is slow on lavapipe), or None after
/// a loud "SKIPPED" (a failure under `HORSEC_REQUIRE_GPU=1`).
pub fn gpu() -> Option<&'static horsec_runtime::gpu::Device> {
    static DEVICE: OnceLock<Option<horsec_runtime::gpu::Device>> = OnceLock::new();
    DEVICE
        .get_or_init(horsec_runtime::gpu::require_gpu_or_skip)
        .as_ref()
}

/// Compiles the program in `path` for the GPU and runs it there; returns its result as TSV
/// and the names of the compute steps that ran on the CPU.
pub fn run_gpu_tsv(
    path: &std::path::Path,
    db: &Database,
    device: &horsec_runtime::gpu::Device,
) -> Result<(String, Vec<String>), String> {
    let (answer, profile) = run_gpu_profiled(path, db, device)?;
    let cpu_steps = profile
        .cpu_compute_steps()
        .into_iter()
        .map(|(name, _)| name.to_string())
        .collect();
    Ok((answer, cpu_steps))
}

/// [`run_gpu_tsv`], with the run's profile: every step that ran, by name.
pub fn run_gpu_profiled(
    path: &std::path::Path,
    db: &Database,
    device: &horsec_runtime::gpu::Device,
) -> Result<(String, horsec_runtime::profile::Profile), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let c = horsec::driver::compile_for(
        &path.display().to_string(),
        &text,
        Stage::Plan,
        horsec::driver::Target::Gpu,
    );
    if c.failed() {
        return Err(c.render_diagnostics());
    }
    let plan = c.plan.as_ref().ok_or("no plan")?;
    let mut printed = Vec::new();
    let mut engine = horsec_runtime::engine::GpuEngine::new(device);
    let mut profile = horsec_runtime::profile::Profile::new();
    let values = interp::run_with(plan, db, &mut printed, &mut engine, &mut profile)
        .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for v in &values {
        write_value(v, OutputFormat::Tsv, &mut out).map_err(|e| e.to_string())?;
    }
    Ok((String::from_utf8(out).map_err(|e| e.to_string())?, profile))
}

/// Runs `tests/programs/{dir}/{name}.hir` on both backends on TPC-H SF 0.01 and panics
/// unless the GPU answers as the CPU does, row order included; returns the GPU run's profile
/// (every step, by name) for the caller's checks of how it ran.
pub fn gpu_answers_as_cpu(
    dir: &str,
    name: &str,
    device: &horsec_runtime::gpu::Device,
) -> horsec_runtime::profile::Profile {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/programs")
        .join(dir)
        .join(format!("{name}.hir"));
    let db = tpch(0.01);
    let cpu = run_tsv(&path, &db).unwrap_or_else(|e| panic!("{name} on the CPU: {e}"));
    let (answer, profile) =
        run_gpu_profiled(&path, &db, device).unwrap_or_else(|e| panic!("{name} on the GPU: {e}"));
    if let Err(diff) = compare_answers(&answer, &cpu, &[]) {
        panic!("{name}: the backends answer differently: {diff}");
    }
    profile
}

/// The ORDER BY columns of each TPC-H query (by output column name), from the SQL.
pub fn tpch_sort_keys(query: u32) -> &'static [&'static str] {
    match query {
        1 => &["l_returnflag", "l_linestatus"],
        2 => &["s_acctbal", "n_name", "s_name", "p_partkey"],
        3 => &["revenue", "o_orderdate"],
        4 => &["o_orderpriority"],
        5 => &["revenue"],
        7 => &["supp_nation", "cust_nation", "l_year"],
        8 => &["o_year"],
        9 => &["nation", "o_year"],
        10 => &["revenue"],
        11 => &["value"],
        12 => &["l_shipmode"],
        13 => &["custdist", "c_count"],
        15 => &["s_suppkey"],
        16 => &["supplier_cnt", "p_brand", "p_type", "p_size"],
        18 => &["o_totalprice", "o_orderdate"],
        20 => &["s_name"],
        21 => &["numwait", "s_name"],
        22 => &["cntrycode"],
        _ => &[],
    }
}

const REL_TOL: f64 = 1e-9;

fn field_eq(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => {
            let scale = x.abs().max(y.abs()).max(f64::MIN_POSITIVE);
            (x - y).abs() / scale <= REL_TOL || (x - y).abs() <= 1e-12
        }
        _ => false,
    }
}

fn as_strs(row: &[String]) -> Vec<&str> {
    row.iter().map(String::as_str).collect()
}

fn rows_eq(a: &[&str], b: &[&str]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| field_eq(x, y))
}

/// Compares a TSV answer with the expected one: same header and row count; rows in the same
/// order wherever the sort keys order them (rows whose keys tie may come in any order);
/// numbers equal within a relative 1e-9.
///
/// An expected answer of one row of empty fields is SQL's NULL aggregate over no rows
/// (TPC-H q17 at SF 0.01). HorseIR has no NULL: `@sum` of no elements is 0, so the answer may
/// be no rows or one row of zeros.
///
/// A header name matches an expected SQL aggregate label that begins with it and a `(`:
/// rNdN's q18 names its column `sum` where the SQL answer says `sum(l_quantity)`.
pub fn compare_answers(actual: &str, expected: &str, sort_keys: &[&str]) -> Result<(), String> {
    let parse = |text: &str| -> Vec<Vec<String>> {
        text.lines()
            .map(|l| l.split('\t').map(str::to_string).collect())
            .collect()
    };
    let actual = parse(actual);
    let mut expected = parse(expected);
    let (Some(a_header), Some(e_header)) = (actual.first().cloned(), expected.first().cloned())
    else {
        return Err("an answer has no header line".into());
    };
    let name_eq = |a: &String, e: &String| {
        a == e || (e.starts_with(a.as_str()) && e[a.len()..].starts_with('(') && e.ends_with(')'))
    };
    if a_header.len() != e_header.len()
        || !a_header.iter().zip(&e_header).all(|(a, e)| name_eq(a, e))
    {
        return Err(format!(
            "header differs:\n  got      {a_header:?}\n  expected {e_header:?}"
        ));
    }
    if expected.len() == 2 && expected[1].iter().all(String::is_empty) {
        expected.truncate(1);
        let zero_row = |row: &Vec<String>| row.iter().all(|f| f.parse::<f64>() == Ok(0.0));
        if actual.len() == 2 && zero_row(&actual[1]) {
            return Ok(());
        }
    }
    let (a_rows, e_rows) = (&actual[1..], &expected[1..]);
    if a_rows.len() != e_rows.len() {
        return Err(format!(
            "row count differs: got {}, expected {}",
            a_rows.len(),
            e_rows.len()
        ));
    }
    let key_idx: Vec<usize> = sort_keys
        .iter()
        .filter_map(|k| e_header.iter().position(|h| h == k))
        .collect();
    let keys =
        |row: &[String]| -> Vec<String> { key_idx.iter().map(|&i| row[i].clone()).collect() };

    // Blocks of consecutive expected rows with tying sort keys (the whole answer when the
    // query has no ORDER BY).
    let mut start = 0;
    while start < e_rows.len() {
        let mut end = start + 1;
        while end < e_rows.len()
            && rows_eq(
                &as_strs(&keys(&e_rows[end])),
                &as_strs(&keys(&e_rows[start])),
            )
        {
            end += 1;
        }
        if key_idx.is_empty() {
            end = e_rows.len();
        }
        let mut got: Vec<&Vec<String>> = a_rows[start..end].iter().collect();
        let mut want: Vec<&Vec<String>> = e_rows[start..end].iter().collect();
        got.sort();
        want.sort();
        for (g, w) in got.iter().zip(&want) {
            if !rows_eq(&as_strs(g), &as_strs(w)) {
                return Err(format!(
                    "rows {}..{} differ (sorted within ties):\n  got      {g:?}\n  expected {w:?}",
                    start + 1,
                    end + 1
                ));
            }
        }
        start = end;
    }
    Ok(())
}
