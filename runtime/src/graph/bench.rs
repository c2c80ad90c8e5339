//! The graph benchmark behind `horsec bench --graph …`: shortest-path lengths for random
//! pairs on generated LDBC-sized graphs, the GPU IBFS kernel beside the multi-threaded CPU
//! MS-BFS in the same run, checking that they agree.
//!
//! Self-contained: the graph comes from the seeded generator ([`super::generate`]) and the
//! pairs from a seeded ChaCha8 stream, so two machines benchmark the same searches.

use std::io::Write;
use std::time::{Duration, Instant};

use rand::rngs::ChaCha8Rng;
use rand::{Rng, SeedableRng};

use crate::bail;
use crate::error::{Result, RuntimeError};
use crate::gpu::Device;
use crate::graph::generate::Preset;
use crate::graph::gpu::{GpuGraph, GpuOptions, SearchStats};
use crate::graph::{msbfs, Csr};

/// What to measure.
#[derive(Clone, Debug)]
pub struct GraphBench {
    /// Graph sizes.
    pub presets: Vec<Preset>,
    /// Random pairs per search.
    pub pair_counts: Vec<usize>,
    /// Timed repetitions per measurement (the median is reported).
    pub runs: usize,
    /// Seed of the graph and of the pairs.
    pub seed: u64,
    /// GPU tuning (the defaults unless given).
    pub gpu: GpuOptions,
}

/// A preset by the names the command line accepts: `SF1`, `sf10`, `ldbc-sf100`.
pub fn preset_named(name: &str) -> Option<Preset> {
    let lower = name.trim().to_ascii_lowercase();
    let full = if lower.starts_with("ldbc-") {
        lower
    } else {
        format!("ldbc-{lower}")
    };
    Preset::named(&full)
}

/// `count` random (source, destination) pairs over `vertices` vertices.
pub fn random_pairs(vertices: usize, count: usize, seed: u64) -> (Vec<i64>, Vec<i64>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let bound = vertices.max(1) as u64;
    (0..count)
        .map(|_| {
            let s = (rng.next_u64() % bound) as i64;
            let d = (rng.next_u64() % bound) as i64;
            (s, d)
        })
        .unzip()
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times.get(times.len() / 2).copied().unwrap_or_default()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn io_error(e: std::io::Error) -> RuntimeError {
    RuntimeError::new(format!("writing the benchmark report: {e}"))
}

/// Runs the benchmark, writing a report to `out`. Fails if the GPU and CPU answers differ.
pub fn run(config: &GraphBench, out: &mut dyn Write) -> Result<()> {
    if config.runs == 0 {
        bail!("--runs must be at least 1");
    }
    let device = Device::new()
        .map_err(|e| RuntimeError::new(format!("the GPU benchmark needs a GPU: {e}")))?;
    writeln!(out, "device: {}", device.describe()).map_err(io_error)?;
    writeln!(
        out,
        "cpu: MS-BFS on {} rayon threads; runs: {} (median); seed: {}",
        rayon::current_num_threads(),
        config.runs,
        config.seed
    )
    .map_err(io_error)?;
    for preset in &config.presets {
        let start = Instant::now();
        let (src, dst) = preset.generate(config.seed)?;
        let graph = Csr::from_edges(&src, &dst, preset.vertices)?;
        drop((src, dst));
        let generated = start.elapsed();
        let start = Instant::now();
        let resident = GpuGraph::upload(&device, &graph)?;
        device
            .wait_idle()
            .map_err(|e| RuntimeError::new(format!("GPU: {e}")))?;
        let uploaded = start.elapsed();
        writeln!(
            out,
            "\n{}: {} vertices, {} edges (generated + CSR in {:.0} ms; GPU upload incl. reverse graph and pipelines {:.0} ms)",
            preset.name,
            graph.vertex_count(),
            graph.edge_count(),
            ms(generated),
            ms(uploaded)
        )
        .map_err(io_error)?;
        writeln!(
            out,
            "{:>8} {:>12} {:>12} {:>8} {:>6} {:>8} {:>7} {:>9} {:>10}",
            "pairs",
            "cpu ms",
            "gpu ms",
            "speedup",
            "omega",
            "batches",
            "levels",
            "bottom-up",
            "reachable"
        )
        .map_err(io_error)?;
        for &count in &config.pair_counts {
            let seed = config.seed ^ (count as u64).rotate_left(32);
            let (sources, destinations) = random_pairs(graph.vertex_count(), count, seed);
            // Warm-up runs (first-touch allocations, thread pool, driver caches), whose
            // answers are compared.
            let cpu = msbfs::shortest_path_lengths(&graph, &sources, &destinations)?;
            let (gpu, stats) =
                resident.search("@shortest_path_length", &sources, &destinations, config.gpu)?;
            if let Some(i) = (0..count).find(|&i| cpu[i] != gpu[i]) {
                bail!(
                    "{} with {count} pairs: GPU and CPU disagree on pair {i} ({} -> {}): GPU {}, CPU {}",
                    preset.name,
                    sources[i],
                    destinations[i],
                    gpu[i],
                    cpu[i]
                );
            }
            let mut cpu_times = Vec::with_capacity(config.runs);
            let mut gpu_times = Vec::with_capacity(config.runs);
            let mut last_stats = SearchStats::default();
            for _ in 0..config.runs {
                let start = Instant::now();
                let lengths = msbfs::shortest_path_lengths(&graph, &sources, &destinations)?;
                cpu_times.push(start.elapsed());
                if lengths != cpu {
                    bail!("{}: the CPU search is not deterministic", preset.name);
                }
                let start = Instant::now();
                let (lengths, stats) = resident.search(
                    "@shortest_path_length",
                    &sources,
                    &destinations,
                    config.gpu,
                )?;
                gpu_times.push(start.elapsed());
                if lengths != cpu {
                    bail!("{}: a timed GPU run disagrees with the CPU", preset.name);
                }
                last_stats = stats;
            }
            let stats = if last_stats == SearchStats::default() {
                stats
            } else {
                last_stats
            };
            let (cpu_ms, gpu_ms) = (ms(median(cpu_times)), ms(median(gpu_times)));
            writeln!(
                out,
                "{:>8} {:>12.2} {:>12.2} {:>7.1}x {:>6} {:>8} {:>7} {:>9} {:>10}",
                count,
                cpu_ms,
                gpu_ms,
                cpu_ms / gpu_ms.max(1e-9),
                stats.lanes,
                stats.batches,
                stats.levels,
                stats.bottom_up_levels,
                cpu.iter().filter(|&&l| l >= 0).count()
            )
            .map_err(io_error)?;
            out.flush().map_err(io_error)?;
        }
    }
    writeln!(out, "\nGPU and CPU answers agree on every search.").map_err(io_error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_by_short_names() {
        assert_eq!(preset_named("SF10").map(|p| p.vertices), Some(70_800));
        assert_eq!(preset_named("ldbc-sf1").map(|p| p.vertices), Some(10_600));
        assert!(preset_named("SF3").is_none());
    }

    #[test]
    fn pairs_are_seeded() {
        assert_eq!(random_pairs(100, 5, 1), random_pairs(100, 5, 1));
        assert_ne!(random_pairs(100, 5, 1), random_pairs(100, 5, 2));
        assert!(random_pairs(100, 50, 3)
            .0
            .iter()
            .all(|&v| (0..100).contains(&v)));
    }
}
