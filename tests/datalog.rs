//! The Datalog front end: every error class located and named; the HorseIR generated for
//! the shipped programs (snapshots); and the answers of `queries/datalog/*.dl` on both
//! backends against an independent fixpoint computed here in Rust (set equality of each
//! `.output` relation), plus a program with negation, constraints, several strata and
//! mutual recursion, GPU against CPU. GPU runs need an adapter (lavapipe will do).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use horsec::datalog::{compile, LowerOptions};
use horsec::diag::SourceFile;

mod datalog_support;
use datalog_support::{backends, horsec, horsec_with_env, relations, Tuples};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The rendered diagnostics of compiling `text` as `prog.dl`.
fn errors(text: &str) -> String {
    let (lowered, diags) = compile(text, LowerOptions::default());
    assert!(lowered.is_none(), "expected errors, the program lowered");
    SourceFile::new("prog.dl", text).render_all(&diags)
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

const DECLS: &str = ".decl e(a: number, b: number)\n.decl s(n: symbol)\n";

#[test]
fn each_error_class_is_located_and_named() {
    let cases = [
        ("p(x) :- e(x, _).", "prog.dl:3:1: error: unknown relation `p`"),
        ("e(x, y) :- e(x).", "prog.dl:3:12: error: `e` has 2 attribute(s), found 1 argument(s)"),
        ("e(x, z) :- e(x, y).", "prog.dl:3:6: error: unbound variable `z` in the head"),
        ("e(x, y) :- e(x, y), !e(y, w).", "prog.dl:3:27: error: unbound variable `w` in a negation"),
        ("e(x, y) :- e(x, y), s(x).", "prog.dl:3:23: error: type mismatch: attribute `n` of `s` is a symbol, found variable `x`, a number"),
        ("e(x, y) :- e(x, y), x < \"a\".", "prog.dl:3:25: error: type mismatch: an operand of `<` is a number, found a symbol"),
        ("e(x, y) :- e(x, y), !e(y, x).", "prog.dl:3:21: error: unstratifiable program: `e` depends on the negation of `e`, which depends on `e`"),
        ("e(x, y) :- e(x, y) y.", "prog.dl:3:20: error: expected `,` or `.` to end the clause, found `y`"),
        (".output q", "prog.dl:3:9: error: unknown relation `q`"),
        ("e(x, _) :- e(x, y).", "prog.dl:3:6: error: `_` cannot stand in a head"),
        ("e(1, 2) :- 1 < 2.", "prog.dl:3:1: error: a rule needs at least one positive body atom"),
        ("e(x, y / 2) :- e(x, y).", "prog.dl:3:6: error: division `/` is not supported"),
        (".decl e(a: number)", "prog.dl:3:7: error: relation `e` is declared twice"),
        (".decl f(a: float)", "prog.dl:3:12: error: unknown type `float`; expected `number` or `symbol`"),
        ("e(1, 99999999999999999999).", "prog.dl:3:6: error: number `99999999999999999999` does not fit in 64 bits"),
        (".type t = number", "prog.dl:3:1: error: unsupported directive `.type`"),
        ("e(x, y) :- e(x, y), x = $.", "prog.dl:3:25: error: unexpected character(s) `$`"),
    ];
    for (rule, expected) in cases {
        let text = format!("{DECLS}{rule}\n");
        let rendered = errors(&text);
        assert_eq!(first_line(&rendered), expected, "for `{rule}`:\n{rendered}");
    }
}

#[test]
fn negation_of_a_relation_in_a_cycle_is_reported_at_the_negated_atom() {
    let text = ".decl a(x: number)\n.decl b(x: number)\n.decl c(x: number)\n\
                c(1).\na(x) :- c(x), !b(x).\nb(x) :- a(x).\n";
    let rendered = errors(text);
    assert!(
        rendered.starts_with(
            "prog.dl:5:15: error: unstratifiable program: `a` depends on the negation of `b`"
        ),
        "{rendered}"
    );
}

#[test]
fn generated_horseir_of_the_shipped_programs() {
    for name in ["reach", "sg", "cspa"] {
        let path = root().join(format!("queries/datalog/{name}.dl"));
        let text = std::fs::read_to_string(&path).expect("reads");
        let (lowered, diags) = compile(&text, LowerOptions::default());
        assert!(diags.is_empty(), "{diags:?}");
        let lowered = lowered.expect("lowers");
        insta::assert_snapshot!(format!("datalog_{name}"), lowered.hir);
        // The text stands alone: it parses and type-checks as HorseIR.
        let c = horsec::driver::compile(
            "generated.hir",
            &lowered.hir,
            horsec::driver::Stage::Analyze,
        );
        assert!(!c.failed(), "{}", c.render_diagnostics());
    }
}

/// The `.output` relations of a run, one set of tuples per relation (TSV, header first).
fn run(program: &Path, data: &[String], backend: &str) -> Vec<Tuples> {
    let mut args = vec![
        "run",
        program.to_str().expect("UTF-8"),
        "--format",
        "tsv",
        "--backend",
        backend,
    ];
    for d in data {
        args.push(d);
    }
    let text = horsec(&args);
    relations(&text)
}

fn read_pairs(path: &Path, separator: char, header: bool) -> Vec<(i64, i64)> {
    std::fs::read_to_string(path)
        .expect("reads")
        .lines()
        .skip(usize::from(header))
        .map(|l| {
            let (a, b) = l.split_once(separator).expect("two fields");
            (
                a.trim().parse().expect("number"),
                b.trim().parse().expect("number"),
            )
        })
        .collect()
}

fn pairs(set: &BTreeSet<(i64, i64)>) -> Tuples {
    set.iter().map(|&(a, b)| vec![a, b]).collect()
}

/// Naive fixpoint of the transitive closure.
fn closure(edges: &[(i64, i64)]) -> BTreeSet<(i64, i64)> {
    let mut reach: BTreeSet<(i64, i64)> = edges.iter().copied().collect();
    loop {
        let more: Vec<(i64, i64)> = reach
            .iter()
            .flat_map(|&(x, z)| {
                edges
                    .iter()
                    .filter(move |e| e.0 == z)
                    .map(move |e| (x, e.1))
            })
            .filter(|p| !reach.contains(p))
            .collect();
        if more.is_empty() {
            return reach;
        }
        reach.extend(more);
    }
}

/// Same generation by its definition, to a fixpoint.
fn same_generation(edges: &[(i64, i64)]) -> BTreeSet<(i64, i64)> {
    let mut sg = BTreeSet::new();
    for &(p, x) in edges {
        for &(q, y) in edges {
            if p == q && x != y {
                sg.insert((x, y));
            }
        }
    }
    loop {
        let mut more = Vec::new();
        for &(a, x) in edges {
            for &(b, y) in edges {
                if sg.contains(&(a, b)) && !sg.contains(&(x, y)) {
                    more.push((x, y));
                }
            }
        }
        if more.is_empty() {
            return sg;
        }
        sg.extend(more);
    }
}

fn table(name: &str, path: &Path) -> [String; 2] {
    ["--table".to_string(), format!("{name}={}", path.display())]
}

#[test]
fn reach_is_the_transitive_closure_on_both_backends() {
    let data = root().join("queries/datalog/data/edge.csv");
    let expected = pairs(&closure(&read_pairs(&data, ',', true)));
    for backend in backends() {
        let got = run(
            &root().join("queries/datalog/reach.dl"),
            &table("edge", &data),
            backend,
        );
        assert_eq!(got, vec![expected.clone()], "{backend}");
    }
}

#[test]
fn reach_on_a_random_graph_with_cycles_and_self_loops() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("edge.csv");
    let mut state = 12345u64;
    let mut edges = Vec::new();
    for _ in 0..70 {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let a = (state >> 33) % 40;
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let b = (state >> 33) % 40;
        edges.push((a as i64, b as i64));
    }
    let text: String = std::iter::once("src,dst\n".to_string())
        .chain(edges.iter().map(|(a, b)| format!("{a},{b}\n")))
        .collect();
    std::fs::write(&path, text).expect("writes");
    let expected = pairs(&closure(&edges));
    for backend in backends() {
        let got = run(
            &root().join("queries/datalog/reach.dl"),
            &table("edge", &path),
            backend,
        );
        assert_eq!(got, vec![expected.clone()], "{backend}");
    }
}

