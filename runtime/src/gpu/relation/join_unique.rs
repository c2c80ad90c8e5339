//! `@join_unique(probe, build, keys, picks[, full])` on the GPU: the distinct tuples `picks`
//! of a join, less those in `full`, without ever holding all of the join's pairs.
//!
//! A join whose pairs are mostly duplicates of each other (CSPA's `ValueAlias(x, y) :-
//! ValueFlow(z, x), ValueFlow(z, y)` pairs every two values flowing from one `z`: 8·10^8
//! pairs for far fewer distinct tuples at httpd's size) would not fit the device's buffers
//! as pairs. So, as `@sorted_join` does, one lookup per probe row in the build side's HISA
//! table gives its number of matches and first match (count), and an exclusive scan of the
//! counts numbers every pair (one submission, one read-back: the total and the checks);
//! then the pairs are taken a batch at a time, at most `batch` of them, however they fall
//! on probe rows (a probe row with more matches than a batch spans several):
//! - each pair of the batch finds its probe row by binary search over the scan and its
//!   build row from the first match (`shaders/join_batch.wgsl`), and each picked column is
//!   gathered through one of the two (one submission);
//! - the batch's tuples are sorted and deduplicated (`@tuple_unique`), those in `full` are
//!   dropped (`@tuple_diff`), and what is left is merged into the tuples of the batches
//!   before (`@tuple_merge`). The tuples found so far, and `full`, can pass one storage
//!   binding as key matrices: the diff and the merge then key them by column groups
//!   (`grouped.rs`), so a join's answer is bounded by device memory, not by one binding.
//!
//! The batch's buffers go back to the pool before the next batch takes them, so the device
//! holds one batch of pairs and the distinct tuples found so far, never all pairs.

use std::sync::Arc;

use super::super::compact::element_workgroups;
use super::super::device::Device;
use super::super::error::{GpuError, Result};
use super::super::pipeline::{BindingKind, Commands, KernelSpec};
use super::super::template::{render, workgroup_size_text};
use super::grouped::check_sorted_in_groups;
use super::{
    hisa_table, key_column_groups, record_gather_column, record_join_counts, sorted_or_error,
    tuple_diff, tuple_key_bytes, tuple_merge, tuple_unique, DeviceRelation, JoinCounts, JoinSides,
    Out, RelationError, Status,
};
use crate::relation::TOO_MANY_PAIRS;

/// `shaders/join_batch.wgsl`.
pub const JOIN_BATCH_WGSL: &str = include_str!("../../../../shaders/join_batch.wgsl");

/// Join pairs per batch unless a test sets fewer: 2^26, a batch's largest buffer (its key
/// matrix, `2 * picks` words per pair) at most half the device's storage binding limit.
pub fn join_batch_rows(device: &Device, picks: usize) -> crate::error::Result<usize> {
    let binding = device.limits().max_storage_buffer_binding_size;
    let per_pair = 8 * picks.max(1) as u64;
    let fits = (binding / 2 / per_pair).max(1);
    crate::relation::join_batch_rows((1u64 << 26).min(fits) as usize)
}

/// What the `@join_unique` calls of this thread did since the last [`take_join_stats`]:
/// the engine reports it under the step in `--time`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JoinStats {
    /// Join pairs made (over all batches).
    pub pairs: u64,
    /// Batches of pairs projected, sorted and merged.
    pub batches: u32,
}

impl JoinStats {
    /// The counters as `--time` prints them.
    pub fn fields(&self) -> [(&'static str, u64); 2] {
        [
            ("join pairs", self.pairs),
            ("batches", u64::from(self.batches)),
        ]
    }
}

thread_local! {
    static STATS: std::cell::Cell<JoinStats> = const {
        std::cell::Cell::new(JoinStats { pairs: 0, batches: 0 })
    };
}

/// The counters since the last call, which resets them.
pub fn take_join_stats() -> JoinStats {
    STATS.with(|s| s.replace(JoinStats::default()))
}

fn count_stats(pairs: usize, batches: u32) {
    STATS.with(|s| {
        let mut stats = s.get();
        stats.pairs += pairs as u64;
        stats.batches += batches;
        s.set(stats);
    });
}

/// `shaders/join_batch.wgsl`, specialised (rendered once).
fn join_batch_source() -> Result<&'static str> {
    static SOURCE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    if let Some(source) = SOURCE.get() {
        return Ok(source);
    }
    let source = render(
        "join_batch.wgsl",
        JOIN_BATCH_WGSL,
        &[("WORKGROUP_SIZE", &workgroup_size_text())],
    )?;
    Ok(SOURCE.get_or_init(|| source))
}

/// The first `keys` columns of `r`.
fn key_columns(r: &DeviceRelation, keys: usize) -> DeviceRelation {
    DeviceRelation {
        columns: r.columns[..keys].to_vec(),
        rows: r.rows,
    }
}

