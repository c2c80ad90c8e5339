//! Relations stay on the GPU across the iterations of a semi-naive loop: what the host reads
//! back per iteration is a few words (the "any delta non-empty" flag, the sizes it must know
//! to allocate, the precondition checks), never a relation. Checked by the read-backs that
//! `horsec run --time` reports per step.

mod datalog_support;

use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A graph whose closure is large but reached in few iterations: `fan` sources point at the
/// head of a chain of `chain` edges, whose tail points at `fan` sinks.
fn write_fan_chain(path: &std::path::Path, fan: i64, chain: i64) {
    let mut text = String::from("src,dst\n");
    for s in 0..fan {
        text.push_str(&format!("{},0\n", 1000 + s));
    }
    for v in 0..chain {
        text.push_str(&format!("{v},{}\n", v + 1));
    }
    for t in 0..fan {
        text.push_str(&format!("{chain},{}\n", 5000 + t));
    }
    std::fs::write(path, text).expect("writes the graph");
}

/// The bytes read back, by step, from `--time`'s two read-back lines.
fn read_backs(stderr: &str) -> Vec<(String, u64)> {
    let mut steps = Vec::new();
    for line in stderr.lines() {
        let line = line.trim();
        let Some(list) = line
            .strip_prefix("read back for host steps: ")
            .or_else(|| line.strip_prefix("read back inside GPU steps: "))
        else {
            continue;
        };
        for entry in list.split(", ") {
            // `@tuple_diff ×18 216 B`
            let words: Vec<&str> = entry.split_whitespace().collect();
            assert!(
                words.len() >= 3 && words[words.len() - 1] == "B",
                "a read-back entry: {entry}"
            );
            let bytes = words[words.len() - 2].parse().expect("a byte count");
            steps.push((words[0].to_string(), bytes));
        }
    }
    steps
}

/// (bytes read back by every step but the output's `@table`, result rows) of REACH on the
/// fan-chain graph.
fn loop_read_back(fan: i64) -> (u64, usize) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let graph = dir.path().join("edge.csv");
    write_fan_chain(&graph, fan, 6);
    let output = Command::new(env!("CARGO_BIN_EXE_horsec"))
        .args(["run", "--backend", "gpu", "--time", "--format", "tsv"])
        .arg(root().join("queries/datalog/reach.dl"))
        .arg("--table")
        .arg(format!("edge={}", graph.display()))
        .output()
        .expect("horsec runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "horsec failed:\n{stderr}");
    let rows = String::from_utf8_lossy(&output.stdout).lines().count() - 1;
    let steps = read_backs(&stderr);
    assert!(
        steps.iter().any(|(step, _)| step == "@table"),
        "the output is read back:\n{stderr}"
    );
    let in_loop = steps
        .iter()
        .filter(|(step, _)| step != "@table")
        .map(|(_, bytes)| bytes)
        .sum();
    (in_loop, rows)
}

#[test]
fn the_semi_naive_loop_reads_back_words_per_iteration_not_relations() {
    if datalog_support::backends() == ["cpu"] {
        return;
    }
    let (small, small_rows) = loop_read_back(20);
    let (large, large_rows) = loop_read_back(200);
    // Same iterations, a closure 10x larger (the fan squared): the loop reads back as much.
    assert!(
        large_rows > 8 * small_rows,
        "{small_rows} vs {large_rows} rows"
    );
    assert!(
        large <= small + 64,
        "read-backs grow with the relations: {small} B for {small_rows} rows, \
         {large} B for {large_rows} rows"
    );
    // About ten iterations of a few words per builtin call.
    assert!(large < 4096, "{large} B read back in the loop");
    assert!(large < large_rows as u64, "{large} B vs {large_rows} rows");
}