#[test]
fn same_generation_on_both_backends() {
    let data = root().join("queries/datalog/data/tree.csv");
    let expected = pairs(&same_generation(&read_pairs(&data, ',', true)));
    assert!(!expected.is_empty());
    for backend in backends() {
        let got = run(
            &root().join("queries/datalog/sg.dl"),
            &table("edge", &data),
            backend,
        );
        assert_eq!(got, vec![expected.clone()], "{backend}");
    }
}

/// CSPA's rules evaluated naively to a fixpoint: (ValueFlow, MemoryAlias, ValueAlias).
fn cspa(assign: &[(i64, i64)], dereference: &[(i64, i64)]) -> [BTreeSet<(i64, i64)>; 3] {
    let (mut vf, mut ma, mut va) = (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
    for &(y, x) in assign {
        vf.insert((y, x));
        vf.insert((y, y));
        vf.insert((x, x));
        ma.insert((x, x));
        ma.insert((y, y));
    }
    loop {
        let before = (vf.len(), ma.len(), va.len());
        let mut new_vf = Vec::new();
        for &(x, z) in assign {
            for &(z2, y) in &ma {
                if z == z2 {
                    new_vf.push((x, y));
                }
            }
        }
        for &(x, z) in &vf {
            for &(z2, y) in &vf {
                if z == z2 {
                    new_vf.push((x, y));
                }
            }
        }
        let mut new_ma = Vec::new();
        for &(y, x) in dereference {
            for &(z, w) in dereference {
                if va.contains(&(y, z)) {
                    new_ma.push((x, w));
                }
            }
        }
        let mut new_va = Vec::new();
        for &(z, x) in &vf {
            for &(z2, y) in &vf {
                if z == z2 {
                    new_va.push((x, y));
                }
            }
            for &(z2, w) in &ma {
                if z == z2 {
                    for &(w2, y) in &vf {
                        if w == w2 {
                            new_va.push((x, y));
                        }
                    }
                }
            }
        }
        vf.extend(new_vf);
        ma.extend(new_ma);
        va.extend(new_va);
        if (vf.len(), ma.len(), va.len()) == before {
            return [vf, ma, va];
        }
    }
}

#[test]
fn cspa_on_both_backends() {
    let dir = root().join("queries/datalog/data/cspa");
    let assign = read_pairs(&dir.join("assign.facts"), '\t', false);
    let dereference = read_pairs(&dir.join("dereference.facts"), '\t', false);
    let expected: Vec<Tuples> = cspa(&assign, &dereference).iter().map(pairs).collect();
    assert!(expected.iter().all(|r| !r.is_empty()));
    let data = ["--data".to_string(), dir.display().to_string()];
    for backend in backends() {
        let got = run(&root().join("queries/datalog/cspa.dl"), &data, backend);
        assert_eq!(got, expected, "{backend}");
    }
}

/// `horsec gen-graph --kind cspa` facts written into `dir`.
fn generated_cspa(dir: &Path, variables: u64, assigns: u64, dereferences: u64, seed: u64) {
    let arg = |n: u64| n.to_string();
    let (v, a, d, s) = (arg(variables), arg(assigns), arg(dereferences), arg(seed));
    horsec(&[
        "gen-graph",
        "--kind",
        "cspa",
        "--vertices",
        &v,
        "--assign",
        &a,
        "--dereference",
        &d,
        "--seed",
        &s,
        "--out",
        dir.to_str().expect("UTF-8"),
    ]);
}

#[test]
fn cspa_on_generated_facts_agrees_on_both_backends_and_under_a_small_binding_limit() {
    let program = root().join("queries/datalog/cspa.dl");
    // Tiny facts: the naive fixpoint here is the oracle of both backends.
    let tiny = tempfile::tempdir().expect("temp dir");
    generated_cspa(tiny.path(), 120, 45, 130, 7);
    let assign = read_pairs(&tiny.path().join("assign.facts"), '\t', false);
    let dereference = read_pairs(&tiny.path().join("dereference.facts"), '\t', false);
    assert_eq!((assign.len(), dereference.len()), (45, 130));
    let expected: Vec<Tuples> = cspa(&assign, &dereference).iter().map(pairs).collect();
    assert!(
        expected.iter().all(|r| r.len() > 120),
        "{:?}",
        expected.iter().map(BTreeSet::len).collect::<Vec<_>>()
    );
    let data = ["--data".to_string(), tiny.path().display().to_string()];
    for backend in backends() {
        assert_eq!(run(&program, &data, backend), expected, "{backend}");
    }
    if !backends().contains(&"gpu") {
        return;
    }
    // Larger facts: the CPU is the oracle. Under a binding limit below the key matrix of
    // the largest relations (16 bytes a row) but above their columns (8 bytes a row), the
    // semi-naive diffs and merges and `@join_unique`'s merge of its batches key them by
    // column groups; small batches make the join merge many of them.
    let dir = tempfile::tempdir().expect("temp dir");
    generated_cspa(dir.path(), 1500, 540, 1650, 11);
    let data = ["--data".to_string(), dir.path().display().to_string()];
    let cpu = run(&program, &data, "cpu");
    let largest = cpu.iter().map(BTreeSet::len).max().unwrap_or(0);
    assert!(largest > 5_000, "{largest} tuples");
    assert_eq!(run(&program, &data, "gpu"), cpu, "gpu");
    let limit = (12 * largest).to_string();
    for batch in ["1000000", "97"] {
        let env = [
            ("HORSEC_BINDING_LIMIT", limit.as_str()),
            ("HORSEC_JOIN_BATCH_ROWS", batch),
        ];
        let mut args = vec!["run", program.to_str().expect("UTF-8"), "--format", "tsv"];
        args.extend(["--backend", "gpu", "--data", &data[1]]);
        let got = relations(&horsec_with_env(&args, &env));
        assert_eq!(got, cpu, "gpu, binding limit {limit}, batches of {batch}");
    }
}

#[test]
fn negation_constraints_strata_and_mutual_recursion_agree_on_both_backends() {
    let dir = root().join("tests/datalog");
    let program = dir.join("negation.dl");
    let mut data = table("edge", &dir.join("edge.csv")).to_vec();
    data.extend(table("label", &dir.join("label.csv")));
    let args = |backend: &str| -> Vec<String> {
        let mut args: Vec<String> = [
            "run",
            program.to_str().expect("UTF-8"),
            "--format",
            "tsv",
            "--backend",
            backend,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.extend(data.iter().cloned());
        args
    };
    let cpu = horsec(&args("cpu").iter().map(String::as_str).collect::<Vec<_>>());
    // Hand-checked: 1 -> 2 -> 3 -> 1 is a cycle, 4 -> 5 apart.
    assert!(cpu.contains("a\tb\n1\t4\n1\t5\n2\t4\n"), "{cpu}");
    assert!(cpu.contains("name\tv\n"), "{cpu}");
    assert!(cpu.contains("extra\t100") && cpu.contains("one\t1") && cpu.contains("five\t5"));
    assert!(!cpu.contains("skip") && !cpu.contains("nine"));
    assert!(
        cpu.contains("a\tb\td\n1\t2\t12\n2\t3\t23\n3\t1\t31\n4\t5\t45\n"),
        "{cpu}"
    );
    assert!(cpu.ends_with("a\tb\n1\t2\n1\t3\n2\t3\n"), "{cpu}");
    if backends().contains(&"gpu") {
        let gpu = horsec(&args("gpu").iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(gpu, cpu);
    }
}

#[test]
fn check_and_compile_accept_datalog_files() {
    let program = root().join("queries/datalog/cspa.dl");
    horsec(&["check", program.to_str().expect("UTF-8")]);
    let hir = horsec(&["compile", program.to_str().expect("UTF-8"), "--emit", "hir"]);
    assert!(
        hir.contains("@tuple_merge(full_ValueFlow, delta_ValueFlow)"),
        "{hir}"
    );
    let plan = horsec(&[
        "compile",
        program.to_str().expect("UTF-8"),
        "--emit",
        "plan",
    ]);
    assert!(
        plan.contains("@join_unique") && plan.contains("<gpu library>"),
        "{plan}"
    );
}
