//! The reachability index (`@reach_index`) on both backends: `@reachable` through an index
//! built on the GPU, and through one built on the CPU, equals plain BFS (CPU MS-BFS) on random
//! graphs with cycles, DAGs, citation-like DAGs, clustered graphs with large components, and
//! the corner cases, for every label count d from 1 to 8. Skips loudly without a GPU adapter
//! (`HORSEC_REQUIRE_GPU=1` fails instead).

use horsec_runtime::gpu::{require_gpu_or_skip, Device};
use horsec_runtime::graph::gpu::GpuOptions;
use horsec_runtime::graph::grail::{ReachIndex, MAX_LABELS};
use horsec_runtime::graph::grail_gpu::{hub_components, GpuReachIndex, GrailKernels, DEFAULT_HUBS};
use horsec_runtime::graph::{msbfs, reach_generate, Csr};
use rand::rngs::ChaCha8Rng;
use rand::{Rng, SeedableRng};

fn graph(n: usize, edges: &[(i64, i64)]) -> Csr {
    let (src, dst): (Vec<i64>, Vec<i64>) = edges.iter().copied().unzip();
    Csr::from_edges(&src, &dst, n).expect("valid edges")
}

fn random_graph(rng: &mut ChaCha8Rng, n: usize, m: usize) -> Csr {
    let (src, dst): (Vec<i64>, Vec<i64>) = (0..m)
        .map(|_| {
            (
                (rng.next_u64() % n as u64) as i64,
                (rng.next_u64() % n as u64) as i64,
            )
        })
        .unzip();
    Csr::from_edges(&src, &dst, n).expect("valid edges")
}

fn random_pairs(rng: &mut ChaCha8Rng, n: usize, count: usize) -> (Vec<i64>, Vec<i64>) {
    if n == 0 {
        return (Vec::new(), Vec::new());
    }
    (0..count)
        .map(|_| {
            (
                (rng.next_u64() % n as u64) as i64,
                (rng.next_u64() % n as u64) as i64,
            )
        })
        .unzip()
}

/// Every (source, destination) pair of a small graph.
fn all_pairs(n: usize) -> (Vec<i64>, Vec<i64>) {
    (0..n * n).map(|i| ((i / n) as i64, (i % n) as i64)).unzip()
}

/// Checks that an index's labels contain those of every DAG successor (the property that
/// makes label answers exact).
fn labels_are_sound(index: &ReachIndex) {
    let dag = index.dag();
    for x in 0..index.component_count() {
        for &y in dag.neighbours(x).unwrap_or_default() {
            assert!(
                index.labels_contain(x, y as usize),
                "labels of component {x} do not contain those of its successor {y}"
            );
        }
    }
}

/// Builds the index with `labels` on both backends and checks `@reachable` through each
/// (on both backends, and across them) against MS-BFS on the graph.
fn agree(
    device: &Device,
    kernels: &GrailKernels,
    graph: &Csr,
    labels: usize,
    sources: &[i64],
    destinations: &[i64],
) {
    let expected = msbfs::reachable(graph, sources, destinations).expect("bfs");
    let cpu_index = ReachIndex::build(graph, labels).expect("cpu build");
    labels_are_sound(&cpu_index);
    assert_eq!(
        cpu_index
            .reachable(sources, destinations)
            .expect("cpu query"),
        expected,
        "CPU index, d = {labels}"
    );
    let gpu_index = GpuReachIndex::build(device, kernels, graph, labels).expect("gpu build");
    let (gpu, stats) = gpu_index
        .reachable(sources, destinations, GpuOptions::default())
        .expect("gpu query");
    assert_eq!(gpu, expected, "GPU index, d = {labels}, {stats:?}");
    // Labels alone (every open pair searched), and a few hubs (some settled by hubs, some
    // searched), after the default (as many hubs as components on small graphs: every pair
    // settled without a search): each rebuilds the cached hub sets.
    for hubs in [0, 3, DEFAULT_HUBS] {
        let (gpu, stats) = gpu_index
            .reachable_with_hubs(sources, destinations, GpuOptions::default(), hubs)
            .expect("gpu query");
        assert_eq!(
            gpu, expected,
            "GPU index, d = {labels}, {hubs} hubs, {stats:?}"
        );
        assert!(stats.hubs <= hubs.min(gpu_index.component_count()));
        if hubs == 0 {
            assert_eq!(stats.settled_by_hubs, 0);
        }
        if stats.hubs == gpu_index.component_count() {
            assert_eq!(stats.search.batches, 0, "every hub: no search, {stats:?}");
        }
    }
    let downloaded = gpu_index.download().expect("download");
    assert_eq!(downloaded.component_count(), cpu_index.component_count());
    labels_are_sound(&downloaded);
    assert_eq!(
        downloaded.reachable(sources, destinations).expect("query"),
        expected,
        "GPU-built index queried on the CPU, d = {labels}"
    );
    let uploaded = GpuReachIndex::upload(device, &cpu_index).expect("upload");
    let (answers, _) = uploaded
        .reachable(sources, destinations, GpuOptions::default())
        .expect("query");
    assert_eq!(
        answers, expected,
        "CPU-built index queried on the GPU, d = {labels}"
    );
}

