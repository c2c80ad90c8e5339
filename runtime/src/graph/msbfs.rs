//! Bit-parallel multi-source breadth-first search (MS-BFS, as in Then et al., "The More the
//! Merrier", VLDB 2015; the GPU's IBFS is the same idea): answers `@shortest_path_length` and
//! `@reachable` for many (source, destination) pairs at once.
//!
//! How it works:
//! - Pairs are grouped by source, so pairs that share a source share one search, and a pair
//!   whose source is its destination is answered (0) without searching.
//! - Distinct sources go in batches of ω = 64·W concurrent searches ("lanes"). Every vertex
//!   holds three bitsets of W words: `seen` (lanes that have reached it), `frontier` (lanes
//!   that reached it at the previous level) and `next` (lanes that reach it at this level).
//!   One pass over the edges advances all the lanes of a batch by one level, with word-wide
//!   ORs, so searches that overlap (as they do in small-world graphs) share memory traffic.
//! - After each level, the lanes whose destinations have just been seen get their answers.
//!   A lane whose destinations are all answered drops out of the `active` mask and stops
//!   costing work; the batch stops when no lane is active or the frontier is empty.
//! - Direction-optimizing (Beamer et al., SC 2012): while the frontier is small, a level goes
//!   top-down (push the frontier's bits along out-edges); once the frontier's out-edges are a
//!   large share of the graph, it goes bottom-up (every vertex some active lane has not seen
//!   gathers the frontier bits of its in-neighbours, stopping once it has all it can get),
//!   which needs the reverse graph: built once per call, only if some level wants it.
//! - Batches run in parallel on the rayon pool, each thread with its own bitsets.
//!
//! The per-level vertex lists (`discovered`) keep top-down levels and the resets between
//! batches proportional to the vertices actually visited, so long thin graphs (paths) stay
//! linear rather than paying O(n) per level.

use std::sync::OnceLock;

use rayon::prelude::*;

use crate::bail;
use crate::error::Result;
use crate::graph::csr::{vertex_index, Csr};

/// Which way levels expand.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Direction {
    /// Top-down while the frontier is small, bottom-up while it is large.
    #[default]
    Auto,
    /// Always push the frontier along out-edges.
    TopDown,
    /// Always pull from in-neighbours (every level scans all vertices).
    BottomUp,
}

/// Tuning knobs of the search. The answers never depend on them; tests use them to exercise
/// every code path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    pub direction: Direction,
    /// Lanes per batch in 64-bit words (ω = 64·W): 1, 2, 4 or 8; other values round up to
    /// the next of these (8 at most). 0 chooses from the number of sources, the thread count
    /// and the graph size.
    pub lane_words: usize,
}

/// For each pair `i`, the number of edges on a shortest path from `sources[i]` to
/// `destinations[i]` in `graph`: 0 when they are equal, -1 when the destination cannot be
/// reached (the semantics of `@shortest_path_length`).
pub fn shortest_path_lengths(
    graph: &Csr,
    sources: &[i64],
    destinations: &[i64],
) -> Result<Vec<i64>> {
    search(
        "@shortest_path_length",
        graph,
        sources,
        destinations,
        Options::default(),
    )
}

/// [`shortest_path_lengths`] with explicit [`Options`].
pub fn shortest_path_lengths_with(
    graph: &Csr,
    sources: &[i64],
    destinations: &[i64],
    options: Options,
) -> Result<Vec<i64>> {
    search(
        "@shortest_path_length",
        graph,
        sources,
        destinations,
        options,
    )
}

/// For each pair `i`, whether `destinations[i]` can be reached from `sources[i]` (every vertex
/// reaches itself): the semantics of `@reachable`.
pub fn reachable(graph: &Csr, sources: &[i64], destinations: &[i64]) -> Result<Vec<bool>> {
    let lengths = search(
        "@reachable",
        graph,
        sources,
        destinations,
        Options::default(),
    )?;
    Ok(lengths.into_iter().map(|length| length >= 0).collect())
}

/// The largest batch: 8 words, 512 lanes.
const MAX_LANE_WORDS: usize = 8;
/// The widest batch chosen automatically: 4 words, 256 lanes. Wider batches read each edge
/// list for more searches, but their bitsets fall out of cache: on LDBC-like graphs of 70 k
/// and 488 k vertices, 4 words beat 8 by 15–60 % and were within noise of 2.
const MAX_AUTO_LANE_WORDS: usize = 4;
/// Bitset memory one thread may use (three bitsets of W words per vertex) before batches
/// get narrower.
const SCRATCH_BUDGET_BYTES: usize = 256 << 20;
/// A level goes bottom-up when the frontier's out-edges exceed this share (1/x) of all edges.
const BOTTOM_UP_EDGE_SHARE: usize = 16;

