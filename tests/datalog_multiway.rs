//! Worst-case-optimal joins in the Datalog front end: cyclic rules lower to
//! `@multiway_join` (the plan says so, with the variable order), and triangles, 4-cliques,
//! their counts and directed 4-cycles equal an independent computation on both backends, on
//! random graphs with self-loops and duplicate edges; 4-cycles equal the binary-join plan.
//! Also the aggregates `count`, `sum`, `min`, `max` and their errors. GPU runs need an
//! adapter (lavapipe will do).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use horsec::datalog::{compile, LowerOptions};
use horsec::diag::SourceFile;

mod datalog_support;
use datalog_support::{backends, horsec, horsec_with_env, relations, Tuples};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The `.output` relations of a run of `program` on `edge=edges`, one set per relation.
fn run(program: &Path, edges: &Path, backend: &str) -> Vec<Tuples> {
    run_with_env(program, edges, backend, &[])
}

/// [`run`] with environment variables `env` set.
fn run_with_env(program: &Path, edges: &Path, backend: &str, env: &[(&str, &str)]) -> Vec<Tuples> {
    let table = format!("edge={}", edges.display());
    let text = horsec_with_env(
        &[
            "run",
            program.to_str().expect("UTF-8"),
            "--format",
            "tsv",
            "--backend",
            backend,
            "--table",
            &table,
        ],
        env,
    );
    relations(&text)
}

/// `count` random directed edges among `vertices` vertices (loops and repeats included),
/// written as `src,dst` CSV.
fn random_graph(dir: &Path, seed: u64, count: usize, vertices: u64) -> (PathBuf, Vec<(i64, i64)>) {
    let mut state = seed;
    let mut next = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 33) % vertices) as i64
    };
    let edges: Vec<(i64, i64)> = (0..count).map(|_| (next(), next())).collect();
    let path = dir.join(format!("edge_{seed}.csv"));
    let text: String = std::iter::once("src,dst\n".to_string())
        .chain(edges.iter().map(|(a, b)| format!("{a},{b}\n")))
        .collect();
    std::fs::write(&path, text).expect("writes");
    (path, edges)
}

/// The cliques of `k` vertices of the undirected graph of `edges` (loops ignored), each as
/// its increasing vertex list.
fn cliques(edges: &[(i64, i64)], k: usize) -> Tuples {
    let adjacent: BTreeSet<(i64, i64)> = edges
        .iter()
        .flat_map(|&(a, b)| [(a, b), (b, a)])
        .filter(|(a, b)| a != b)
        .collect();
    let vertices: Vec<i64> = adjacent
        .iter()
        .map(|e| e.0)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut found = Tuples::new();
    let mut stack = Vec::new();
    fn grow(
        vertices: &[i64],
        adjacent: &BTreeSet<(i64, i64)>,
        k: usize,
        from: usize,
        stack: &mut Vec<i64>,
        found: &mut Tuples,
    ) {
        if stack.len() == k {
            found.insert(stack.clone());
            return;
        }
        for (i, &v) in vertices.iter().enumerate().skip(from) {
            if stack.iter().all(|&u| adjacent.contains(&(u, v))) {
                stack.push(v);
                grow(vertices, adjacent, k, i + 1, stack, found);
                stack.pop();
            }
        }
    }
    grow(&vertices, &adjacent, k, 0, &mut stack, &mut found);
    found
}

fn program(name: &str) -> PathBuf {
    root().join(format!("queries/datalog/{name}.dl"))
}

fn count(n: usize) -> Tuples {
    [vec![n as i64]].into_iter().collect()
}

