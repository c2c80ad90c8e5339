//! The GPU IBFS kernel against the CPU MS-BFS and plain single-source BFS, on random and
//! hand-made graphs. Skips loudly without a GPU adapter (`HORSEC_REQUIRE_GPU=1` fails instead).

use horsec_runtime::gpu::{require_gpu_or_skip, Device};
use horsec_runtime::graph::gpu::{reachable_gpu, GpuGraph, GpuOptions};
use horsec_runtime::graph::msbfs::{self, Direction};
use horsec_runtime::graph::{bfs, generate, Csr};
use rand::rngs::ChaCha8Rng;
use rand::{Rng, SeedableRng};

/// Option sets that cover every path: both directions forced, the automatic switch (also
/// with a low threshold so it goes bottom-up early), narrow and wide lanes, a done check
/// after every level and rarely.
fn option_sets() -> Vec<GpuOptions> {
    let with = |direction, lane_words, check_every, bottom_up_share| GpuOptions {
        direction,
        lane_words,
        check_every,
        bottom_up_share,
    };
    vec![
        GpuOptions::default(),
        with(Direction::TopDown, 1, 1, 0),
        with(Direction::BottomUp, 1, 3, 0),
        with(Direction::Auto, 2, 2, 1),
        with(Direction::Auto, 32, 8, 64),
        with(Direction::TopDown, 4, 0, 0),
    ]
}

/// Lengths by plain BFS, one search per pair.
fn bfs_lengths(graph: &Csr, sources: &[i64], destinations: &[i64]) -> Vec<i64> {
    sources
        .iter()
        .zip(destinations)
        .map(|(&s, &d)| bfs::single_source(graph, s).expect("in range")[d as usize])
        .collect()
}

/// Checks GPU (every option set), CPU MS-BFS and plain BFS agree; returns the lengths.
fn agree(device: &Device, graph: &Csr, sources: &[i64], destinations: &[i64]) -> Vec<i64> {
    let expected = bfs_lengths(graph, sources, destinations);
    let cpu = msbfs::shortest_path_lengths(graph, sources, destinations).expect("cpu");
    assert_eq!(cpu, expected, "CPU MS-BFS against plain BFS");
    let resident = GpuGraph::upload(device, graph).expect("upload");
    for options in option_sets() {
        let (gpu, stats) = resident
            .search("@shortest_path_length", sources, destinations, options)
            .expect("gpu search");
        for (i, (&got, &want)) in gpu.iter().zip(&expected).enumerate() {
            assert_eq!(
                got, want,
                "pair {i} ({} -> {}) with {options:?} ({stats:?})",
                sources[i], destinations[i]
            );
        }
        assert_eq!(gpu.len(), expected.len());
    }
    let reach = resident
        .reachable(sources, destinations, GpuOptions::default())
        .expect("gpu reachable");
    let want: Vec<bool> = expected.iter().map(|&l| l >= 0).collect();
    assert_eq!(reach, want);
    expected
}

fn random_graph(rng: &mut ChaCha8Rng, n: usize, m: usize) -> Csr {
    let mut src = Vec::with_capacity(m);
    let mut dst = Vec::with_capacity(m);
    for _ in 0..m {
        src.push((rng.next_u64() % n as u64) as i64);
        dst.push((rng.next_u64() % n as u64) as i64);
    }
    Csr::from_edges(&src, &dst, n).expect("valid edges")
}

fn random_pairs(rng: &mut ChaCha8Rng, n: usize, count: usize) -> (Vec<i64>, Vec<i64>) {
    (0..count)
        .map(|_| {
            (
                (rng.next_u64() % n as u64) as i64,
                (rng.next_u64() % n as u64) as i64,
            )
        })
        .unzip()
}

#[test]
fn small_directed_graph_by_hand() {
    let Some(device) = require_gpu_or_skip() else {
        return;
    };
    // 0 -> 1 -> 2 -> 3, shortcut 0 -> 2, back edge 3 -> 1, self-loop 2 -> 2, duplicate 0 -> 1,
    // vertex 4 isolated.
    let graph = Csr::from_edges(&[0, 1, 2, 0, 3, 2, 0], &[1, 2, 3, 2, 1, 2, 1], 5).unwrap();
    let sources = [0, 0, 0, 3, 1, 4, 2, 4, 0];
    let destinations = [3, 2, 0, 2, 0, 4, 1, 0, 3];
    assert_eq!(
        agree(&device, &graph, &sources, &destinations),
        vec![2, 1, 0, 2, -1, 0, 2, -1, 2]
    );
}

#[test]
fn empty_graphs_and_no_pairs() {
    let Some(device) = require_gpu_or_skip() else {
        return;
    };
    assert!(agree(&device, &Csr::empty(0), &[], &[]).is_empty());
    assert!(agree(&device, &Csr::empty(3), &[], &[]).is_empty());
    // No edges: only a vertex itself is reachable.
    assert_eq!(
        agree(&device, &Csr::empty(3), &[0, 0, 2, 1], &[0, 1, 2, 2]),
        vec![0, -1, 0, -1]
    );
}

