//! Timings of the graph code on generated LDBC-sized graphs. Ignored by default (slow in
//! debug builds); run with
//! `cargo test --release -p horsec-runtime --test graph_bench -- --ignored --nocapture`.
//! Every timed search is also checked against plain BFS on a sample of its pairs.

use std::time::{Duration, Instant};

use horsec_runtime::graph::generate::{Preset, LDBC_SF1, LDBC_SF10, LDBC_SF100};
use horsec_runtime::graph::msbfs::{shortest_path_lengths_with, Direction, Options};
use horsec_runtime::graph::{bfs, Csr};
use rand::rngs::ChaCha8Rng;
use rand::{Rng, SeedableRng};

fn timed<T>(work: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    let result = work();
    (result, start.elapsed())
}

fn random_pairs(vertices: usize, count: usize, seed: u64) -> (Vec<i64>, Vec<i64>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut vertex = || (rng.next_u64() % vertices as u64) as i64;
    (0..count).map(|_| (vertex(), vertex())).unzip()
}

fn build(preset: Preset) -> Csr {
    let ((src, dst), generated) = timed(|| preset.generate(1).expect("preset sizes are valid"));
    let (graph, built) = timed(|| Csr::from_edges(&src, &dst, preset.vertices).expect("valid"));
    println!(
        "{}: {} vertices, {} edges: generated in {:.2?}, CSR built in {:.2?}",
        preset.name, preset.vertices, preset.edges, generated, built
    );
    graph
}

#[test]
#[ignore = "benchmark: run in release with --ignored --nocapture"]
fn msbfs_timings_on_ldbc_sized_graphs() {
    println!("rayon threads: {}", rayon::current_num_threads());
    for preset in [LDBC_SF1, LDBC_SF10] {
        let graph = build(preset);
        for pairs in [1024, 16_384] {
            let (sources, destinations) = random_pairs(graph.vertex_count(), pairs, 7);
            for direction in [Direction::Auto, Direction::TopDown, Direction::BottomUp] {
                let options = Options {
                    direction,
                    lane_words: 0,
                };
                let (lengths, took) = timed(|| {
                    shortest_path_lengths_with(&graph, &sources, &destinations, options)
                        .expect("pairs in range")
                });
                let reached = lengths.iter().filter(|&&length| length >= 0).count();
                println!(
                    "  {pairs:>6} pairs, {direction:?}: {took:.2?} ({reached} reachable, longest {})",
                    lengths.iter().max().copied().unwrap_or(-1)
                );
                for i in (0..pairs).step_by(pairs / 16) {
                    let distances = bfs::single_source(&graph, sources[i]).expect("in range");
                    assert_eq!(lengths[i], distances[destinations[i] as usize], "pair {i}");
                }
            }
        }
    }
    // Generation at the largest size only.
    let graph = build(LDBC_SF100);
    assert_eq!(graph.edge_count(), LDBC_SF100.edges);
}
