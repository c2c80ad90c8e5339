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

/// The shape of generated CSPA facts (see [`cspa`]); the constants are its defaults.
pub mod cspa_model {
    /// Mean variables per function (sizes uniform in `MIN_FUNCTION_VARS ..= 2 · mean − 4`).
    pub const MEAN_FUNCTION_VARS: u64 = 16;
    /// The fewest variables of a function: two parameters, a return value and one more.
    pub const MIN_FUNCTION_VARS: u64 = 4;
    /// Parameters per function (its first variables); its last variable is its return value.
    pub const PARAMETERS: u64 = 2;
    /// Per mille of `assign` facts that are calls (an argument or a return across functions).
    pub const CALLS_PER_MILLE: u64 = 20;
    /// Callee popularity: a call's callee is the function of rank `functions · u^skew`.
    pub const CALLEE_SKEW: i32 = 2;
    /// A local `a = b` takes `b` among the `LOCAL_WINDOW` variables declared just before `a`.
    pub const LOCAL_WINDOW: u64 = 4;
    /// Pointer popularity in a function: `x = *y` takes `y` at local rank `size · u^skew`.
    pub const POINTER_SKEW: i32 = 2;
}

/// CSPA-like facts with the locality of real points-to facts: `assign(a, b)` (a = b) and
/// `dereference(a, b)` (a = *b), exactly `assigns` and `dereferences` distinct facts, no
/// fact relating a variable to itself. Variable ids are shuffled, so they tell nothing.
///
/// The model (constants in [`cspa_model`]):
/// - `variables` program variables belong to functions of 4 to 28 variables (16 on
///   average), declared in order; a function's first two variables are its parameters and
///   its last its return value.
/// - 98 % of `assign` facts are local: `a = b` with `b` one of the four variables declared
///   just before `a` in the same function (a short chain of copies).
/// - 2 % are calls: a variable `a` of one function passes an argument (`param = a`, one of
///   the callee's parameters) or takes a return value (`a = ret`); the callee is drawn with
///   popularity `functions · u²` (a few library functions called from everywhere).
/// - `dereference` facts stay in one function: `x = *y` with `y` drawn at local rank
///   `size · u²` (a few pointers per function are dereferenced often).
///
/// So values flow mostly inside functions and across the few calls, and pointer chains are
/// short: the fixpoint grows about linearly with the facts, as real analyses' do, instead of
/// relating nearly every pair of variables. Density decides the size of the answer: with
/// fewer than about one variable per dereference the aliases of popular callees spread
/// through memory aliases across the whole program (the fixpoint jumps by orders of
/// magnitude). At httpd's size (`assign` 3.6·10^5, `dereference` 1.1·10^6) use 10^6
/// variables: the fixpoint then grows about linearly with the facts (ValueFlow, MemoryAlias
/// and ValueAlias have 3.7·10^5, 6.3·10^5 and 1.1·10^6 tuples at a tenth of that size, ten
/// times those at a hundredth), so about 2·10^7 in all, the range of GDlog's httpd
/// (ValueAlias 2.3·10^8), not the 10^10 of near-complete relations.
pub fn cspa(variables: u64, assigns: u64, dereferences: u64, seed: u64) -> Result<(Pairs, Pairs)> {
    use cspa_model::*;
    if variables < 2 * MIN_FUNCTION_VARS {
        bail!(
            "CSPA facts need at least {} variables",
            2 * MIN_FUNCTION_VARS
        );
    }
    let mut rng = Rng(seed);
    // Functions: (first variable, number of variables), consecutive.
    let mut functions: Vec<(u64, u64)> = Vec::new();
    let mut function_of: Vec<u32> = Vec::with_capacity(variables as usize);
    let largest = 2 * MEAN_FUNCTION_VARS - MIN_FUNCTION_VARS;
    let mut first = 0;
    while first < variables {
        let mut size = MIN_FUNCTION_VARS + rng.below(largest - MIN_FUNCTION_VARS + 1);
        // The last function takes the rest rather than leave fewer than the fewest.
        if variables - first < size + MIN_FUNCTION_VARS {
            size = variables - first;
        }
        function_of.extend(std::iter::repeat_n(functions.len() as u32, size as usize));
        functions.push((first, size));
        first += size;
    }
    let count = functions.len() as u64;
    let ids = shuffled(variables, &mut rng);
    let by_popularity = shuffled(count, &mut rng);
    let skewed =
        |rng: &mut Rng, n: u64, skew: i32| ((n as f64 * rng.unit().powi(skew)) as u64).min(n - 1);
    let assign = distinct_facts(assigns, "assign", variables, &ids, &mut rng, |rng| {
        let a = rng.below(variables);
        let (start, size) = functions[function_of[a as usize] as usize];
        if rng.below(1000) < CALLS_PER_MILLE {
            let callee = by_popularity[skewed(rng, count, CALLEE_SKEW) as usize];
            let (callee_start, callee_size) = functions[callee as usize];
            if rng.below(2) == 0 {
                (callee_start + rng.below(PARAMETERS), a)
            } else {
                (a, callee_start + callee_size - 1)
            }
        } else {
            let local = a - start;
            let back = 1 + rng.below(LOCAL_WINDOW);
            (a, start + (local + size - back % size) % size)
        }
    })?;
    let dereference = distinct_facts(
        dereferences,
        "dereference",
        variables,
        &ids,
        &mut rng,
        |rng| {
            let x = rng.below(variables);
            let (start, size) = functions[function_of[x as usize] as usize];
            (x, start + skewed(rng, size, POINTER_SKEW))
        },
    )?;
    Ok((assign, dereference))
}

