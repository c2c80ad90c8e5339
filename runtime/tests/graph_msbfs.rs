//! The bit-parallel multi-source BFS answers exactly what plain single-source BFS answers,
//! on hand-picked corner cases, on random graphs (proptest) and on generated social graphs,
//! in every direction mode and batch width.

use horsec_runtime::graph::msbfs::{
    reachable, shortest_path_lengths, shortest_path_lengths_with, Direction, Options,
};
use horsec_runtime::graph::{bfs, generate, Csr};
use proptest::prelude::*;
use rand::rngs::ChaCha8Rng;
use rand::{Rng, SeedableRng};

/// The default options and every direction at every batch width.
fn every_option() -> Vec<Options> {
    let mut all = vec![Options::default()];
    for direction in [Direction::Auto, Direction::TopDown, Direction::BottomUp] {
        for lane_words in [1, 2, 4, 8] {
            all.push(Options {
                direction,
                lane_words,
            });
        }
    }
    all
}

/// What plain BFS says for each pair.
fn oracle(graph: &Csr, sources: &[i64], destinations: &[i64]) -> Vec<i64> {
    sources
        .iter()
        .zip(destinations)
        .map(|(&source, &destination)| {
            let distances = bfs::single_source(graph, source).expect("source in range");
            distances[destination as usize]
        })
        .collect()
}

/// Checks every option and `reachable` against the oracle; returns the lengths.
fn check_against_oracle(graph: &Csr, sources: &[i64], destinations: &[i64]) -> Vec<i64> {
    let expected = oracle(graph, sources, destinations);
    for options in every_option() {
        let lengths = shortest_path_lengths_with(graph, sources, destinations, options)
            .expect("vertices in range");
        assert_eq!(lengths, expected, "{options:?}");
    }
    let reach = reachable(graph, sources, destinations).expect("vertices in range");
    let expected_reach: Vec<bool> = expected.iter().map(|&length| length >= 0).collect();
    assert_eq!(reach, expected_reach);
    expected
}

fn random_pairs(vertices: usize, count: usize, seed: u64) -> (Vec<i64>, Vec<i64>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut vertex = || (rng.next_u64() % vertices as u64) as i64;
    (0..count).map(|_| (vertex(), vertex())).unzip()
}

#[test]
fn empty_graph_and_no_pairs() {
    let graph = Csr::from_edges(&[], &[], 0).unwrap();
    assert_eq!(check_against_oracle(&graph, &[], &[]), Vec::<i64>::new());
    assert!(shortest_path_lengths(&graph, &[0], &[0]).is_err());
}

#[test]
fn vertices_without_edges_reach_only_themselves() {
    let graph = Csr::from_edges(&[], &[], 70).unwrap();
    let sources = [0, 69, 5, 5, 64];
    let destinations = [0, 0, 5, 6, 63];
    assert_eq!(
        check_against_oracle(&graph, &sources, &destinations),
        vec![0, -1, 0, -1, -1]
    );
}

#[test]
fn isolated_vertices_self_loops_and_duplicate_edges() {
    // 0 <-> 1 with duplicates and self-loops; 2 -> 3 -> 4; vertex 5 isolated.
    let src = [0, 0, 0, 1, 1, 2, 3, 3, 4];
    let dst = [1, 1, 0, 0, 1, 3, 4, 4, 4];
    let graph = Csr::from_edges(&src, &dst, 6).unwrap();
    let sources = [0, 1, 2, 4, 5, 5, 0, 2];
    let destinations = [1, 0, 4, 2, 5, 0, 5, 3];
    assert_eq!(
        check_against_oracle(&graph, &sources, &destinations),
        vec![1, 1, 2, -1, 0, -1, -1, 1]
    );
}

#[test]
fn repeated_sources_and_repeated_pairs() {
    let (src, dst) = generate::generate(500, 3000, 11).unwrap();
    let graph = Csr::from_edges(&src, &dst, 500).unwrap();
    let sources: Vec<i64> = (0..400).map(|i| [3, 3, 7, 499][i % 4]).collect();
    let destinations: Vec<i64> = (0..400).map(|i| (i as i64 * 37) % 500).collect();
    check_against_oracle(&graph, &sources, &destinations);
    // The same pair many times gets the same answer every time.
    let lengths = check_against_oracle(&graph, &[10; 100], &[20; 100]);
    assert!(lengths.iter().all(|&length| length == lengths[0]));
}

