//! A seeded generator of social-network-like directed graphs: skewed (power-law) degrees and
//! community locality, sized like LDBC SNB's `person_knows_person` with [`Preset`]s.
//!
//! The model (a Chung–Lu graph with a locality window):
//! 1. Every vertex gets a popularity weight `1 / sqrt(rank + 1)`, where the ranks are a seeded
//!    random permutation of `0..n`. Chung–Lu weights `rank^(-1/2)` give a power-law degree
//!    distribution with exponent 3, the one preferential attachment (Barabási–Albert) grows;
//!    the largest degree is about `sqrt(n) / 2` times the mean.
//! 2. Vertex `v` gets out-degree ≈ `edges · w_v / Σw` (rounded through the prefix sums, so the
//!    degrees add up to exactly `edges`); the edge list comes out sorted by source.
//! 3. Each edge picks its destination by weight (so in-degrees are skewed too), never `v`
//!    itself (unless `v` is the only vertex): with probability [`LOCALITY`] among the
//!    vertices whose ids are near `v` (within `max(WINDOW, out-degree of v)`), otherwise
//!    among all vertices. Nearby ids play the part of LDBC's correlated "same university,
//!    same interests" windows: friends of a person are mostly from their community, so the
//!    graph has many triangles and short local paths, plus long-range links that keep its
//!    diameter small.
//!
//! Duplicate edges can occur (a popular vertex can be picked twice); self-loops cannot.
//!
//! Determinism: the output is a function of `(vertices, edges, seed)` alone — the same on
//! every platform, for any number of threads. The random streams are ChaCha8 (`rand`'s
//! portable, value-stable generator), one stream per fixed block of source vertices plus one
//! for the permutation; random numbers are turned into choices here rather than through
//! `rand`'s distributions, and the floating-point work uses only IEEE-exact operations
//! (+, ×, ÷, sqrt), so no libm differences can creep in.

use rand::rngs::ChaCha8Rng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;

use crate::bail;
use crate::error::Result;

/// Share of each vertex's edges that stay within its community window.
pub const LOCALITY: f64 = 0.8;
/// Half-width, in vertex ids, of the community window of a low-degree vertex.
pub const WINDOW: usize = 64;
/// Source vertices per random stream: fixes which numbers each edge draws, whatever the
/// thread count.
const VERTICES_PER_STREAM: usize = 1024;

/// A graph size: LDBC SNB persons (vertices) and `knows` edges at a scale factor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Preset {
    pub name: &'static str,
    pub vertices: usize,
    pub edges: usize,
}

/// ≈ LDBC SNB SF 1: 10.6 k persons, 219 k knows edges.
pub const LDBC_SF1: Preset = Preset {
    name: "ldbc-sf1",
    vertices: 10_600,
    edges: 219_000,
};
/// ≈ LDBC SNB SF 10: 70.8 k persons, 2.3 M knows edges.
pub const LDBC_SF10: Preset = Preset {
    name: "ldbc-sf10",
    vertices: 70_800,
    edges: 2_300_000,
};
/// ≈ LDBC SNB SF 100: 488 k persons, 23.1 M knows edges.
pub const LDBC_SF100: Preset = Preset {
    name: "ldbc-sf100",
    vertices: 488_000,
    edges: 23_100_000,
};

/// Every preset, smallest first.
pub const PRESETS: [Preset; 3] = [LDBC_SF1, LDBC_SF10, LDBC_SF100];

impl Preset {
    /// The preset called `name` (`ldbc-sf1`, `ldbc-sf10`, `ldbc-sf100`).
    pub fn named(name: &str) -> Option<Preset> {
        PRESETS.into_iter().find(|preset| preset.name == name)
    }

    /// [`generate`] at this size.
    pub fn generate(&self, seed: u64) -> Result<(Vec<i64>, Vec<i64>)> {
        generate(self.vertices, self.edges, seed)
    }
}