fn setup() -> Option<(Device, GrailKernels)> {
    let device = require_gpu_or_skip()?;
    let kernels = GrailKernels::new(&device).expect("kernels");
    Some((device, kernels))
}

#[test]
fn small_graphs_with_cycles_for_every_label_count() {
    let Some((device, kernels)) = setup() else {
        return;
    };
    // Two cycles joined by a path, a self-loop, a repeated edge and an isolated vertex.
    let g = graph(
        9,
        &[
            (0, 1),
            (1, 2),
            (2, 0),
            (2, 3),
            (3, 4),
            (4, 5),
            (5, 4),
            (5, 6),
            (6, 6),
            (3, 4),
            (7, 3),
        ],
    );
    let (s, t) = all_pairs(9);
    for d in 1..=MAX_LABELS {
        agree(&device, &kernels, &g, d, &s, &t);
    }
}

#[test]
fn random_graphs_and_dags_for_every_label_count() {
    let Some((device, kernels)) = setup() else {
        return;
    };
    let mut rng = ChaCha8Rng::seed_from_u64(14);
    for d in 1..=MAX_LABELS {
        let n = 60 + 17 * d;
        // Sparse (many small components and a DAG-like rest) and denser (a giant component).
        for m in [n, 2 * n] {
            let g = random_graph(&mut rng, n, m);
            let (s, t) = random_pairs(&mut rng, n, 600);
            agree(&device, &kernels, &g, d, &s, &t);
        }
        let (src, dst) = reach_generate::random_dag(n, 3, d as u64).expect("dag");
        let dag = Csr::from_edges(&src, &dst, n).expect("dag");
        let (s, t) = all_pairs(n);
        agree(&device, &kernels, &dag, d, &s, &t);
    }
}

#[test]
fn empty_single_vertex_and_single_component_graphs() {
    let Some((device, kernels)) = setup() else {
        return;
    };
    for d in [1, 3, 8] {
        agree(&device, &kernels, &Csr::empty(0), d, &[], &[]);
        agree(&device, &kernels, &Csr::empty(1), d, &[0], &[0]);
        agree(&device, &kernels, &graph(1, &[(0, 0)]), d, &[0], &[0]);
        agree(
            &device,
            &kernels,
            &Csr::empty(5),
            d,
            &all_pairs(5).0,
            &all_pairs(5).1,
        );
        // One cycle through every vertex, with chords: one component.
        let n = 50;
        let mut edges: Vec<(i64, i64)> = (0..n).map(|v| (v, (v + 1) % n)).collect();
        edges.extend([(0, 25), (30, 3), (7, 7)]);
        let (s, t) = all_pairs(n as usize);
        agree(&device, &kernels, &graph(n as usize, &edges), d, &s, &t);
    }
}

