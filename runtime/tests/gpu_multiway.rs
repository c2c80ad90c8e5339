//! `@multiway_join` on the GPU (breadth-first, `gpu/multiway.rs`) against the CPU Leapfrog
//! Triejoin, and both against brute force, on seeded random graphs: triangles, 4-cliques and
//! 4-cycles, including empty graphs, all-duplicate edges, self-loops and negative ids, and
//! with batches small enough that every round is cut into windows. Needs a GPU adapter
//! (lavapipe will do); HORSEC_REQUIRE_GPU=1 turns a missing one into a failure.

use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};

use horsec_runtime::builtin::Builtin as B;
use horsec_runtime::cpu::multiway::{leapfrog_count, leapfrog_triejoin};
use horsec_runtime::cpu::{call_builtin, ArgValue, Env};
use horsec_runtime::error::{Result, RuntimeError};
use horsec_runtime::gpu::library::run_library;
use horsec_runtime::gpu::multiway::{
    multiway_count_batched, multiway_join_batched, take_stats, Batches,
};
use horsec_runtime::gpu::{require_gpu_or_skip, Device};
use horsec_runtime::multiway::Spec;
use horsec_runtime::plan::Callee;
use horsec_runtime::value::{List, Table, Value, Vector};

fn shared_device() -> Option<&'static Device> {
    static DEVICE: OnceLock<Option<Device>> = OnceLock::new();
    let device = DEVICE.get_or_init(require_gpu_or_skip).as_ref();
    if device.is_none() {
        eprintln!("SKIPPED: no GPU adapter");
    }
    device
}

struct NoEnv;

impl Env for NoEnv {
    fn load_table(&mut self, name: &str) -> Result<Arc<Table>> {
        Err(RuntimeError::new(format!("no table {name}")))
    }
    fn invoke(&mut self, _: Callee, _: &[Value]) -> Result<Vec<Value>> {
        Err(RuntimeError::new("no functions"))
    }
    fn print(&mut self, _: &Value) -> Result<()> {
        Ok(())
    }
}

/// A small xorshift generator, so the data is the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// `edges` random directed edges among `vertices` ids starting at `first` (self-loops and
    /// duplicates included).
    fn graph(&mut self, edges: usize, vertices: u64, first: i64) -> Vec<(i64, i64)> {
        (0..edges)
            .map(|_| {
                let a = (self.next() % vertices) as i64 + first;
                let b = (self.next() % vertices) as i64 + first;
                (a, b)
            })
            .collect()
    }
}

/// The edge relation both ways (an undirected graph), as columns.
fn undirected(edges: &[(i64, i64)]) -> Vec<Vec<i64>> {
    let (mut from, mut to) = (Vec::new(), Vec::new());
    for &(a, b) in edges {
        from.extend([a, b]);
        to.extend([b, a]);
    }
    vec![from, to]
}

fn directed(edges: &[(i64, i64)]) -> Vec<Vec<i64>> {
    vec![
        edges.iter().map(|e| e.0).collect(),
        edges.iter().map(|e| e.1).collect(),
    ]
}

/// The rows of a column-major result.
fn rows(columns: &[Vec<i64>]) -> Vec<Vec<i64>> {
    let n = columns.first().map_or(0, Vec::len);
    (0..n)
        .map(|r| columns.iter().map(|c| c[r]).collect())
        .collect()
}

/// Runs `spec` on the CPU LFTJ and on the GPU with full batches, tiny windows of candidates,
/// and rounds split down to 3 bindings (the path of a scan past 2^32); all must agree, and
/// so must the counts of both backends (`@multiway_count`, no row built).
fn join_on_both(device: &Device, spec: &str, relations: &[Vec<Vec<i64>>]) -> Vec<Vec<i64>> {
    let spec = Spec::parse(spec).expect("spec parses");
    let columns: Vec<Vec<&[i64]>> = relations
        .iter()
        .map(|r| r.iter().map(Vec::as_slice).collect())
        .collect();
    let cpu = leapfrog_triejoin(&spec, &columns);
    for (slots, bindings) in [(1 << 20, usize::MAX), (5, usize::MAX), (1 << 20, 3)] {
        let batches = Batches { slots, bindings };
        let gpu = multiway_join_batched(device, &spec, &columns, batches).expect("GPU join runs");
        assert_eq!(gpu, cpu, "GPU differs from CPU for `{spec}` ({batches:?})");
        let rows = cpu.first().map_or(0, Vec::len) as u64;
        let counted =
            multiway_count_batched(device, &spec, &columns, batches).expect("GPU count runs");
        assert_eq!(counted, rows, "GPU count of `{spec}` ({batches:?})");
    }
    assert_eq!(
        leapfrog_count(&spec, &columns),
        cpu.first().map_or(0, Vec::len) as u64,
        "CPU count of `{spec}`"
    );
    rows(&cpu)
}