/// The searches of one batch: lane `l` searches from `sources[l]`; each pending target is
/// (destination vertex, lane, pair position).
struct Batch {
    sources: Vec<usize>,
    targets: Vec<Target>,
}

#[derive(Clone, Copy)]
struct Target {
    vertex: usize,
    lane: usize,
    pair: usize,
}

fn search(
    builtin: &str,
    graph: &Csr,
    sources: &[i64],
    destinations: &[i64],
    options: Options,
) -> Result<Vec<i64>> {
    let n = graph.vertex_count();
    if sources.len() != destinations.len() {
        bail!(
            "{builtin}: {} sources but {} destinations",
            sources.len(),
            destinations.len()
        );
    }
    let mut lengths = vec![-1i64; sources.len()];
    // (source, destination, pair position) of every pair that needs a search.
    let mut open = Vec::new();
    for (pair, (&source, &destination)) in sources.iter().zip(destinations).enumerate() {
        let Some(source) = vertex_index(source, n) else {
            bail!("{builtin}: pair {pair} has source {source}, outside the vertices 0..{n}");
        };
        let Some(destination) = vertex_index(destination, n) else {
            bail!(
                "{builtin}: pair {pair} has destination {destination}, outside the vertices 0..{n}"
            );
        };
        if source == destination {
            lengths[pair] = 0;
        } else {
            open.push((source, destination, pair));
        }
    }
    if open.is_empty() {
        return Ok(lengths);
    }
    open.sort_unstable_by_key(|&(source, _, pair)| (source, pair));
    let distinct_sources = open.chunk_by(|a, b| a.0 == b.0).count();

    let words = lane_words(options.lane_words, distinct_sources, n);
    let lanes = 64 * words;
    let mut batches = Vec::with_capacity(distinct_sources.div_ceil(lanes));
    for group in open.chunk_by(|a, b| a.0 == b.0) {
        let fits = batches
            .last()
            .is_some_and(|batch: &Batch| batch.sources.len() < lanes);
        if !fits {
            batches.push(Batch {
                sources: Vec::with_capacity(lanes),
                targets: Vec::new(),
            });
        }
        let Some(batch) = batches.last_mut() else {
            continue; // unreachable: a batch was pushed just above
        };
        let lane = batch.sources.len();
        batch.sources.push(group[0].0);
        batch.targets.extend(
            group
                .iter()
                .map(|&(_, vertex, pair)| Target { vertex, lane, pair }),
        );
    }

    let context = Context {
        graph,
        reverse: OnceLock::new(),
        direction: options.direction,
    };
    let found: Vec<Vec<(usize, i64)>> = match words {
        1 => run_batches::<1>(&context, &batches),
        2 => run_batches::<2>(&context, &batches),
        4 => run_batches::<4>(&context, &batches),
        _ => run_batches::<8>(&context, &batches),
    };
    for (pair, length) in found.into_iter().flatten() {
        lengths[pair] = length;
    }
    Ok(lengths)
}

/// Lanes per batch in words. Automatic: enough for every thread to get a batch, wide enough
/// to share work between searches, narrow enough for the bitsets to stay in cache and within
/// the memory budget.
fn lane_words(requested: usize, distinct_sources: usize, vertex_count: usize) -> usize {
    let words = if requested == 0 {
        let threads = rayon::current_num_threads().max(1);
        let mut words = distinct_sources
            .div_ceil(64 * threads)
            .min(MAX_AUTO_LANE_WORDS);
        let bytes_per_word = 3 * 8 * vertex_count.max(1);
        while words > 1 && words * bytes_per_word > SCRATCH_BUDGET_BYTES {
            words /= 2;
        }
        words
    } else {
        requested
    };
    words.clamp(1, MAX_LANE_WORDS).next_power_of_two()
}

/// What every batch of one call shares.
struct Context<'g> {
    graph: &'g Csr,
    /// The reverse graph, built by the first batch that goes bottom-up.
    reverse: OnceLock<Csr>,
    direction: Direction,
}