/// A graph of exactly `vertices` vertices and `edges` directed edges, as edge columns
/// `(src, dst)` of vertex indexes sorted by `src` (see the module documentation for the
/// model and the determinism guarantee). Edges need at least one vertex.
pub fn generate(vertices: usize, edges: usize, seed: u64) -> Result<(Vec<i64>, Vec<i64>)> {
    if vertices == 0 {
        if edges > 0 {
            bail!("graph generator: {edges} edges need at least one vertex");
        }
        return Ok((Vec::new(), Vec::new()));
    }
    if i64::try_from(vertices).is_err() {
        bail!("graph generator: {vertices} vertices do not fit i64 indexes");
    }
    let weights = Weights::new(vertices, seed);
    let degree_ends = degree_ends(&weights.prefix, edges);

    let mut src = vec![0i64; edges];
    let mut dst = vec![0i64; edges];
    // Cut both columns into the edges of each stream's block of sources.
    let mut jobs = Vec::with_capacity(vertices.div_ceil(VERTICES_PER_STREAM));
    let (mut src_rest, mut dst_rest) = (src.as_mut_slice(), dst.as_mut_slice());
    let mut edges_before = 0;
    for (block, first) in (0..vertices).step_by(VERTICES_PER_STREAM).enumerate() {
        let last = (first + VERTICES_PER_STREAM).min(vertices);
        let block_edges = degree_ends[last] - edges_before;
        let (src_block, src_tail) = src_rest.split_at_mut(block_edges);
        let (dst_block, dst_tail) = dst_rest.split_at_mut(block_edges);
        (src_rest, dst_rest) = (src_tail, dst_tail);
        jobs.push((block, first..last, src_block, dst_block));
        edges_before = degree_ends[last];
    }
    jobs.into_par_iter()
        .for_each(|(block, sources, src_block, dst_block)| {
            // Stream 0 drew the permutation.
            let mut rng = stream(seed, block as u64 + 1);
            let mut position = 0;
            for v in sources {
                let degree = degree_ends[v + 1] - degree_ends[v];
                let half_width = WINDOW.max(degree);
                let window = v.saturating_sub(half_width)..(v + half_width + 1).min(vertices);
                for _ in 0..degree {
                    let u = if unit(&mut rng) < LOCALITY {
                        weights.pick_in(window.clone(), v, &mut rng)
                    } else {
                        weights.pick_in(0..vertices, v, &mut rng)
                    };
                    src_block[position] = v as i64;
                    dst_block[position] = u as i64;
                    position += 1;
                }
            }
        });
    Ok((src, dst))
}

/// The random stream `index` of `seed`.
fn stream(seed: u64, index: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(index);
    rng
}

