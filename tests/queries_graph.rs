//! The graph queries of `queries/graph/` run through the `horsec` binary on the CSV tables
//! of `queries/graph/data/`, with their answers checked (worked out by hand on the small
//! `knows` graph drawn in `queries/graph/README.md`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn table(name: &str, file: &str) -> String {
    format!(
        "{name}={}",
        root().join("queries/graph/data").join(file).display()
    )
}

fn horsec(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_horsec"))
        .args(args)
        .output()
        .expect("the horsec binary runs")
}

/// Runs `queries/graph/<query>.hir` with the graph tables; returns its TSV rows.
fn run_query(query: &str) -> Vec<String> {
    run_query_on(query, &[])
}

/// [`run_query`] with extra arguments (`--backend cpu`).
fn run_query_on(query: &str, extra: &[&str]) -> Vec<String> {
    let program = root().join("queries/graph").join(format!("{query}.hir"));
    let mut args = vec!["run"];
    args.extend_from_slice(extra);
    let output = horsec(
        &[
            args.as_slice(),
            &[
                path(&program),
                "--table",
                &table("person", "person.csv"),
                "--table",
                &table("knows", "knows.csv"),
                "--table",
                &table("pairs", "pairs.csv"),
                "--format",
                "tsv",
            ],
        ]
        .concat(),
    );
    assert!(
        output.status.success(),
        "{query} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

fn path(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

#[test]
fn shortest_paths_between_pairs() {
    assert_eq!(
        run_query("shortest_paths"),
        [
            "source\tdestination\thops",
            "101\t107\t5",
            "101\t105\t3",
            "101\t101\t0",
            "104\t101\t4",
            "106\t102\t3",
            "101\t108\t-1",
            "108\t109\t1",
            "110\t107\t6",
            "109\t110\t-1",
            "103\t102\t6",
        ]
    );
}

#[test]
fn reachability_between_pairs() {
    let rows = run_query("reachable");
    assert_eq!(rows[0], "source\tdestination\treachable");
    let reached: Vec<&str> = rows[1..]
        .iter()
        .map(|row| row.rsplit('\t').next().unwrap_or(""))
        .collect();
    assert_eq!(reached, ["1", "1", "1", "1", "1", "0", "1", "1", "0", "1"]);
}

#[test]
fn reachability_through_an_index_equals_reachability_on_both_backends() {
    let plain = run_query("reachable");
    assert_eq!(run_query("reachable_index"), plain);
    assert_eq!(
        run_query_on("reachable_index", &["--backend", "cpu"]),
        plain
    );
}

#[test]
fn path_lengths_joined_back_to_the_person_table() {
    assert_eq!(
        run_query("distances_by_city"),
        [
            "name\tcity\thops",
            "bob\tMontreal\t1",
            "carol\tToronto\t1",
            "dave\tToronto\t2",
            "erin\tVancouver\t3",
            "frank\tVancouver\t4",
            "grace\tHalifax\t5",
        ]
    );
}

#[test]
fn an_edge_to_an_unknown_person_is_an_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let knows = dir.path().join("knows.csv");
    std::fs::write(&knows, "src,dst\n101,102\n102,999\n").expect("write");
    let program = root().join("queries/graph/shortest_paths.hir");
    let output = horsec(&[
        "run",
        path(&program),
        "--table",
        &table("person", "person.csv"),
        "--table",
        &format!("knows={}", path(&knows)),
        "--table",
        &table("pairs", "pairs.csv"),
    ]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("@csr: edge 1 has destination 10, outside the vertices 0..10"),
        "{stderr}"
    );
}

#[test]
fn table_arguments_need_a_name_and_a_path() {
    let program = root().join("queries/graph/shortest_paths.hir");
    let output = horsec(&["run", path(&program), "--table", "person.csv"]);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("expected NAME=PATH"));
    let output = horsec(&["run", path(&program), "--table", "person=/no/such/file.csv"]);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("loading table `person`"));
}

#[test]
fn csv_column_types_are_inferred() {
    // `@meta` of person: i64 ids, sym names, date births, f64 scores.
    let dir = tempfile::tempdir().expect("temp dir");
    let program = dir.path().join("meta.hir");
    std::fs::write(
        &program,
        "module m {\n  import Builtin.*;\n  def main() : table {\n    person:table = @load_table(`person:sym);\n    born:date = check_cast(@column_value(person, `born:sym), date);\n    score:f64 = check_cast(@column_value(person, `score:sym), f64);\n    id:i64 = check_cast(@column_value(person, `id:sym), i64);\n    names:sym = (`id, `born, `score):sym;\n    columns:? = @list(id, born, score);\n    t:table = @table(names, columns);\n    return t;\n  }\n}\n",
    )
    .expect("write");
    let output = horsec(&[
        "run",
        path(&program),
        "--table",
        &table("person", "person.csv"),
        "--format",
        "tsv",
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("109\t1980-02-29\t1"), "{stdout}");
}
