//! Helpers shared by the Datalog integration tests: running the `horsec` binary and reading
//! the `.output` relations it prints as TSV.
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::process::Command;

/// One relation's tuples, in order.
pub type Tuples = BTreeSet<Vec<i64>>;

/// stdout of a successful `horsec` run with `args`.
pub fn horsec(args: &[&str]) -> String {
    horsec_with_env(args, &[])
}

/// [`horsec`] with environment variables `env` set (tests forcing small limits).
pub fn horsec_with_env(args: &[&str], env: &[(&str, &str)]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_horsec"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("the horsec binary runs");
    assert!(
        output.status.success(),
        "horsec {args:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The relations of `--format tsv` output: a header line opens each relation.
pub fn relations(text: &str) -> Vec<Tuples> {
    let mut relations = Vec::new();
    for line in text.lines() {
        if line.chars().next().is_some_and(|c| c.is_ascii_alphabetic()) {
            relations.push(Tuples::new());
            continue;
        }
        let tuple = line
            .split('\t')
            .map(|f| f.parse::<i64>().expect("a number"))
            .collect();
        relations.last_mut().expect("a header first").insert(tuple);
    }
    relations
}

/// The backends to run on: the GPU too when there is an adapter.
pub fn backends() -> Vec<&'static str> {
    match horsec_runtime::gpu::require_gpu_or_skip() {
        Some(_) => vec!["cpu", "gpu"],
        None => {
            eprintln!("SKIPPED: the GPU backend (no GPU adapter)");
            vec!["cpu"]
        }
    }
}
