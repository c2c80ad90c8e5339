//! The reachability-index benchmark behind `horsec bench --reach …`: on one generated graph
//! and one set of random pairs, the index build on the GPU and on the CPU, the index size,
//! `@reachable` through the index and plain `@reachable` (IBFS / MS-BFS) on both backends,
//! and the share of pairs the labels settle alone. Every answer is checked against the
//! others; a disagreement is an error.
//!
//! The CPU build runs Tarjan's components and the condensation on one thread and the `d`
//! labels on `d` threads (each label is one sequential depth-first traversal); CPU queries
//! run on every rayon thread.

use std::io::Write;
use std::time::{Duration, Instant};

use crate::bail;
use crate::error::{Result, RuntimeError};
use crate::gpu::Device;
use crate::graph::bench::random_pairs;
use crate::graph::gpu::{GpuGraph, GpuOptions};
use crate::graph::grail::{Filtered, ReachIndex};
use crate::graph::grail_gpu::{GpuReachIndex, GrailKernels};
use crate::graph::{msbfs, reach_generate, Csr};

/// Which generated graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReachGraph {
    /// [`reach_generate::random_dag`].
    RandomDag,
    /// [`reach_generate::citation_dag`].
    Citation,
    /// [`reach_generate::clustered_graph`] with one cluster per 1000 vertices.
    Clustered,
}

impl ReachGraph {
    /// By the names the command line accepts: `dag`, `citation`, `clustered`.
    pub fn named(name: &str) -> Option<ReachGraph> {
        match name.trim().to_ascii_lowercase().as_str() {
            "dag" | "random-dag" => Some(ReachGraph::RandomDag),
            "citation" | "citations" => Some(ReachGraph::Citation),
            "clustered" | "scc" => Some(ReachGraph::Clustered),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ReachGraph::RandomDag => "random DAG",
            ReachGraph::Citation => "citation DAG",
            ReachGraph::Clustered => "clustered graph",
        }
    }
}

/// What to measure.
#[derive(Clone, Debug)]
pub struct ReachBench {
    pub graph: ReachGraph,
    pub vertices: usize,
    /// Average out-degree (edges = vertices · degree).
    pub degree: usize,
    /// Labels per component (1 to 8).
    pub labels: usize,
    /// Random pairs queried.
    pub pairs: usize,
    /// Pairs given to plain `@reachable` (a prefix of the pairs; at most `pairs`), which can
    /// be slow on large graphs.
    pub plain_pairs: usize,
    /// Hub components for the indexed GPU queries (0: labels alone).
    pub hubs: usize,
    /// Timed repetitions (the median is reported).
    pub runs: usize,
    pub seed: u64,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times.get(times.len() / 2).copied().unwrap_or_default()
}

fn io_error(e: std::io::Error) -> RuntimeError {
    RuntimeError::new(format!("writing the benchmark report: {e}"))
}

/// Runs `f` `runs` times; the median time and the last result.
fn timed<T>(runs: usize, mut f: impl FnMut() -> Result<T>) -> Result<(Duration, T)> {
    let mut times = Vec::with_capacity(runs);
    let mut last = None;
    for _ in 0..runs.max(1) {
        let start = Instant::now();
        let value = f()?;
        times.push(start.elapsed());
        last = Some(value);
    }
    match last {
        Some(value) => Ok((median(times), value)),
        None => bail!("no run"),
    }
}

fn check(what: &str, got: &[bool], want: &[bool]) -> Result<()> {
    if let Some(i) = (0..want.len()).find(|&i| got.get(i) != want.get(i)) {
        bail!("{what} disagrees on pair {i}");
    }
    Ok(())
}