#[test]
fn more_distinct_sources_than_the_widest_batch() {
    // 1300 distinct sources: three batches even at 512 lanes; 1300 is not a multiple of 64.
    let (src, dst) = generate::generate(1300, 9000, 5).unwrap();
    let graph = Csr::from_edges(&src, &dst, 1300).unwrap();
    let sources: Vec<i64> = (0..1300).collect();
    let destinations: Vec<i64> = (0..1300).map(|v| (v * 611 + 99) % 1300).collect();
    check_against_oracle(&graph, &sources, &destinations);
}

#[test]
fn long_paths_need_many_levels() {
    // A path 0 -> 1 -> ... -> 999 (forced bottom-up levels scan it all 999 times).
    let n = 1000i64;
    let src: Vec<i64> = (0..n - 1).collect();
    let dst: Vec<i64> = (1..n).collect();
    let graph = Csr::from_edges(&src, &dst, n as usize).unwrap();
    let lengths = check_against_oracle(&graph, &[0, 100, 999, 500], &[999, 700, 0, 500]);
    assert_eq!(lengths, vec![999, 600, -1, 0]);
}

#[test]
fn a_generated_social_graph() {
    let (src, dst) = generate::LDBC_SF1.generate(1).unwrap();
    let graph = Csr::from_edges(&src, &dst, generate::LDBC_SF1.vertices).unwrap();
    let (sources, destinations) = random_pairs(graph.vertex_count(), 300, 99);
    let lengths = check_against_oracle(&graph, &sources, &destinations);
    // A small world: most pairs are connected, by short paths.
    let connected = lengths.iter().filter(|&&length| length > 0).count();
    assert!(connected > 200, "{connected} of 300 pairs connected");
    assert!(lengths.iter().all(|&length| length <= 12), "{lengths:?}");
}

#[test]
fn out_of_range_pairs_are_errors() {
    let graph = Csr::from_edges(&[0], &[1], 2).unwrap();
    let err = shortest_path_lengths(&graph, &[0, 1, 2], &[1, 1, 1]).unwrap_err();
    assert!(
        err.message.contains("pair 2 has source 2"),
        "{}",
        err.message
    );
    let err = reachable(&graph, &[0], &[i64::MAX]).unwrap_err();
    assert!(
        err.message.contains("pair 0 has destination"),
        "{}",
        err.message
    );
}

/// Vertex pairs: edges, or (source, destination) queries.
type Pairs = Vec<(i64, i64)>;

/// A random graph: a vertex count (often not a multiple of 32 or 64), edges among those
/// vertices (with self-loops and duplicates), and pairs.
fn graph_and_pairs() -> impl Strategy<Value = (usize, Pairs, Pairs)> {
    (1usize..200).prop_flat_map(|n| {
        let vertex = 0..n as i64;
        (
            Just(n),
            prop::collection::vec((vertex.clone(), vertex.clone()), 0..4 * n),
            prop::collection::vec((vertex.clone(), vertex), 0..150),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn msbfs_agrees_with_plain_bfs_on_random_graphs((n, edges, pairs) in graph_and_pairs()) {
        let (src, dst): (Vec<i64>, Vec<i64>) = edges.into_iter().unzip();
        let graph = Csr::from_edges(&src, &dst, n).unwrap();
        let (sources, destinations): (Vec<i64>, Vec<i64>) = pairs.into_iter().unzip();
        check_against_oracle(&graph, &sources, &destinations);
    }

    #[test]
    fn csr_lists_every_edge_once((n, edges, _pairs) in graph_and_pairs()) {
        let (src, dst): (Vec<i64>, Vec<i64>) = edges.iter().copied().unzip();
        let graph = Csr::from_edges(&src, &dst, n).unwrap();
        let mut listed: Vec<(i64, i64)> = (0..n)
            .flat_map(|v| {
                graph.neighbours(v).unwrap_or_default().iter().map(move |&u| (v as i64, u))
            })
            .collect();
        let mut expected = edges;
        listed.sort_unstable();
        expected.sort_unstable();
        prop_assert_eq!(listed, expected);
    }
}