impl Context<'_> {
    fn reverse(&self) -> &Csr {
        self.reverse.get_or_init(|| self.graph.transpose())
    }
}

fn run_batches<const W: usize>(context: &Context, batches: &[Batch]) -> Vec<Vec<(usize, i64)>> {
    let n = context.graph.vertex_count();
    batches
        .par_iter()
        .map_init(
            || Scratch::<W>::new(n),
            |scratch, batch| scratch.run(context, batch),
        )
        .collect()
}

type Lanes<const W: usize> = [u64; W];

#[inline]
fn is_zero<const W: usize>(bits: &Lanes<W>) -> bool {
    bits.iter().all(|&word| word == 0)
}

#[inline]
fn has_lane<const W: usize>(bits: &Lanes<W>, lane: usize) -> bool {
    bits[lane / 64] >> (lane % 64) & 1 == 1
}

#[inline]
fn set_lane<const W: usize>(bits: &mut Lanes<W>, lane: usize) {
    bits[lane / 64] |= 1 << (lane % 64);
}

/// One thread's bitsets. Between batches `frontier` and `next` are all zero and so is `seen`,
/// which each batch resets by walking the vertices it discovered.
struct Scratch<const W: usize> {
    seen: Vec<Lanes<W>>,
    frontier: Vec<Lanes<W>>,
    next: Vec<Lanes<W>>,
    /// The vertices that entered the frontier, level after level (a vertex may appear at
    /// several levels, reached by different lanes).
    discovered: Vec<usize>,
}

impl<const W: usize> Scratch<W> {
    fn new(vertex_count: usize) -> Self {
        Scratch {
            seen: vec![[0; W]; vertex_count],
            frontier: vec![[0; W]; vertex_count],
            next: vec![[0; W]; vertex_count],
            discovered: Vec::new(),
        }
    }

    /// Runs the batch's searches; returns (pair position, length) for every pair whose
    /// destination was reached.
    fn run(&mut self, context: &Context, batch: &Batch) -> Vec<(usize, i64)> {
        let graph = context.graph;
        let total_edges = graph.edge_count();
        self.discovered.clear();
        for (lane, &source) in batch.sources.iter().enumerate() {
            if is_zero(&self.frontier[source]) {
                self.discovered.push(source);
            }
            set_lane(&mut self.frontier[source], lane);
            set_lane(&mut self.seen[source], lane);
        }
        let mut pending = batch.targets.clone();
        let mut active = lanes_of(&pending);
        let mut found = Vec::with_capacity(pending.len());
        let mut level_start = 0;
        let mut level = 0i64;
        while level_start < self.discovered.len() && !pending.is_empty() {
            level += 1;
            let level_end = self.discovered.len();
            let bottom_up = match context.direction {
                Direction::TopDown => false,
                Direction::BottomUp => true,
                Direction::Auto => {
                    let frontier_edges: usize = self.discovered[level_start..level_end]
                        .iter()
                        .map(|&v| graph.adjacent(v).len())
                        .sum();
                    frontier_edges * BOTTOM_UP_EDGE_SHARE > total_edges
                }
            };
            if bottom_up {
                self.expand_bottom_up(context.reverse(), &active);
            } else {
                self.expand_top_down(graph, level_start, level_end, &active);
            }
            // The new level's bits: mark them seen, retire the old frontier, make `next` the
            // frontier.
            for &v in &self.discovered[level_start..level_end] {
                self.frontier[v] = [0; W];
            }
            self.keep_new_bits(level_end);
            std::mem::swap(&mut self.frontier, &mut self.next);
            level_start = level_end;

            let before = pending.len();
            pending.retain(|target| {
                let reached = has_lane(&self.seen[target.vertex], target.lane);
                if reached {
                    found.push((target.pair, level));
                }
                !reached
            });
            if pending.len() != before {
                active = lanes_of(&pending);
            }
        }
        // Leave the bitsets zero for the next batch.
        for &v in &self.discovered {
            self.seen[v] = [0; W];
        }
        for &v in &self.discovered[level_start..] {
            self.frontier[v] = [0; W];
        }
        found
    }

