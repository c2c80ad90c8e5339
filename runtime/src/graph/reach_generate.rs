//! Seeded generators of the graphs the reachability index is measured and tested on (edge
//! columns `(src, dst)` of vertex indexes, like [`super::generate`]):
//! - [`random_dag`]: random DAGs as in the GRAIL papers (Yildirim et al.; Quer & Calabrese
//!   use 2.5·10^5 to 1.5·10^6 vertices with average degree 50 or 100): every edge joins two
//!   distinct random vertices and points from the earlier to the later in a hidden random
//!   order, so vertex ids say nothing about the order;
//! - [`citation_dag`]: citation-like DAGs: vertices arrive in id order and each cites earlier
//!   ones, a share of them by copying a citation of a random earlier vertex (the copying
//!   model, which gives power-law in-degrees: well-cited papers get cited more);
//! - [`clustered_graph`]: general graphs with large strongly connected components: random
//!   clusters with enough internal edges to be (mostly) one component each, joined by edges
//!   that go forward in a random order of the clusters plus a few that go back, merging some
//!   clusters into larger components.
//!
//! Each is a function of its arguments alone: ChaCha8 streams per fixed block of edges, so
//! any number of threads gives the same graph.

use rand::rngs::ChaCha8Rng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;

use crate::bail;
use crate::error::Result;

/// Edges per random stream.
const EDGES_PER_STREAM: usize = 1 << 16;

/// Edge columns.
pub type Edges = (Vec<i64>, Vec<i64>);

/// A seeded random permutation of `0..n` (Fisher–Yates).
fn permutation(n: usize, seed: u64) -> Vec<u32> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut order: Vec<u32> = (0..n as u32).collect();
    for i in (1..n).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    order
}

fn check(vertices: usize, edges: usize, what: &str) -> Result<()> {
    if vertices >= u32::MAX as usize {
        bail!("{what}: {vertices} vertices are too many");
    }
    if edges > 0 && vertices < 2 {
        bail!("{what}: {edges} edges need at least two vertices");
    }
    Ok(())
}