#[test]
fn triangles_and_four_cliques_equal_brute_force_on_both_backends() {
    let dir = tempfile::tempdir().expect("temp dir");
    let shipped = root().join("queries/datalog/data/graph.csv");
    let shipped_edges: Vec<(i64, i64)> = std::fs::read_to_string(&shipped)
        .expect("reads")
        .lines()
        .skip(1)
        .map(|l| {
            let (a, b) = l.split_once(',').expect("two fields");
            (a.parse().expect("number"), b.parse().expect("number"))
        })
        .collect();
    let mut graphs = vec![(shipped, shipped_edges)];
    graphs.push(random_graph(dir.path(), 7, 160, 24));
    graphs.push(random_graph(dir.path(), 8, 0, 1));
    for (path, edges) in &graphs {
        let (triangles, four) = (cliques(edges, 3), cliques(edges, 4));
        for backend in backends() {
            let what = format!("{} on {backend}", path.display());
            assert_eq!(
                run(&program("triangles"), path, backend),
                std::slice::from_ref(&triangles),
                "{what}"
            );
            assert_eq!(
                run(&program("cliques4"), path, backend),
                std::slice::from_ref(&four),
                "{what}"
            );
            let n = run(&program("triangles_count"), path, backend);
            assert_eq!(n, [count(triangles.len())], "{what}");
            let n = run(&program("cliques4_count"), path, backend);
            assert_eq!(n, [count(four.len())], "{what}");
        }
    }
    assert!(
        cliques(&graphs[1].1, 4).len() > 1,
        "the random graph has 4-cliques"
    );
}

#[test]
fn triangles_and_cliques_at_a_binding_limit_below_the_keys_of_link() {
    // The shape of 10^8 edges on a GPU with 2 GiB bindings, scaled down: `link`'s columns
    // fit one binding, its key matrix (twice their size) does not, so its `@tuple_unique`
    // sorts one column at a time; the trie and the join's batches fit the limit too.
    if !backends().contains(&"gpu") {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let (path, edges) = random_graph(dir.path(), 9, 220, 26);
    let (triangles, four) = (cliques(&edges, 3), cliques(&edges, 4));
    assert!(four.len() > 1, "the random graph has 4-cliques");
    let link: BTreeSet<(i64, i64)> = edges
        .iter()
        .filter(|(a, b)| a != b)
        .flat_map(|&(a, b)| [(a, b), (b, a)])
        .collect();
    // Bytes: a column of i64 is 8 per row, the key matrix of two columns 16.
    let limit = (12 * link.len()).to_string();
    let env = [("HORSEC_BINDING_LIMIT", limit.as_str())];
    let got = |name: &str| run_with_env(&program(name), &path, "gpu", &env);
    assert_eq!(got("triangles"), std::slice::from_ref(&triangles));
    assert_eq!(got("triangles_count"), [count(triangles.len())]);
    assert_eq!(got("cliques4"), std::slice::from_ref(&four));
    assert_eq!(got("cliques4_count"), [count(four.len())]);
}

#[test]
fn directed_four_cycles_by_multiway_join_equal_binary_joins_and_brute_force() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (path, edges) = random_graph(dir.path(), 11, 90, 14);
    let set: BTreeSet<(i64, i64)> = edges.iter().copied().collect();
    let mut expected = Tuples::new();
    for &(a, b) in &set {
        for &(b2, c) in &set {
            for &(c2, d) in &set {
                if b == b2 && c == c2 && a != c && b != d && set.contains(&(d, a)) {
                    expected.insert(vec![a, b, c, d]);
                }
            }
        }
    }
    assert!(!expected.is_empty());
    let cycles = root().join("tests/datalog/cycles4.dl");
    for backend in backends() {
        let got = run(&cycles, &path, backend);
        assert_eq!(got, [expected.clone(), expected.clone()], "{backend}");
    }
}

#[test]
fn the_plan_shows_which_rules_run_as_a_multiway_join_and_in_what_order() {
    let cycles = root().join("tests/datalog/cycles4.dl");
    let plan = horsec(&["compile", cycles.to_str().expect("UTF-8"), "--emit", "plan"]);
    let rules: Vec<&str> = plan.lines().take_while(|l| l.starts_with("//")).collect();
    assert_eq!(
        rules,
        [
            "// datalog rules",
            "//   rule cycle(a, b, c, d): multiway join, variable order a b c d, where a != c, b != d",
            "//   rule path3(a, b, c, d): binary joins",
            "//   rule chained(a, b, c, d): binary joins",
        ]
    );
    assert!(
        plan.contains("@multiway_join(") && plan.contains("<gpu library>"),
        "{plan}"
    );
}