#[test]
fn generated_citation_and_clustered_graphs() {
    let Some((device, kernels)) = setup() else {
        return;
    };
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let n = 3000;
    let (src, dst) = reach_generate::citation_dag(n, 6, 1).expect("citations");
    let citations = Csr::from_edges(&src, &dst, n).expect("citations");
    let (src, dst) = reach_generate::clustered_graph(n, 3, 12, 2).expect("clusters");
    let clustered = Csr::from_edges(&src, &dst, n).expect("clusters");
    for g in [&citations, &clustered] {
        let (s, t) = random_pairs(&mut rng, n, 2000);
        agree(&device, &kernels, g, 3, &s, &t);
    }
}

#[test]
fn graphs_of_a_hundred_thousand_vertices() {
    let Some((device, kernels)) = setup() else {
        return;
    };
    let mut rng = ChaCha8Rng::seed_from_u64(100_000);
    let n = 100_000;
    let (src, dst) = reach_generate::random_dag(n, 2, 9).expect("dag");
    let dag = Csr::from_edges(&src, &dst, n).expect("dag");
    let cyclic = random_graph(&mut rng, n, 150_000);
    for g in [&dag, &cyclic] {
        let (s, t) = random_pairs(&mut rng, n, 300);
        agree(&device, &kernels, g, 2, &s, &t);
    }
}

#[test]
fn out_of_range_pairs_and_bad_label_counts_are_errors() {
    let Some((device, kernels)) = setup() else {
        return;
    };
    let g = graph(3, &[(0, 1)]);
    let index = GpuReachIndex::build(&device, &kernels, &g, 2).expect("build");
    let err = index
        .reachable(&[0, 3], &[1, 1], GpuOptions::default())
        .unwrap_err();
    assert_eq!(
        err.message,
        "@reachable: pair 1 has source 3, outside the vertices 0..3"
    );
    assert!(index.reachable(&[0], &[], GpuOptions::default()).is_err());
    assert!(GpuReachIndex::build(&device, &kernels, &g, 9).is_err());
    assert!(GpuReachIndex::build(&device, &kernels, &g, 0).is_err());
}

#[test]
fn hub_components_are_distinct_and_spread() {
    assert_eq!(hub_components(5, 8), vec![0, 1, 2, 3, 4]);
    assert_eq!(hub_components(0, 8), Vec::<u32>::new());
    let hubs = hub_components(1000, 7);
    assert_eq!(hubs.len(), 7);
    for (j, &h) in hubs.iter().enumerate() {
        assert!((j * 1000 / 7..(j + 1) * 1000 / 7).contains(&(h as usize)));
    }
}

#[test]
fn hub_reach_sets_settle_most_reachable_pairs_of_a_dense_dag() {
    let Some((device, kernels)) = setup() else {
        return;
    };
    let n = 2000;
    let (src, dst) = reach_generate::random_dag(n, 10, 3).expect("dag");
    let dag = Csr::from_edges(&src, &dst, n).expect("dag");
    let mut rng = ChaCha8Rng::seed_from_u64(8);
    let (s, t) = random_pairs(&mut rng, n, 3000);
    let expected = msbfs::reachable(&dag, &s, &t).expect("bfs");
    let index = GpuReachIndex::build(&device, &kernels, &dag, 2).expect("build");
    let (labels_only, without) = index
        .reachable_with_hubs(&s, &t, GpuOptions::default(), 0)
        .expect("query");
    let (with_hubs, with) = index
        .reachable_with_hubs(&s, &t, GpuOptions::default(), 64)
        .expect("query");
    assert_eq!(labels_only, expected);
    assert_eq!(with_hubs, expected);
    assert_eq!(with.hubs, 64);
    assert!(with.hub_search.levels > 0, "{with:?}");
    // The hubs settle at least half of what the labels leave to searches.
    let open = s.len() - without.settled_by_labels;
    assert!(2 * with.settled_by_hubs >= open, "{without:?} {with:?}");
    // A second query reuses the hub sets.
    let (again, cached) = index
        .reachable_with_hubs(&s, &t, GpuOptions::default(), 64)
        .expect("query");
    assert_eq!(again, expected);
    assert_eq!(cached.hub_search.levels, 0);
}