    /// Pushes the active lanes of the frontier (the vertices of `discovered[start..end]`)
    /// along out-edges into `next`, listing the vertices it touches in `discovered`.
    /// Lanes that have already seen a vertex are masked off afterwards, by
    /// [`Self::keep_new_bits`], not per edge: each edge then costs one read-modify-write of
    /// `next` instead of also a read of `seen` ("aggregated neighbour processing").
    fn expand_top_down(&mut self, graph: &Csr, start: usize, end: usize, active: &Lanes<W>) {
        for index in start..end {
            let v = self.discovered[index];
            let mut bits = self.frontier[v];
            for (bit, mask) in bits.iter_mut().zip(active) {
                *bit &= mask;
            }
            if is_zero(&bits) {
                continue;
            }
            for &u in graph.adjacent(v) {
                let next = &mut self.next[u as usize];
                if is_zero(next) {
                    self.discovered.push(u as usize);
                }
                for (word, bit) in next.iter_mut().zip(&bits) {
                    *word |= bit;
                }
            }
        }
    }

    /// Turns the vertices listed in `discovered[start..]` into the new level: keeps in `next`
    /// only the lanes that had not seen the vertex, marks those seen, and drops from the list
    /// the vertices left with none.
    fn keep_new_bits(&mut self, start: usize) {
        let mut kept = start;
        for index in start..self.discovered.len() {
            let v = self.discovered[index];
            let next = &mut self.next[v];
            let seen = &mut self.seen[v];
            let mut any = 0;
            for (word, seen_word) in next.iter_mut().zip(seen.iter_mut()) {
                *word &= !*seen_word;
                *seen_word |= *word;
                any |= *word;
            }
            if any != 0 {
                self.discovered[kept] = v;
                kept += 1;
            }
        }
        self.discovered.truncate(kept);
    }

    /// Every vertex that some active lane has not seen pulls the frontier bits of its
    /// in-neighbours (`reverse` is the reverse graph) into `next`, stopping early once it has
    /// every lane it lacks.
    fn expand_bottom_up(&mut self, reverse: &Csr, active: &Lanes<W>) {
        for u in 0..self.seen.len() {
            let mut missing = [0u64; W];
            for word in 0..W {
                missing[word] = active[word] & !self.seen[u][word];
            }
            if is_zero(&missing) {
                continue;
            }
            let mut gathered = [0u64; W];
            for &v in reverse.adjacent(u) {
                let frontier = &self.frontier[v as usize];
                let mut complete = true;
                for word in 0..W {
                    gathered[word] |= frontier[word] & missing[word];
                    complete &= gathered[word] == missing[word];
                }
                if complete {
                    break;
                }
            }
            if !is_zero(&gathered) {
                self.next[u] = gathered;
                self.discovered.push(u);
            }
        }
    }
}

