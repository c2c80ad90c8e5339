//! Columns with few distinct values go to the device coded, a byte a row (`ValuePart::Coded`),
//! and kernels read them to the same values; columns with more distinct values, and short
//! ones, go as they are, through the same kernel.

mod common;

use std::path::PathBuf;
use std::sync::Arc;

use horsec_runtime::data::Database;
use horsec_runtime::value::{Table, Value, Vector};

/// Rows of the table: a kernel's input is coded from 1,024 elements on.
const ROWS: usize = 5000;

/// A table `t` of `ROWS` rows: `few` (f64, 11 distinct values), `kind` (i32, 3), `many`
/// (f64, every row its own value).
fn database() -> Database {
    let few: Vec<f64> = (0..ROWS).map(|i| (i * 7 % 11) as f64 / 100.0).collect();
    let kind: Vec<i32> = (0..ROWS).map(|i| [-5, 17, 4][i % 3]).collect();
    let many: Vec<f64> = (0..ROWS).map(|i| i as f64 * 1.25 + 0.5).collect();
    one_table(
        "t",
        [
            ("few", Vector::F64(Arc::new(few))),
            ("kind", Vector::I32(Arc::new(kind))),
            ("many", Vector::F64(Arc::new(many))),
        ],
    )
}

/// A database of one table, `name`, of the named columns.
fn one_table<const N: usize>(name: &str, columns: [(&str, Vector); N]) -> Database {
    let table = Table {
        names: columns.iter().map(|(c, _)| (*c).into()).collect(),
        columns: columns.into_iter().map(|(_, v)| Value::Vector(v)).collect(),
    };
    let mut db = Database::new();
    db.insert(name, table);
    db
}

fn program(name: &str, body: &str, returns: &str) -> PathBuf {
    write_program(
        name,
        &format!(
            "module coded {{\n  import Builtin.*;\n  def main() : {returns} {{\n    \
             t0:? = @load_table(`t:sym);\n    \
             few:f64 = check_cast(@column_value(t0, `few:sym), f64);\n    \
             kind:i32 = check_cast(@column_value(t0, `kind:sym), i32);\n    \
             many:f64 = check_cast(@column_value(t0, `many:sym), f64);\n{body}  }}\n}}\n"
        ),
    )
}

/// `source` written as `coded_NAME.hir` under the tests' scratch folder.
fn write_program(name: &str, source: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let path = dir.join(format!("coded_{name}.hir"));
    std::fs::write(&path, source).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    path
}

/// Bytes a run of the program at `path` on an engine of its own uploads.
fn uploaded_by_a_run(
    path: &std::path::Path,
    db: &Database,
    device: &horsec_runtime::gpu::Device,
) -> u64 {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let c = horsec::driver::compile_for(
        &path.display().to_string(),
        &text,
        horsec::driver::Stage::Plan,
        horsec::driver::Target::Gpu,
    );
    let plan = c.plan.as_ref().expect("a plan");
    let mut engine = horsec_runtime::engine::GpuEngine::new(device);
    let mut profile = horsec_runtime::profile::Profile::new();
    horsec_runtime::interp::run_with(plan, db, &mut std::io::sink(), &mut engine, &mut profile)
        .unwrap_or_else(|e| panic!("the GPU fails: {e}"));
    engine.uploaded_bytes
}

/// Runs the program at `path` on the CPU and, every step, on the GPU, checks that they
/// answer the same, and gives the bytes one engine of its own uploads for it (the device's
/// counters are shared with tests running at the same time).
fn same_answers_and_uploaded(
    path: &std::path::Path,
    db: &Database,
    device: &horsec_runtime::gpu::Device,
) -> u64 {
    let cpu = common::run_tsv(path, db).unwrap_or_else(|e| panic!("the CPU fails: {e}"));
    let (gpu, cpu_steps) =
        common::run_gpu_tsv(path, db, device).unwrap_or_else(|e| panic!("the GPU fails: {e}"));
    let uploaded = uploaded_by_a_run(path, db, device);
    assert!(cpu_steps.is_empty(), "steps ran on the CPU: {cpu_steps:?}");
    assert_eq!(gpu, cpu);
    uploaded
}

