//! Seeded generators of Datalog inputs (`horsec gen-graph`): directed graphs with power-law
//! degrees or of a road-like grid, sized by vertex and edge count, and CSPA-like
//! `assign`/`dereference` facts. The same seed gives the same data on every machine.

use std::io::Write;
use std::path::Path;

use crate::bail;
use crate::error::{Result, RuntimeError};

/// Directed pairs (edges, or facts of a binary relation).
pub type Pairs = Vec<(u64, u64)>;

/// SplitMix64: small, fast, and good enough for test data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A permutation of `0..n`, so vertex ids do not reveal degrees.
fn shuffled(n: u64, rng: &mut Rng) -> Vec<u64> {
    let mut ids: Vec<u64> = (0..n).collect();
    for i in (1..ids.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        ids.swap(i, j);
    }
    ids
}

/// `edges` directed edges over `vertices` vertices whose out- and in-degrees follow a power
/// law (endpoint ranks drawn as `vertices · u^skew`, skew 2, then relabelled at random).
/// Self-loops are dropped and duplicates kept out, so exactly `edges` distinct edges come
/// back (an error when the graph cannot hold that many).
pub fn power_law(vertices: u64, edges: u64, seed: u64) -> Result<Vec<(u64, u64)>> {
    check_size(
        vertices,
        edges,
        vertices.saturating_mul(vertices.saturating_sub(1)),
    )?;
    let mut rng = Rng(seed);
    let ids = shuffled(vertices, &mut rng);
    let mut seen = std::collections::HashSet::with_capacity(edges as usize);
    let mut out = Vec::with_capacity(edges as usize);
    let draw = |rng: &mut Rng| ((vertices as f64 * rng.unit().powi(2)) as u64).min(vertices - 1);
    let mut attempts = 0u64;
    while (out.len() as u64) < edges {
        attempts += 1;
        // Past many rejections (a dense request), fall back to uniform endpoints.
        let (a, b) = if attempts < 20 * edges {
            (draw(&mut rng), draw(&mut rng))
        } else {
            (rng.below(vertices), rng.below(vertices))
        };
        let (a, b) = (ids[a as usize], ids[b as usize]);
        if a != b && seen.insert((a, b)) {
            out.push((a, b));
        }
    }
    Ok(out)
}

/// A road-like graph: vertices on a `w × h` grid (w = ⌈√vertices⌉), `edges` of the grid's
/// neighbour links (right, left, down, up), chosen at random without repeats.
pub fn grid(vertices: u64, edges: u64, seed: u64) -> Result<Vec<(u64, u64)>> {
    let width = (vertices as f64).sqrt().ceil().max(1.0) as u64;
    let mut links = Vec::new();
    for v in 0..vertices {
        let (x, y) = (v % width, v / width);
        if x + 1 < width && v + 1 < vertices {
            links.push((v, v + 1));
            links.push((v + 1, v));
        }
        if v + width < vertices {
            links.push((v, v + width));
            links.push((v + width, v));
        }
        let _ = y;
    }
    check_size(vertices, edges, links.len() as u64)?;
    let mut rng = Rng(seed);
    // A partial Fisher–Yates shuffle picks `edges` links.
    for i in 0..edges as usize {
        let j = i + rng.below((links.len() - i) as u64) as usize;
        links.swap(i, j);
    }
    links.truncate(edges as usize);
    Ok(links)
}

fn check_size(vertices: u64, edges: u64, possible: u64) -> Result<()> {
    if vertices == 0 {
        bail!("a graph needs at least one vertex");
    }
    if edges > possible {
        bail!(
            "{edges} edges do not fit: this graph of {vertices} vertices has room for {possible}"
        );
    }
    Ok(())
}

/// CSPA-like facts over `variables` program variables: `assign(a, b)` (a = b) mostly
/// between nearby variables (as in one function) with some long-range links, and
/// `dereference(a, b)` (a = *b) on power-law pointers (a few pointers are dereferenced
/// often).
pub fn cspa(variables: u64, assigns: u64, dereferences: u64, seed: u64) -> Result<(Pairs, Pairs)> {
    if variables < 2 {
        bail!("CSPA facts need at least two variables");
    }
    let mut rng = Rng(seed);
    let mut assign = Vec::with_capacity(assigns as usize);
    for _ in 0..assigns {
        let a = rng.below(variables);
        let b = if rng.below(10) < 8 {
            (a + 1 + rng.below(64)) % variables
        } else {
            rng.below(variables)
        };
        assign.push((a, b));
    }
    let pointers = power_law(
        variables,
        dereferences.min(variables * (variables - 1)),
        seed ^ 0xdead_beef,
    )?;
    Ok((assign, pointers))
}

/// Writes pairs as CSV with a header (`names`), or as tab-separated `.facts` when `names` is
/// None.
pub fn write_pairs(path: &Path, pairs: &[(u64, u64)], names: Option<(&str, &str)>) -> Result<()> {
    let failed = |e: std::io::Error| RuntimeError::new(format!("{}: {e}", path.display()));
    let file = std::fs::File::create(path).map_err(failed)?;
    let mut out = std::io::BufWriter::new(file);
    let separator = match names {
        Some((a, b)) => {
            writeln!(out, "{a},{b}").map_err(failed)?;
            ','
        }
        None => '\t',
    };
    for (a, b) in pairs {
        writeln!(out, "{a}{separator}{b}").map_err(failed)?;
    }
    out.flush().map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn power_law_graphs_have_the_asked_size_no_self_loops_and_one_seed_one_graph() {
        let g = power_law(1000, 5000, 3).unwrap();
        assert_eq!(g.len(), 5000);
        assert!(g.iter().all(|(a, b)| a != b && *a < 1000 && *b < 1000));
        let distinct: std::collections::HashSet<_> = g.iter().collect();
        assert_eq!(distinct.len(), 5000);
        assert_eq!(g, power_law(1000, 5000, 3).unwrap());
        assert_ne!(g, power_law(1000, 5000, 4).unwrap());
        // Skewed: the busiest source has far more than the mean of 5 edges.
        let mut out_degree = vec![0; 1000];
        for (a, _) in &g {
            out_degree[*a as usize] += 1;
        }
        assert!(out_degree.iter().max().unwrap() > &50);
    }

    #[test]
    fn grid_graphs_link_only_neighbours() {
        let g = grid(100, 300, 1).unwrap();
        assert_eq!(g.len(), 300);
        assert!(g
            .iter()
            .all(|&(a, b)| a.abs_diff(b) == 1 || a.abs_diff(b) == 10));
        assert!(grid(100, 10_000, 1).is_err());
    }

    #[test]
    fn cspa_facts_have_the_asked_counts() {
        let (assign, dereference) = cspa(500, 300, 700, 9).unwrap();
        assert_eq!((assign.len(), dereference.len()), (300, 700));
        assert!(assign.iter().all(|(a, b)| *a < 500 && *b < 500));
    }
}