fn adjacency(edges: &[(i64, i64)]) -> BTreeSet<(i64, i64)> {
    edges
        .iter()
        .flat_map(|&(a, b)| [(a, b), (b, a)])
        .filter(|(a, b)| a != b)
        .collect()
}

fn brute_force_cliques(edges: &[(i64, i64)], k: usize) -> Vec<Vec<i64>> {
    let adj = adjacency(edges);
    let vertices: BTreeSet<i64> = adj.iter().map(|e| e.0).collect();
    let vertices: Vec<i64> = vertices.into_iter().collect();
    let mut out = Vec::new();
    let mut stack: Vec<i64> = Vec::new();
    fn extend(
        vertices: &[i64],
        adj: &BTreeSet<(i64, i64)>,
        k: usize,
        from: usize,
        stack: &mut Vec<i64>,
        out: &mut Vec<Vec<i64>>,
    ) {
        if stack.len() == k {
            out.push(stack.clone());
            return;
        }
        for (i, &v) in vertices.iter().enumerate().skip(from) {
            if stack.iter().all(|&u| adj.contains(&(u, v))) {
                stack.push(v);
                extend(vertices, adj, k, i + 1, stack, out);
                stack.pop();
            }
        }
    }
    extend(&vertices, &adj, k, 0, &mut stack, &mut out);
    out
}

const TRIANGLES: &str = "x y z; x y; y z; x z; where x < y, y < z";
const CLIQUES4: &str = "a b c d; a b; a c; a d; b c; b d; c d; where a < b, b < c, c < d";

#[test]
fn triangles_match_brute_force_on_random_graphs_with_loops_and_duplicates() {
    let Some(device) = shared_device() else {
        return;
    };
    let mut rng = Rng(0x5eed_1234);
    for (edges, vertices, first) in [(0, 1, 0), (60, 12, 0), (300, 40, -20), (200, 200, 1 << 40)] {
        let graph = rng.graph(edges, vertices, first);
        let e = undirected(&graph);
        let found = join_on_both(device, TRIANGLES, &[e.clone(), e.clone(), e]);
        assert_eq!(found, brute_force_cliques(&graph, 3), "{edges} edges");
    }
}

#[test]
fn all_duplicate_edges_and_self_loops_give_no_triangle() {
    let Some(device) = shared_device() else {
        return;
    };
    let graph = vec![(1, 2); 50]
        .into_iter()
        .chain([(3, 3), (4, 4)])
        .collect::<Vec<_>>();
    let e = undirected(&graph);
    assert!(join_on_both(device, TRIANGLES, &[e.clone(), e.clone(), e]).is_empty());
}

#[test]
fn four_cliques_match_brute_force() {
    let Some(device) = shared_device() else {
        return;
    };
    let mut rng = Rng(0xc11_c0e);
    for (edges, vertices) in [(120, 14), (400, 30)] {
        let graph = rng.graph(edges, vertices, 0);
        let e = undirected(&graph);
        let found = join_on_both(device, CLIQUES4, &vec![e; 6]);
        assert_eq!(found, brute_force_cliques(&graph, 4), "{edges} edges");
    }
}

#[test]
fn directed_four_cycles_with_permuted_atoms_match_brute_force() {
    let Some(device) = shared_device() else {
        return;
    };
    let mut rng = Rng(0x4c7c1e);
    let graph = rng.graph(150, 15, -7);
    let e = directed(&graph);
    // E(a,b), E(b,c), E(c,d), E(d,a), the last given as its transpose (columns a d).
    let transposed = vec![e[1].clone(), e[0].clone()];
    let found = join_on_both(
        device,
        "a b c d; a b; b c; c d; a d; where a != c, b != d",
        &[e.clone(), e.clone(), e, transposed],
    );
    let set: BTreeSet<(i64, i64)> = graph.iter().copied().collect();
    let mut expected = Vec::new();
    let vs: BTreeSet<i64> = graph.iter().flat_map(|&(a, b)| [a, b]).collect();
    for &a in &vs {
        for &b in &vs {
            for &c in &vs {
                for &d in &vs {
                    if a != c
                        && b != d
                        && set.contains(&(a, b))
                        && set.contains(&(b, c))
                        && set.contains(&(c, d))
                        && set.contains(&(d, a))
                    {
                        expected.push(vec![a, b, c, d]);
                    }
                }
            }
        }
    }
    assert_eq!(found, expected);
}