#[test]
fn isolated_vertices_self_loops_duplicates_and_odd_sizes() {
    let Some(device) = require_gpu_or_skip() else {
        return;
    };
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    for &(n, m) in &[(1, 3), (37, 30), (100, 400), (1001, 2500)] {
        let base = random_graph(&mut rng, n, m);
        // Add self-loops and duplicates of the first few edges; the last tenth of the
        // vertices keeps no edges at all (isolated).
        let keep = n - n / 10;
        let mut src = Vec::new();
        let mut dst = Vec::new();
        for v in 0..n {
            for &u in base.neighbours(v).unwrap_or_default() {
                if v < keep && (u as usize) < keep {
                    src.push(v as i64);
                    dst.push(u);
                }
            }
        }
        for v in (0..keep).step_by(3) {
            src.push(v as i64);
            dst.push(v as i64);
        }
        let duplicated = src.len().min(20);
        src.extend_from_within(..duplicated);
        dst.extend_from_within(..duplicated);
        let graph = Csr::from_edges(&src, &dst, n).unwrap();
        let (sources, destinations) = random_pairs(&mut rng, n, 200);
        let lengths = agree(&device, &graph, &sources, &destinations);
        if n > 10 {
            assert!(lengths.contains(&-1), "n = {n}: expected unreachable pairs");
        }
    }
}

#[test]
fn repeated_sources_and_source_equal_to_destination() {
    let Some(device) = require_gpu_or_skip() else {
        return;
    };
    // A path 0 -> 1 -> ... -> 69: long searches, all from few sources.
    let src: Vec<i64> = (0..69).collect();
    let dst: Vec<i64> = (1..70).collect();
    let graph = Csr::from_edges(&src, &dst, 70).unwrap();
    let destinations: Vec<i64> = (0..70).rev().chain(0..70).chain([5, 5, 5]).collect();
    let mut sources = vec![0; 140];
    sources.extend([5, 5, 6]);
    let lengths = agree(&device, &graph, &sources, &destinations);
    assert_eq!(&lengths[..70], &(0..70).rev().collect::<Vec<i64>>()[..]);
    assert_eq!(&lengths[140..], &[0, 0, -1]);
}

#[test]
fn more_pairs_than_lanes() {
    let Some(device) = require_gpu_or_skip() else {
        return;
    };
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    // 1500 distinct-ish sources: two batches of 1024 lanes by default, 47 batches of 32
    // with one word.
    let graph = random_graph(&mut rng, 1500, 6000);
    let sources: Vec<i64> = (0..1500).collect();
    let destinations: Vec<i64> = (0..1500).map(|v| (v * 31 + 17) % 1500).collect();
    agree(&device, &graph, &sources, &destinations);
    let resident = GpuGraph::upload(&device, &graph).unwrap();
    let (_, stats) = resident
        .search(
            "@shortest_path_length",
            &sources,
            &destinations,
            GpuOptions::default(),
        )
        .unwrap();
    assert_eq!((stats.lanes, stats.batches), (1024, 2));
}

#[test]
fn power_law_graph_with_a_small_workgroup_cap() {
    let Some(device) = require_gpu_or_skip() else {
        return;
    };
    let (src, dst) = generate::generate(3000, 30_000, 3).unwrap();
    let graph = Csr::from_edges(&src, &dst, 3000).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let (sources, destinations) = random_pairs(&mut rng, 3000, 700);
    // Three workgroups per dispatch: every kernel's grid-stride loop runs many rounds.
    device.set_workgroup_cap(Some(3));
    agree(&device, &graph, &sources, &destinations);
    device.set_workgroup_cap(None);
}

#[test]
fn out_of_range_vertices_are_errors() {
    let Some(device) = require_gpu_or_skip() else {
        return;
    };
    let graph = Csr::empty(4);
    let resident = GpuGraph::upload(&device, &graph).unwrap();
    let err = resident
        .shortest_path_lengths(&[0, 4], &[1, 1], GpuOptions::default())
        .unwrap_err();
    assert_eq!(
        err.message,
        "@shortest_path_length: pair 1 has source 4, outside the vertices 0..4"
    );
    let err = reachable_gpu(&device, &graph, &[0, 1], &[1, -2], GpuOptions::default()).unwrap_err();
    assert_eq!(
        err.message,
        "@reachable: pair 1 has destination -2, outside the vertices 0..4"
    );
    let err = resident
        .shortest_path_lengths(&[0, 1], &[1], GpuOptions::default())
        .unwrap_err();
    assert!(err.message.contains("2 sources but 1 destinations"));
}