/// Runs the benchmark, writing the report to `out`.
pub fn run(config: &ReachBench, out: &mut dyn Write) -> Result<()> {
    if config.runs == 0 {
        bail!("--runs must be at least 1");
    }
    let device = Device::new()
        .map_err(|e| RuntimeError::new(format!("the GPU benchmark needs a GPU: {e}")))?;
    let say = |out: &mut dyn Write, line: String| -> Result<()> {
        writeln!(out, "{line}").map_err(io_error)?;
        out.flush().map_err(io_error)
    };
    say(out, format!("device: {}", device.describe()))?;
    say(
        out,
        format!(
            "cpu: {} rayon threads; runs: {} (median); seed: {}",
            rayon::current_num_threads(),
            config.runs,
            config.seed
        ),
    )?;
    let start = Instant::now();
    let n = config.vertices;
    let (src, dst) = match config.graph {
        ReachGraph::RandomDag => reach_generate::random_dag(n, config.degree, config.seed)?,
        ReachGraph::Citation => reach_generate::citation_dag(n, config.degree, config.seed)?,
        ReachGraph::Clustered => {
            reach_generate::clustered_graph(n, config.degree, (n / 1000).max(1), config.seed)?
        }
    };
    let graph = Csr::from_edges(&src, &dst, n)?;
    drop((src, dst));
    say(
        out,
        format!(
            "\n{}: {} vertices, {} edges (generated + CSR in {:.0} ms); {} labels",
            config.graph.name(),
            graph.vertex_count(),
            graph.edge_count(),
            ms(start.elapsed()),
            config.labels
        ),
    )?;

    // Builds.
    let start = Instant::now();
    let kernels = GrailKernels::new(&device)?;
    let pipelines = start.elapsed();
    let (gpu_build, gpu_index) = timed(config.runs, || {
        GpuReachIndex::build(&device, &kernels, &graph, config.labels)
    })?;
    let (cpu_build, cpu_index) = timed(config.runs, || ReachIndex::build(&graph, config.labels))?;
    say(
        out,
        format!(
            "components: {} (GPU) / {} (CPU); DAG edges: {}; GPU build: {:?}",
            gpu_index.component_count(),
            cpu_index.component_count(),
            gpu_index.dag_edge_count(),
            gpu_index.stats
        ),
    )?;
    if gpu_index.component_count() != cpu_index.component_count() {
        bail!("the GPU and CPU builds found different component counts");
    }
    say(
        out,
        format!(
            "index build: GPU {:.1} ms (upload included; pipelines {:.0} ms apart), CPU {:.1} ms: {:.1}x",
            ms(gpu_build),
            ms(pipelines),
            ms(cpu_build),
            ms(cpu_build) / ms(gpu_build).max(1e-9)
        ),
    )?;
    say(
        out,
        format!(
            "index size: {:.1} MiB (components {} + DAG CSR {} + labels {} u32 words; the graph itself: {:.1} MiB)",
            gpu_index.size_bytes() as f64 / (1 << 20) as f64,
            gpu_index.vertex_count(),
            gpu_index.component_count() + 1 + gpu_index.dag_edge_count(),
            2 * config.labels * gpu_index.component_count(),
            (4 * (graph.vertex_count() + 1 + graph.edge_count())) as f64 / (1 << 20) as f64
        ),
    )?;

    // Queries.
    let (sources, destinations) = random_pairs(n, config.pairs, config.seed ^ 0x5eed);
    let options = GpuOptions::default();
    let (gpu_query, (gpu_answers, stats)) = timed(config.runs, || {
        gpu_index.reachable_with_hubs(&sources, &destinations, options, config.hubs)
    })?;
    let (cpu_query, cpu_answers) =
        timed(config.runs, || cpu_index.reachable(&sources, &destinations))?;
    check(
        "the CPU index against the GPU index",
        &cpu_answers,
        &gpu_answers,
    )?;
    let cpu_settled = cpu_index
        .component_pairs("@reachable", &sources, &destinations)?
        .iter()
        .filter(|&&(a, b)| cpu_index.filter(a, b) != Filtered::Search)
        .count();
    let reachable = gpu_answers.iter().filter(|&&r| r).count();
    let pairs = config.pairs.max(1) as f64;
    say(
        out,
        format!(
            "\n{} pairs, {} reachable ({:.1} %); settled by labels alone: {:.1} % (GPU labels), {:.1} % (CPU labels); by {} hubs: {:.1} % more (their reach sets: {} levels); pruned search of the other {:.1} %: {} batches, {} levels ({} bottom-up)",
            config.pairs,
            reachable,
            100.0 * reachable as f64 / pairs,
            100.0 * stats.settled_by_labels as f64 / pairs,
            100.0 * cpu_settled as f64 / pairs,
            stats.hubs,
            100.0 * stats.settled_by_hubs as f64 / pairs,
            stats.hub_search.levels,
            100.0 * (config.pairs - stats.settled_by_labels - stats.settled_by_hubs) as f64 / pairs,
            stats.search.batches,
            stats.search.levels,
            stats.search.bottom_up_levels
        ),
    )?;
    say(
        out,
        format!(
            "@reachable with the index: GPU {:.1} ms, CPU {:.1} ms",
            ms(gpu_query),
            ms(cpu_query)
        ),
    )?;

    // Plain searches on the graph, on a prefix of the same pairs.
    let plain = config.plain_pairs.min(config.pairs);
    if plain > 0 {
        let (s, t) = (&sources[..plain], &destinations[..plain]);
        let start = Instant::now();
        let resident = GpuGraph::upload(&device, &graph)?;
        device
            .wait_idle()
            .map_err(|e| RuntimeError::new(format!("GPU: {e}")))?;
        let upload = start.elapsed();
        let (gpu_plain, gpu_plain_answers) =
            timed(config.runs, || resident.reachable(s, t, options))?;
        check(
            "plain GPU @reachable against the index",
            &gpu_plain_answers,
            &gpu_answers[..plain],
        )?;
        let (cpu_plain, cpu_plain_answers) = timed(config.runs, || msbfs::reachable(&graph, s, t))?;
        check(
            "plain CPU @reachable against the index",
            &cpu_plain_answers,
            &gpu_answers[..plain],
        )?;
        let scale = config.pairs as f64 / plain as f64;
        say(
            out,
            format!(
                "plain @reachable on {plain} of the pairs: GPU IBFS {:.1} ms (graph upload {:.0} ms apart), CPU MS-BFS {:.1} ms",
                ms(gpu_plain),
                ms(upload),
                ms(cpu_plain)
            ),
        )?;
        say(
            out,
            format!(
                "per {} pairs (plain times scaled by {scale:.1}): index GPU {:.1} ms vs plain GPU {:.1} ms ({:.1}x); index CPU {:.1} ms vs plain CPU {:.1} ms ({:.1}x)",
                config.pairs,
                ms(gpu_query),
                ms(gpu_plain) * scale,
                ms(gpu_plain) * scale / ms(gpu_query).max(1e-9),
                ms(cpu_query),
                ms(cpu_plain) * scale,
                ms(cpu_plain) * scale / ms(cpu_query).max(1e-9),
            ),
        )?;
    }
    say(out, "\nall answers agree.".to_string())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn graph_kinds_by_name() {
        assert_eq!(ReachGraph::named("DAG"), Some(ReachGraph::RandomDag));
        assert_eq!(ReachGraph::named("citation"), Some(ReachGraph::Citation));
        assert_eq!(ReachGraph::named("clustered"), Some(ReachGraph::Clustered));
        assert_eq!(ReachGraph::named("grid"), None);
    }
}