#[test]
fn the_builtin_gives_the_same_value_and_errors_on_both_backends() {
    let Some(device) = shared_device() else {
        return;
    };
    let relation = |columns: Vec<Vec<i64>>| {
        let mut offsets = vec![0];
        let mut values = Vec::new();
        for c in columns {
            values.extend(c);
            offsets.push(values.len());
        }
        Value::List(List::Flat {
            values: Vector::I64(Arc::new(values)),
            offsets: Arc::new(offsets),
        })
    };
    let e = relation(undirected(&[(1, 2), (2, 3), (1, 3), (3, 4)]));
    for builtin in [B::MultiwayJoin, B::MultiwayCount] {
        for spec in [TRIANGLES, "x y z; x y; y z; x q", "x y; x y"] {
            let args = [Value::symbol(spec), e.clone(), e.clone(), e.clone()];
            let refs: Vec<ArgValue<'_>> = args.iter().map(ArgValue::Value).collect();
            let cpu = call_builtin(builtin, &refs, &mut NoEnv);
            let gpu = run_library(device, builtin, &refs);
            match (cpu, gpu) {
                (Ok(c), Ok(g)) => assert_eq!(c, g),
                (Err(c), Err(g)) => assert_eq!(c.message, g.message),
                (c, g) => panic!("`{spec}`: CPU {c:?} but GPU {g:?}"),
            }
        }
    }
    let args = [Value::symbol(TRIANGLES), e.clone(), e.clone(), e];
    let refs: Vec<ArgValue<'_>> = args.iter().map(ArgValue::Value).collect();
    let count = run_library(device, B::MultiwayCount, &refs).expect("counts");
    assert_eq!(count, Value::from_i64s(vec![1]));
}

#[test]
fn a_trie_is_built_once_per_relation_and_column_order_while_the_relation_lives() {
    let Some(device) = shared_device() else {
        return;
    };
    // One cell per column, as the interpreter keeps a relation's columns.
    let host = |columns: Vec<Vec<i64>>| {
        Value::List(List::Mixed(Arc::new(
            columns
                .into_iter()
                .map(|c| Value::Vector(Vector::I64(Arc::new(c))))
                .collect(),
        )))
    };
    let graph = [(1, 2), (2, 3), (1, 3), (3, 4), (2, 4), (1, 4)];
    // A relation on the device, as the relation kernels leave it.
    let edges = host(undirected(&graph));
    let device_edges =
        run_library(device, B::TupleUnique, &[ArgValue::Value(&edges)]).expect("uploads and sorts");
    assert!(device_edges.on_device());
    take_stats();
    let count = |e: &Value, spec: &str| {
        let args = [Value::symbol(spec), e.clone(), e.clone(), e.clone()];
        let refs: Vec<ArgValue<'_>> = args.iter().map(ArgValue::Value).collect();
        run_library(device, B::MultiwayCount, &refs).expect("counts")
    };
    assert_eq!(count(&device_edges, TRIANGLES), Value::from_i64s(vec![4]));
    let first = take_stats();
    assert_eq!((first.tries_built, first.tries_reused), (1, 2), "{first:?}");
    assert_eq!(count(&device_edges, TRIANGLES), Value::from_i64s(vec![4]));
    let second = take_stats();
    assert_eq!(
        (second.tries_built, second.tries_reused),
        (0, 3),
        "{second:?}"
    );
    // Another column order of the same relation is another trie (`z x` reads it as (x, z)).
    let permuted = "x y z; x y; y z; z x; where x < y, y < z";
    assert_eq!(count(&device_edges, permuted), Value::from_i64s(vec![4]));
    let third = take_stats();
    assert_eq!((third.tries_built, third.tries_reused), (1, 2), "{third:?}");
    // A host relation given thrice is uploaded and indexed once.
    assert_eq!(count(&edges, TRIANGLES), Value::from_i64s(vec![4]));
    let hosted = take_stats();
    assert_eq!(
        (hosted.tries_built, hosted.tries_reused),
        (1, 2),
        "{hosted:?}"
    );
    assert!(hosted.rounds >= 3 && hosted.host_waits > 0, "{hosted:?}");
}