/// A uniform number in `[0, 1)` with 53 random bits.
fn unit(rng: &mut ChaCha8Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// A uniform integer in `0..bound` (multiply-high; the bias, below `bound / 2^64`, is far
/// under anything a graph could show).
fn below(rng: &mut ChaCha8Rng, bound: usize) -> usize {
    ((u128::from(rng.next_u64()) * bound as u128) >> 64) as usize
}

/// `degree_ends[v]` = edges of the vertices before `v`: rounding the weight prefix sums
/// scaled to `edges` gives non-negative degrees that add up to exactly `edges`.
fn degree_ends(prefix: &[f64], edges: usize) -> Vec<usize> {
    let total = prefix.last().copied().unwrap_or(0.0);
    let last = prefix.len() - 1;
    prefix
        .iter()
        .enumerate()
        .map(|(v, &sum)| {
            if v == last {
                edges
            } else {
                ((edges as f64 * sum / total + 0.5).floor() as usize).min(edges)
            }
        })
        .collect()
}

/// Vertex popularity weights with the structures to pick a vertex by weight.
struct Weights {
    /// `prefix[v]` = sum of the weights of the vertices before `v` (`n + 1` entries).
    prefix: Vec<f64>,
    /// `guide[k]` = the vertex whose weight interval holds `k / n` of the total: where a
    /// search for a point of the whole range starts (expected O(1) steps from there).
    guide: Vec<usize>,
}

impl Weights {
    fn new(vertices: usize, seed: u64) -> Weights {
        // Fisher–Yates: ranks[v] is the popularity rank of vertex v.
        let mut ranks: Vec<usize> = (0..vertices).collect();
        let mut rng = stream(seed, 0);
        for i in (1..vertices).rev() {
            ranks.swap(i, below(&mut rng, i + 1));
        }
        let mut prefix = Vec::with_capacity(vertices + 1);
        let mut sum = 0.0;
        prefix.push(sum);
        for &rank in &ranks {
            sum += 1.0 / ((rank + 1) as f64).sqrt();
            prefix.push(sum);
        }
        let mut guide = Vec::with_capacity(vertices);
        let mut vertex = 0;
        for k in 0..vertices {
            let point = sum * k as f64 / vertices as f64;
            while vertex + 1 < vertices && prefix[vertex + 1] <= point {
                vertex += 1;
            }
            guide.push(vertex);
        }
        Weights { prefix, guide }
    }

    /// A vertex of `range` other than `exclude` (which lies in `range`), picked with
    /// probability proportional to its weight; `exclude` itself only if it is alone.
    fn pick_in(
        &self,
        range: std::ops::Range<usize>,
        exclude: usize,
        rng: &mut ChaCha8Rng,
    ) -> usize {
        let (start, end) = (range.start, range.end);
        if end - start <= 1 {
            return exclude;
        }
        let prefix = &self.prefix;
        let excluded_weight = prefix[exclude + 1] - prefix[exclude];
        let range_weight = prefix[end] - prefix[start] - excluded_weight;
        // A point of the range's weight line with `exclude`'s interval cut out.
        let mut point = prefix[start] + unit(rng) * range_weight;
        if point >= prefix[exclude] {
            point += excluded_weight;
        }
        let vertex = if start == 0 && end == self.guide.len() {
            let total = prefix[end];
            let slot = ((point / total) * end as f64) as usize;
            let mut vertex = self.guide.get(slot).copied().unwrap_or(end - 1);
            while vertex + 1 < end && prefix[vertex + 1] <= point {
                vertex += 1;
            }
            vertex
        } else {
            // The first vertex whose interval ends past the point.
            start + prefix[start + 1..=end].partition_point(|&sum| sum <= point)
        };
        let vertex = vertex.clamp(start, end - 1);
        if vertex != exclude {
            vertex
        } else if vertex + 1 < end {
            // Rounding landed on the cut-out interval's edge: take the neighbour it touches.
            vertex + 1
        } else {
            vertex - 1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out_degrees(src: &[i64], vertices: usize) -> Vec<usize> {
        let mut degrees = vec![0; vertices];
        for &v in src {
            degrees[v as usize] += 1;
        }
        degrees
    }

    #[test]
    fn exact_counts_valid_indexes_sorted_sources_no_self_loops() {
        for (vertices, edges) in [
            (1, 0),
            (2, 5),
            (100, 0),
            (100, 1),
            (1000, 20_000),
            (3000, 997),
        ] {
            let (src, dst) = generate(vertices, edges, 7).unwrap();
            assert_eq!(
                (src.len(), dst.len()),
                (edges, edges),
                "{vertices} / {edges}"
            );
            let n = vertices as i64;
            assert!(src.iter().chain(&dst).all(|&v| (0..n).contains(&v)));
            assert!(src.is_sorted());
            assert!(src.iter().zip(&dst).all(|(s, d)| s != d));
        }
    }

    #[test]
    fn a_single_vertex_only_has_self_loops() {
        assert_eq!(generate(1, 3, 1).unwrap(), (vec![0; 3], vec![0; 3]));
    }

    #[test]
    fn edges_without_vertices_are_an_error() {
        assert_eq!(generate(0, 0, 1).unwrap(), (vec![], vec![]));
        let err = generate(0, 5, 1).unwrap_err();
        assert_eq!(
            err.message,
            "graph generator: 5 edges need at least one vertex"
        );
    }

    #[test]
    fn the_same_seed_gives_the_same_graph_and_others_differ() {
        let first = generate(5000, 40_000, 42).unwrap();
        assert_eq!(generate(5000, 40_000, 42).unwrap(), first);
        assert_ne!(generate(5000, 40_000, 43).unwrap(), first);
    }

    #[test]
    fn the_graph_does_not_depend_on_the_thread_count() {
        let on = |threads: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| generate(10_000, 100_000, 9).unwrap())
        };
        assert_eq!(on(1), on(3));
    }

    #[test]
    fn a_known_seed_gives_a_known_graph() {
        // Pins the stream layout: a change here changes every generated data set.
        let (src, dst) = generate(8, 12, 2024).unwrap();
        assert_eq!(src, vec![0, 1, 1, 1, 2, 3, 3, 4, 5, 6, 7, 7]);
        assert_eq!(dst, vec![1, 7, 7, 6, 3, 0, 7, 3, 6, 1, 0, 1]);
    }

    #[test]
    fn degrees_are_skewed() {
        let (src, dst) = LDBC_SF1.generate(1).unwrap();
        let vertices = LDBC_SF1.vertices;
        let mean = src.len() as f64 / vertices as f64;
        let max_out = *out_degrees(&src, vertices).iter().max().unwrap_or(&0);
        let max_in = *out_degrees(&dst, vertices).iter().max().unwrap_or(&0);
        assert!(
            max_out as f64 > 20.0 * mean,
            "max out {max_out}, mean {mean}"
        );
        assert!(max_in as f64 > 20.0 * mean, "max in {max_in}, mean {mean}");
        // Most vertices are below the mean (a long tail, not a bell).
        let below_mean = out_degrees(&src, vertices)
            .iter()
            .filter(|&&d| (d as f64) < mean)
            .count();
        assert!(below_mean > vertices / 2, "{below_mean} of {vertices}");
    }

    #[test]
    fn most_edges_stay_in_the_community_window() {
        let (src, dst) = generate(20_000, 200_000, 5).unwrap();
        let degrees = out_degrees(&src, 20_000);
        let local = src
            .iter()
            .zip(&dst)
            .filter(|&(&s, &d)| s.abs_diff(d) as usize <= WINDOW.max(degrees[s as usize]))
            .count();
        let share = local as f64 / src.len() as f64;
        assert!((0.75..0.9).contains(&share), "local share {share}");
    }

    #[test]
    fn presets_have_the_ldbc_sizes() {
        assert_eq!(Preset::named("ldbc-sf10"), Some(LDBC_SF10));
        assert_eq!(Preset::named("sf10"), None);
        let (src, dst) = LDBC_SF1.generate(3).unwrap();
        assert_eq!((src.len(), dst.len()), (219_000, 219_000));
        assert!(src.iter().chain(&dst).all(|&v| (0..10_600).contains(&v)));
    }

    #[test]
    fn degree_ends_add_up_to_the_edge_count() {
        let ends = degree_ends(&[0.0, 1.0, 1.5, 3.0], 7);
        assert_eq!(ends.first(), Some(&0));
        assert_eq!(ends.last(), Some(&7));
        assert!(ends.is_sorted());
    }
}