/// `edges` random edges, each produced by `pick(rng)`, in parallel fixed-size streams.
fn random_edges(
    edges: usize,
    seed: u64,
    pick: impl Fn(&mut ChaCha8Rng) -> (i64, i64) + Sync,
) -> Edges {
    let pairs: Vec<(i64, i64)> = (0..edges.div_ceil(EDGES_PER_STREAM))
        .into_par_iter()
        .flat_map_iter(|block| {
            let mut rng = ChaCha8Rng::seed_from_u64(
                seed ^ (block as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
            );
            let count = EDGES_PER_STREAM.min(edges - block * EDGES_PER_STREAM);
            (0..count).map(|_| pick(&mut rng)).collect::<Vec<_>>()
        })
        .collect();
    pairs.into_iter().unzip()
}

/// A random DAG of `vertices` vertices and `vertices · average_degree` edges (see the module
/// docs). Repeated edges can occur; self-loops cannot.
pub fn random_dag(vertices: usize, average_degree: usize, seed: u64) -> Result<Edges> {
    let edges = vertices.saturating_mul(average_degree);
    check(vertices, edges, "random DAG")?;
    let rank = permutation(vertices, seed);
    let n = vertices as u64;
    Ok(random_edges(edges, seed.wrapping_add(1), |rng| {
        let a = (rng.next_u64() % n) as usize;
        let mut b = (rng.next_u64() % (n - 1)) as usize;
        if b >= a {
            b += 1;
        }
        if rank[a] < rank[b] {
            (a as i64, b as i64)
        } else {
            (b as i64, a as i64)
        }
    }))
}

/// Share of a citation DAG's citations copied from a cited paper's citations.
pub const CITATION_COPY_SHARE: f64 = 0.5;

/// A citation-like DAG: vertex `v` cites about `average_degree` of the vertices before it
/// (fewer at the start, where there are fewer), half of them uniformly, half by copying a
/// citation of a uniformly chosen earlier vertex. Edges point from the citing vertex to the
/// cited one (higher id to lower id). Sequential: each citation may copy an earlier one.
pub fn citation_dag(vertices: usize, average_degree: usize, seed: u64) -> Result<Edges> {
    check(
        vertices,
        vertices.saturating_mul(average_degree),
        "citation DAG",
    )?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut offsets = vec![0usize; vertices + 1];
    let mut cited: Vec<i64> = Vec::with_capacity(vertices.saturating_mul(average_degree));
    let copy_below = (CITATION_COPY_SHARE * (1u64 << 32) as f64) as u64;
    for v in 0..vertices {
        let count = average_degree.min(v);
        for _ in 0..count {
            let earlier = (rng.next_u64() % v as u64) as usize;
            let (start, end) = (offsets[earlier], offsets[earlier + 1]);
            let copy = (rng.next_u64() & 0xffff_ffff) < copy_below && end > start;
            let target = if copy {
                cited[start + (rng.next_u64() % (end - start) as u64) as usize]
            } else {
                earlier as i64
            };
            cited.push(target);
        }
        offsets[v + 1] = cited.len();
    }
    let src = (0..vertices)
        .flat_map(|v| std::iter::repeat_n(v as i64, offsets[v + 1] - offsets[v]))
        .collect();
    Ok((src, cited))
}

/// A graph of `vertices` vertices in `clusters` random clusters with large strongly connected
/// components: `vertices · average_degree` edges, of which 80 % stay inside a cluster, 18 %
/// go forward in a random order of the clusters and 2 % go backward (merging the clusters
/// they span into one component).
pub fn clustered_graph(
    vertices: usize,
    average_degree: usize,
    clusters: usize,
    seed: u64,
) -> Result<Edges> {
    let edges = vertices.saturating_mul(average_degree);
    check(vertices, edges, "clustered graph")?;
    if clusters == 0 || clusters > vertices.max(1) {
        bail!("clustered graph: {clusters} clusters for {vertices} vertices");
    }
    // Cluster i holds the vertices at positions [i·n/k, (i+1)·n/k) of a random order.
    let order = permutation(vertices, seed);
    let n = vertices as u64;
    let k = clusters as u64;
    let bounds = |i: u64| (i * n / k, (i + 1) * n / k);
    let member = |rng: &mut ChaCha8Rng, i: u64| {
        let (lo, hi) = bounds(i);
        order[(lo + rng.next_u64() % (hi - lo).max(1)) as usize] as i64
    };
    Ok(random_edges(edges, seed.wrapping_add(1), |rng| {
        let a = rng.next_u64() % k;
        let kind = rng.next_u64() % 100;
        let b = if kind < 80 || k == 1 {
            a
        } else {
            let other = rng.next_u64() % k;
            match (kind < 98, other.cmp(&a)) {
                (_, std::cmp::Ordering::Equal) => a,
                (true, std::cmp::Ordering::Greater) | (false, std::cmp::Ordering::Less) => other,
                _ => a,
            }
        };
        (member(rng, a), member(rng, b))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::grail::strongly_connected_components;
    use crate::graph::Csr;

    fn csr(n: usize, (src, dst): &Edges) -> Csr {
        Csr::from_edges(src, dst, n).unwrap()
    }

    #[test]
    fn random_dags_are_acyclic_seeded_and_sized() {
        let edges = random_dag(1000, 5, 7).unwrap();
        assert_eq!(edges.0.len(), 5000);
        assert_eq!(edges, random_dag(1000, 5, 7).unwrap());
        assert_ne!(edges, random_dag(1000, 5, 8).unwrap());
        let (_, components) = strongly_connected_components(&csr(1000, &edges));
        assert_eq!(components, 1000);
        assert!(edges.0.iter().zip(&edges.1).all(|(a, b)| a != b));
    }

    #[test]
    fn citation_dags_cite_earlier_vertices_with_skewed_in_degrees() {
        let n = 5000;
        let (src, dst) = citation_dag(n, 8, 3).unwrap();
        assert!(src.iter().zip(&dst).all(|(s, d)| d < s));
        let mut in_degree = vec![0usize; n];
        for &d in &dst {
            in_degree[d as usize] += 1;
        }
        let max = in_degree.iter().copied().max().unwrap_or(0);
        // Uniform citing would give a largest in-degree of a few dozen at most.
        assert!(max > 100, "largest in-degree {max}");
    }

    #[test]
    fn clustered_graphs_have_large_components() {
        let n = 4000;
        let edges = clustered_graph(n, 4, 8, 5).unwrap();
        let (component, count) = strongly_connected_components(&csr(n, &edges));
        let mut sizes = vec![0usize; count];
        for &c in &component {
            sizes[c as usize] += 1;
        }
        let largest = sizes.iter().copied().max().unwrap_or(0);
        assert!(largest >= n / 8 / 2, "largest component {largest}");
        assert!(count > 1);
    }

    #[test]
    fn bad_sizes_are_errors() {
        assert!(random_dag(1, 3, 0).is_err());
        assert_eq!(random_dag(0, 3, 0).unwrap(), (vec![], vec![]));
        assert!(clustered_graph(10, 2, 0, 0).is_err());
    }
}
