//! TPC-H from Parquet: `gen-tpch --format parquet` at SF 0.01, read back with `--data DIR`
//! (the same reader, through the same TPC-H schema step), is the generated database column
//! for column, and all 22 conformance programs give the expected answers from it on both
//! backends.

mod common;

use std::sync::{Arc, OnceLock};

use common::{
    compare_answers, conformance_dir, conformance_program, gpu, run_gpu_tsv, run_tsv, tpch,
    tpch_sort_keys,
};
use horsec_runtime::data::{write_tpch_files, ArrowFileFormat, Database};

/// SF 0.01 written as Parquet and loaded from there, once per test binary.
fn parquet_tpch() -> Arc<Database> {
    static DATABASE: OnceLock<Arc<Database>> = OnceLock::new();
    DATABASE
        .get_or_init(|| {
            let dir = tempfile::tempdir().expect("temporary directory");
            write_tpch_files(0.01, dir.path(), ArrowFileFormat::Parquet, false)
                .expect("writes TPC-H as Parquet");
            Arc::new(Database::from_dir(dir.path(), false, None, None).expect("loads"))
        })
        .clone()
}

fn expected(query: u32) -> Option<String> {
    let path = conformance_dir()?.join(format!("tpch/expected-sf0.01/q{query}.tsv"));
    Some(std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
}

#[test]
fn parquet_tpch_is_the_generated_database() {
    let (loaded, generated) = (parquet_tpch(), tpch(0.01));
    assert_eq!(
        loaded.names().collect::<Vec<_>>(),
        generated.names().collect::<Vec<_>>()
    );
    for name in generated.names() {
        let (a, b) = (loaded.table(name), generated.table(name));
        assert_eq!(a, b, "{name}");
    }
}

#[test]
fn all_22_queries_on_the_cpu_from_parquet() {
    let db = parquet_tpch();
    for query in 1..=22 {
        let (Some(program), Some(expected)) = (conformance_program(query), expected(query)) else {
            return;
        };
        let actual = run_tsv(&program, &db).unwrap_or_else(|e| panic!("q{query}: {e}"));
        if let Err(diff) = compare_answers(&actual, &expected, tpch_sort_keys(query)) {
            panic!("q{query} on the CPU from Parquet: {diff}");
        }
    }
}

#[test]
fn all_22_queries_on_the_gpu_from_parquet() {
    let Some(device) = gpu() else {
        return;
    };
    let db = parquet_tpch();
    for query in 1..=22 {
        let (Some(program), Some(expected)) = (conformance_program(query), expected(query)) else {
            return;
        };
        let (actual, _) =
            run_gpu_tsv(&program, &db, device).unwrap_or_else(|e| panic!("q{query}: {e}"));
        if let Err(diff) = compare_answers(&actual, &expected, tpch_sort_keys(query)) {
            panic!("q{query} on the GPU from Parquet: {diff}");
        }
    }
}