#[test]
fn coded_and_uncoded_columns_in_one_kernel_give_the_cpu_s_values_row_by_row() {
    let Some(device) = common::gpu() else {
        return;
    };
    let db = database();
    let path = program(
        "rows",
        "    m:f64 = @mul(few, 3.0:f64);\n    a:f64 = @plus(m, many);\n    \
         g:bool = @gt(few, 0.04:f64);\n    d:bool = @neq(kind, 17:i32);\n    \
         b:bool = @and(g, d);\n    c:i32 = @plus(kind, 1:i32);\n    return a, b, c;\n",
        "f64, bool, i32",
    );
    let uploaded = same_answers_and_uploaded(&path, &db, device);
    // `many` as it is (8 bytes a row), `few` and `kind` coded: a byte a row and their
    // dictionaries, far less than the 12 bytes a row they are.
    let plain = (ROWS * (8 + 8 + 4)) as u64;
    assert!(
        uploaded >= (ROWS * 8) as u64,
        "{uploaded} B uploaded: not even `many`, as it is"
    );
    assert!(
        uploaded < plain - (ROWS * 8) as u64,
        "{uploaded} B uploaded: `few` and `kind` were not coded (plain: {plain} B)"
    );
}

#[test]
fn a_filtered_sum_over_coded_columns_is_the_sum_over_the_same_values() {
    let Some(device) = common::gpu() else {
        return;
    };
    let db = database();
    // Integer sums, exact in any order: the coded values must be the same values.
    let path = program(
        "sum",
        "    keep:bool = @lt(few, 0.06:f64);\n    \
         k:i32 = @compress(keep, kind);\n    \
         s:i64 = @sum(k);\n    n:i64 = @len(k);\n    return s, n;\n",
        "i64, i64",
    );
    let cpu = common::run_tsv(&path, &db).unwrap_or_else(|e| panic!("the CPU fails: {e}"));
    let (gpu, cpu_steps) =
        common::run_gpu_tsv(&path, &db, device).unwrap_or_else(|e| panic!("the GPU fails: {e}"));
    assert!(cpu_steps.is_empty(), "steps ran on the CPU: {cpu_steps:?}");
    assert_eq!(gpu, cpu);
}

/// Rows of the long table: past the prefix whose distinct values are counted first (65,536
/// elements), before a column is converted whole.
const LONG_ROWS: usize = 70_000;

/// A table `long` of `LONG_ROWS` rows: `few` (f64, 5 distinct values), `late` (f64, 3
/// distinct values in the prefix and 300 more after it), `many` (f64, every row its own).
fn long_database() -> Database {
    let few: Vec<f64> = (0..LONG_ROWS).map(|i| (i % 5) as f64 * 0.5).collect();
    let late: Vec<f64> = (0..LONG_ROWS)
        .map(|i| {
            if i < 1 << 16 {
                (i % 3) as f64
            } else {
                10.0 + (i % 300) as f64
            }
        })
        .collect();
    let many: Vec<f64> = (0..LONG_ROWS).map(|i| i as f64 * 0.25 - 3.0).collect();
    one_table(
        "long",
        [
            ("few", Vector::F64(Arc::new(few))),
            ("late", Vector::F64(Arc::new(late))),
            ("many", Vector::F64(Arc::new(many))),
        ],
    )
}

#[test]
fn long_columns_with_many_distinct_values_early_or_late_go_as_they_are() {
    let Some(device) = common::gpu() else {
        return;
    };
    let db = long_database();
    let source = "module coded {\n  import Builtin.*;\n  def main() : f64 {\n    \
         t0:? = @load_table(`long:sym);\n    \
         few:f64 = check_cast(@column_value(t0, `few:sym), f64);\n    \
         late:f64 = check_cast(@column_value(t0, `late:sym), f64);\n    \
         many:f64 = check_cast(@column_value(t0, `many:sym), f64);\n    \
         a:f64 = @plus(few, late);\n    b:f64 = @mul(a, many);\n    return b;\n  }\n}\n";
    let path = write_program("long", source);
    let uploaded = same_answers_and_uploaded(&path, &db, device);
    // `many` (refused by its first elements) and `late` (refused once converted whole) as
    // they are, 8 bytes a row each; `few` coded, about a byte a row.
    let as_they_are = (LONG_ROWS * 16) as u64;
    assert!(
        uploaded >= as_they_are,
        "{uploaded} B uploaded: `many` or `late` was coded ({as_they_are} B as they are)"
    );
    assert!(
        uploaded < as_they_are + (LONG_ROWS * 4) as u64,
        "{uploaded} B uploaded: `few` was not coded"
    );
}