/// `@join_unique` on the GPU (see the module): the distinct tuples `picks` (probe column `p`
/// for `p` below the probe's arity, else build column `p - arity`) of the equi-join of the
/// first `keys` columns of `probe` and `build` (sorted on them), less those in `full`,
/// sorted. At most `batch` pairs are made at once.
pub fn join_unique(
    device: &Device,
    probe: &DeviceRelation,
    build: &DeviceRelation,
    keys: usize,
    picks: &[usize],
    full: Option<&DeviceRelation>,
    batch: usize,
) -> Out<DeviceRelation> {
    let build_keys = key_columns(build, keys);
    let kb = build_keys.keys(device, "@join_unique")?;
    // Status: 0 the build side's order, 1 full's, 2 a wrapped scan, 3 the number of pairs.
    let status = Status::new(4);
    status.check_sorted(device, &build_keys, &kb, 0, false)?;
    if let Some(full) = full {
        // `full` may be keyed by column groups (its keys past one binding): checked so,
        // and encoded only when not known sorted.
        let groups = key_column_groups(full.rows, full.arity(), tuple_key_bytes(device));
        check_sorted_in_groups(&status, device, "@join_unique", full, &groups, 1, true)?;
    }
    let checks = [(0, 1, false), (1, 4, true)];
    let arity = picks.len();
    let (rows, rows_b) = (probe.rows, build.rows);
    if rows == 0 || rows_b == 0 {
        status.sorted_or_error(device, &checks)?;
        return Ok(DeviceRelation::empty(device, arity)?.sorted());
    }
    let kp = key_columns(probe, keys).keys(device, "@join_unique")?;
    let status_words = status.words(device)?;
    let hisa = hisa_table(device, &build_keys, &kb)?;
    let (table, slots) = (&hisa.0, hisa.1);
    let mut commands = Commands::new(device, "@join_unique count");
    let JoinCounts {
        counts,
        first,
        offsets,
    } = record_join_counts(
        &mut commands,
        JoinSides {
            probe: &kp,
            build: &kb,
            table,
            slots,
            rows,
            rows_b,
        },
        status_words,
        2,
    )?;
    commands.submit()?;
    drop(counts);
    let words = status.read(device)?;
    sorted_or_error(&words, &checks)?;
    if words.get(2) != Some(&u32::MAX) {
        return Err(RelationError::Gpu(GpuError::Unsupported {
            what: "@join_unique".to_string(),
            message: TOO_MANY_PAIRS.to_string(),
        }));
    }
    let total = words.get(3).copied().unwrap_or(0) as usize;
    let batch = batch.max(1);
    let mut result: Option<DeviceRelation> = None;
    let mut batches = 0;
    let mut start = 0;
    while start < total {
        let n = batch.min(total - start);
        let pairs = batch_tuples(device, &offsets, &first, probe, build, picks, start, n)?;
        let mut fresh = tuple_unique(device, &pairs)?;
        drop(pairs);
        if let Some(full) = full {
            fresh = tuple_diff(device, &fresh, full)?;
        }
        result = Some(match result {
            None => fresh,
            Some(before) => tuple_merge(device, &before, &fresh)?,
        });
        batches += 1;
        start += n;
    }
    count_stats(total, batches);
    let result = match result {
        Some(result) => result,
        None => DeviceRelation::empty(device, arity)?.sorted(),
    };
    Ok(match full {
        Some(full) => result.without(full),
        None => result,
    })
}

/// The picked columns of pairs `start .. start + n` (not sorted, duplicates kept).
#[allow(clippy::too_many_arguments)]
fn batch_tuples(
    device: &Device,
    offsets: &super::super::buffer::GpuBuffer<u32>,
    first: &super::super::buffer::GpuBuffer<u32>,
    probe: &DeviceRelation,
    build: &DeviceRelation,
    picks: &[usize],
    start: usize,
    n: usize,
) -> Result<DeviceRelation> {
    let probe_rows = device.scratch::<u32>("join batch probe rows", n)?;
    let build_rows = device.scratch::<u32>("join batch build rows", n)?;
    let pipeline = device.pipeline(&KernelSpec {
        label: "join_batch.batch_rows",
        source: join_batch_source()?,
        entry_point: "batch_rows",
        constants: &[],
        bindings: &[
            BindingKind::Uniform,
            BindingKind::StorageRead,
            BindingKind::StorageRead,
            BindingKind::StorageReadWrite,
            BindingKind::StorageReadWrite,
        ],
    })?;
    let what = "@join_unique";
    let params: [u32; 4] = [
        super::super::keys::check_len(what, n)?,
        super::super::keys::check_len(what, probe.rows)?,
        super::super::keys::check_len(what, start)?,
        0,
    ];
    let uniform = device.uniform("join batch params", &params)?;
    let mut commands = Commands::new(device, "@join_unique batch");
    commands.dispatch(
        &pipeline,
        &[
            &uniform,
            offsets.raw(),
            first.raw(),
            probe_rows.raw(),
            build_rows.raw(),
        ],
        element_workgroups(n),
    )?;
    let arity = probe.arity();
    let columns = picks
        .iter()
        .map(|&p| {
            let (column, rows) = if p < arity {
                (&probe.columns[p], &probe_rows)
            } else {
                (&build.columns[p - arity], &build_rows)
            };
            record_gather_column(&mut commands, column, rows, n).map(Arc::new)
        })
        .collect::<Result<Vec<_>>>()?;
    commands.submit()?;
    Ok(DeviceRelation { columns, rows: n })
}