/// `n` distinct facts from `draw` (pairs of variable positions, self-pairs dropped), their
/// variables renamed by `ids`; an error naming `what` when they are too many to find.
fn distinct_facts(
    n: u64,
    what: &str,
    variables: u64,
    ids: &[u64],
    rng: &mut Rng,
    mut draw: impl FnMut(&mut Rng) -> (u64, u64),
) -> Result<Pairs> {
    let mut seen = std::collections::HashSet::with_capacity(n as usize);
    let mut out = Vec::with_capacity(n as usize);
    let mut attempts = 0u64;
    while (out.len() as u64) < n {
        attempts += 1;
        if attempts > 50 * n + 1000 {
            bail!(
                "{n} distinct `{what}` facts do not fit the locality of {variables} variables \
                 (found {}): use more variables",
                out.len()
            );
        }
        let (a, b) = draw(rng);
        let pair = (ids[a as usize], ids[b as usize]);
        if a != b && seen.insert(pair) {
            out.push(pair);
        }
    }
    Ok(out)
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
    fn cspa_facts_have_the_asked_counts_and_one_seed_one_set() {
        let (assign, dereference) = cspa(500, 300, 700, 9).unwrap();
        assert_eq!((assign.len(), dereference.len()), (300, 700));
        for facts in [&assign, &dereference] {
            assert!(facts.iter().all(|(a, b)| a != b && *a < 500 && *b < 500));
            let distinct: std::collections::HashSet<_> = facts.iter().collect();
            assert_eq!(distinct.len(), facts.len());
        }
        assert_eq!((assign, dereference), cspa(500, 300, 700, 9).unwrap());
        assert_ne!(
            cspa(500, 300, 700, 9).unwrap(),
            cspa(500, 300, 700, 10).unwrap()
        );
        // More facts than the locality allows: an error, not a hang.
        assert!(cspa(20, 0, 1000, 1).is_err());
    }

    #[test]
    fn cspa_facts_stay_mostly_inside_functions() {
        // Locality shows in the ids before shuffling only, so count through the inverse:
        // with one seed, the same draws on 10^4 variables; a local fact's two variables are
        // at most a function apart (before the shuffle), which holds for ~98 % of assigns.
        let variables = 10_000;
        let (assign, dereference) = cspa(variables, 3_600, 11_000, 5).unwrap();
        let mut rng = Rng(5);
        // Replay the function layout to get the shuffle the generator used.
        let largest = 2 * cspa_model::MEAN_FUNCTION_VARS - cspa_model::MIN_FUNCTION_VARS;
        let mut first = 0;
        while first < variables {
            let mut size = cspa_model::MIN_FUNCTION_VARS
                + rng.below(largest - cspa_model::MIN_FUNCTION_VARS + 1);
            if variables - first < size + cspa_model::MIN_FUNCTION_VARS {
                size = variables - first;
            }
            first += size;
        }
        let ids = shuffled(variables, &mut rng);
        let mut position = vec![0u64; variables as usize];
        for (p, id) in ids.iter().enumerate() {
            position[*id as usize] = p as u64;
        }
        let near = |facts: &Pairs| {
            facts
                .iter()
                .filter(|(a, b)| position[*a as usize].abs_diff(position[*b as usize]) < largest)
                .count() as f64
                / facts.len() as f64
        };
        assert!(near(&assign) > 0.95, "{}", near(&assign));
        assert_eq!(near(&dereference), 1.0);
    }
}