#[test]
fn generated_horseir_of_the_multiway_programs() {
    for name in ["triangles", "cliques4_count"] {
        let text = std::fs::read_to_string(program(name)).expect("reads");
        let (lowered, diags) = compile(&text, LowerOptions::default());
        assert!(diags.is_empty(), "{diags:?}");
        let lowered = lowered.expect("lowers");
        insta::assert_snapshot!(format!("datalog_{name}"), lowered.hir);
        let c = horsec::driver::compile(
            "generated.hir",
            &lowered.hir,
            horsec::driver::Stage::Analyze,
        );
        assert!(!c.failed(), "{}", c.render_diagnostics());
    }
}

#[test]
fn a_relation_only_counted_is_counted_by_its_join_and_never_built() {
    let text = std::fs::read_to_string(program("triangles_count")).expect("reads");
    let lower = |text: &str| {
        let (lowered, diags) = compile(text, LowerOptions::default());
        assert!(diags.is_empty(), "{diags:?}");
        lowered.expect("lowers")
    };
    let counted = lower(&text);
    assert!(
        counted
            .hir
            .contains("count_triangle:i64 = @multiway_count(")
            && !counted.hir.contains("@multiway_join(")
            && !counted.hir.contains("full_triangle:"),
        "{}",
        counted.hir
    );
    assert!(
        counted.rule_plans.contains(
            &"rule triangle(x, y, z): multiway count (its tuples only counted), variable order x y z, where x < y, y < z"
                .to_string()
        ),
        "{:?}",
        counted.rule_plans
    );
    // Needed as tuples too (an output, another reader, another aggregate, a filtering
    // aggregate atom): built by the join, then counted.
    for changed in [
        text.replace(".output triangles", ".output triangles\n.output triangle"),
        text.replace(
            "n = count : { triangle(_, _, _) }",
            "n = count : { triangle(1, _, _) }",
        ),
        text.replace(
            "n = count : { triangle(_, _, _) }",
            "n = sum x : { triangle(x, _, _) }",
        ),
        text.replace("link(x, z), x < y", "link(x, z), x != 3, x < y"),
        format!("{text}\n.decl t2(x: number)\nt2(x) :- triangle(x, _, _).\n"),
    ] {
        let built = lower(&changed);
        assert!(
            built.hir.contains("@multiway_join(") && !built.hir.contains("@multiway_count("),
            "{changed}\n{}",
            built.hir
        );
    }
}

#[test]
fn aggregates_count_sum_min_and_max_on_both_backends() {
    let data = root().join("queries/datalog/data/graph.csv");
    let program = root().join("tests/datalog/aggregates.dl");
    // graph.csv: dst 5 twice, the sources sum to 65, destinations from 1, (5, 6) the only
    // edge into 6; no loop above 100.
    let expected = vec![
        [vec![2, 65]].into_iter().collect::<Tuples>(),
        [vec![1, 5]].into_iter().collect(),
        Tuples::new(),
    ];
    for backend in backends() {
        assert_eq!(run(&program, &data, backend), expected, "{backend}");
    }
}

#[test]
fn aggregate_errors_are_located_and_named() {
    let decls = ".decl e(a: number, b: number)\n.decl n(c: number)\n";
    let cases = [
        (
            "n(c) :- e(x, _), c = count : { e(x, _) }.",
            "prog.dl:3:34: error: variable `x` of an aggregate's body is also used outside it",
        ),
        (
            "n(c) :- c = sum y : { e(x, _) }.",
            "prog.dl:3:17: error: the aggregated variable `y` does not appear in the body of `sum`",
        ),
        (
            "n(c) :- c = count : { e(x, _), e(_, x) }.",
            "prog.dl:3:30: error: an aggregate's body is one atom in horsec",
        ),
        (
            "n(c) :- c = count : { n(_) }.",
            "prog.dl:3:23: error: unstratifiable program: `n` depends on an aggregate of `n`, which depends on `n`",
        ),
    ];
    for (rule, expected) in cases {
        let text = format!("{decls}{rule}\n");
        let (lowered, diags) = compile(&text, LowerOptions::default());
        assert!(lowered.is_none(), "`{rule}` lowered");
        let rendered = SourceFile::new("prog.dl", &text).render_all(&diags);
        assert_eq!(
            rendered.lines().next().unwrap_or(""),
            expected,
            "{rendered}"
        );
    }
}