/// The lanes that still have a destination to find.
fn lanes_of<const W: usize>(pending: &[Target]) -> Lanes<W> {
    let mut lanes = [0; W];
    for target in pending {
        set_lane(&mut lanes, target.lane);
    }
    lanes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::bfs;

    const ALL_OPTIONS: [Options; 6] = [
        Options {
            direction: Direction::Auto,
            lane_words: 0,
        },
        Options {
            direction: Direction::TopDown,
            lane_words: 1,
        },
        Options {
            direction: Direction::BottomUp,
            lane_words: 1,
        },
        Options {
            direction: Direction::TopDown,
            lane_words: 2,
        },
        Options {
            direction: Direction::BottomUp,
            lane_words: 4,
        },
        Options {
            direction: Direction::Auto,
            lane_words: 8,
        },
    ];

    fn lengths_every_way(graph: &Csr, sources: &[i64], destinations: &[i64]) -> Vec<i64> {
        let first = shortest_path_lengths(graph, sources, destinations).unwrap();
        for options in ALL_OPTIONS {
            let other = shortest_path_lengths_with(graph, sources, destinations, options).unwrap();
            assert_eq!(other, first, "{options:?}");
        }
        first
    }

    #[test]
    fn lengths_on_a_small_directed_graph() {
        // 0 -> 1 -> 2 -> 3, shortcut 0 -> 2, back edge 3 -> 1, vertex 4 isolated.
        let graph = Csr::from_edges(&[0, 1, 2, 0, 3], &[1, 2, 3, 2, 1], 5).unwrap();
        let sources = [0, 0, 0, 3, 1, 4, 2, 4];
        let destinations = [3, 2, 0, 2, 0, 4, 1, 0];
        assert_eq!(
            lengths_every_way(&graph, &sources, &destinations),
            vec![2, 1, 0, 2, -1, 0, 2, -1]
        );
        assert_eq!(
            reachable(&graph, &sources, &destinations).unwrap(),
            vec![true, true, true, true, false, true, true, false]
        );
    }

    #[test]
    fn no_pairs_gives_no_lengths() {
        assert_eq!(
            lengths_every_way(&Csr::empty(0), &[], &[]),
            Vec::<i64>::new()
        );
        assert_eq!(
            lengths_every_way(&Csr::empty(3), &[], &[]),
            Vec::<i64>::new()
        );
    }

    #[test]
    fn a_graph_without_edges_reaches_only_the_source_itself() {
        let graph = Csr::empty(3);
        assert_eq!(
            lengths_every_way(&graph, &[0, 0, 2, 1], &[0, 1, 2, 2]),
            vec![0, -1, 0, -1]
        );
    }

    #[test]
    fn pairs_that_share_a_source_share_a_search() {
        // A path 0 -> 1 -> ... -> 9.
        let src: Vec<i64> = (0..9).collect();
        let dst: Vec<i64> = (1..10).collect();
        let graph = Csr::from_edges(&src, &dst, 10).unwrap();
        let destinations: Vec<i64> = (0..10).rev().chain(0..10).collect();
        let sources = vec![0; destinations.len()];
        let expected: Vec<i64> = destinations.clone();
        assert_eq!(lengths_every_way(&graph, &sources, &destinations), expected);
    }

    #[test]
    fn more_distinct_sources_than_lanes_agree_with_plain_bfs() {
        // A directed cycle with chords over 1000 vertices: 1000 sources fill several batches
        // of 64 lanes.
        let n = 1000i64;
        let mut src = Vec::new();
        let mut dst = Vec::new();
        for v in 0..n {
            src.extend([v, v]);
            dst.extend([(v + 1) % n, (v * 7 + 3) % n]);
        }
        let graph = Csr::from_edges(&src, &dst, n as usize).unwrap();
        let sources: Vec<i64> = (0..n).collect();
        let destinations: Vec<i64> = (0..n).map(|v| (v * 31 + 17) % n).collect();
        let lengths = lengths_every_way(&graph, &sources, &destinations);
        for (i, &length) in lengths.iter().enumerate() {
            let distances = bfs::single_source(&graph, sources[i]).unwrap();
            assert_eq!(length, distances[destinations[i] as usize], "pair {i}");
        }
    }

    #[test]
    fn out_of_range_vertices_are_errors_naming_the_pair() {
        let graph = Csr::empty(4);
        let err = shortest_path_lengths(&graph, &[0, 4], &[1, 1]).unwrap_err();
        assert_eq!(
            err.message,
            "@shortest_path_length: pair 1 has source 4, outside the vertices 0..4"
        );
        let err = reachable(&graph, &[0, 1], &[1, -2]).unwrap_err();
        assert_eq!(
            err.message,
            "@reachable: pair 1 has destination -2, outside the vertices 0..4"
        );
        let err = shortest_path_lengths(&Csr::empty(0), &[0], &[0]).unwrap_err();
        assert!(
            err.message.contains("pair 0 has source 0"),
            "{}",
            err.message
        );
    }

    #[test]
    fn pair_columns_of_different_lengths_are_an_error() {
        let err = shortest_path_lengths(&Csr::empty(2), &[0, 1], &[1]).unwrap_err();
        assert_eq!(
            err.message,
            "@shortest_path_length: 2 sources but 1 destinations"
        );
    }

    #[test]
    fn lane_words_are_powers_of_two_up_to_eight() {
        assert_eq!(lane_words(1, 10_000, 10), 1);
        assert_eq!(lane_words(3, 10_000, 10), 4);
        assert_eq!(lane_words(100, 10_000, 10), 8);
        assert_eq!(lane_words(0, 1, 10), 1);
        assert_eq!(lane_words(0, 1_000_000, 10), MAX_AUTO_LANE_WORDS);
        // A huge graph narrows the batches to keep the bitsets within budget.
        assert_eq!(lane_words(0, 1_000_000, 100_000_000), 1);
    }

    #[test]
    fn lane_bits_address_words_and_bits() {
        let mut bits = [0u64; 2];
        set_lane(&mut bits, 0);
        set_lane(&mut bits, 65);
        assert_eq!(bits, [1, 2]);
        assert!(has_lane(&bits, 65));
        assert!(!has_lane(&bits, 64));
        assert!(!is_zero(&bits));
        assert!(is_zero(&[0u64; 2]));
    }
}
