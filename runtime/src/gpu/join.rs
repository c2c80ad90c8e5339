//! `@join_index` on the GPU (`shaders/join.wgsl`): a hash join on the equality predicates,
//! the other predicates checked on probe, count then write.
//!
//! 1. The hash table is built on the side with fewer rows (`hash.wgsl` insert); the other
//!    side probes it, so both sides end with a slot per row (the larger side's rows without
//!    a match get none).
//! 2. b's rows are bucketed by slot: a histogram and a scan of the slots give each bucket's
//!    start, and a scatter puts each row into its bucket (unordered within it), noting the
//!    largest bucket.
//! 3. `count_pairs`: each row i of a walks its bucket, checks the other predicates, counts
//!    (the order within a bucket does not matter for counting); a scan gives the output
//!    offsets and the pair count. All of this is one submission; the pair count (it sizes
//!    the output), the wrap flag and the largest bucket come back in one read.
//! 4. `write_pairs` repeats the walk and writes. Pairs come out sorted by i, then j — the
//!    CPU builtin's order: with buckets of at most [`SMALL_BUCKET`] rows each row of a sorts
//!    its own few pairs by j; with a larger bucket, the bucketed rows are first sorted by
//!    slot with a stable radix sort (log2(slots) bits), so each bucket lists its rows
//!    ascending and the walk needs no sort.
//!
//! Without other predicates every candidate is a pair: `count_pairs` takes a bucket's size
//! without walking it, and with sorted buckets (or all pairs) `write_expanded` writes one
//! pair per invocation, finding its row by a binary search over the offsets, so a row of a
//! with a bucket of thousands of rows (a nation's customers) is not one invocation's
//! serial walk.
//!
//! Without an equality predicate every pair is a candidate (as on the CPU).

use super::buffer::GpuBuffer;
use super::compact::element_workgroups;
use super::device::Device;
use super::error::{GpuError, Result};
use super::hash::{record_count_slots, record_insert, record_probe, record_scatter_slots};
use super::keys::{check_len, params, record_keys, unused, KeyMatrix};
use super::pipeline::{BindingKind, Commands, KernelSpec};
use super::scan::{record_scan, SUM_VALUES};
use super::sort::radix_sort_u32_below;
use super::template::{rendered, workgroup_size_text};
use crate::builtin::Builtin;

/// `shaders/join.wgsl`.
pub const JOIN_WGSL: &str = include_str!("../../../shaders/join.wgsl");

/// The join module, specialised (rendered once).
pub fn join_source() -> Result<&'static str> {
    rendered(
        "join.wgsl",
        JOIN_WGSL,
        &[("WORKGROUP_SIZE", &workgroup_size_text())],
    )
}

const JOIN_BINDINGS: &[BindingKind] = &[
    BindingKind::Uniform,
    BindingKind::StorageRead,
    BindingKind::StorageRead,
    BindingKind::StorageRead,
    BindingKind::StorageRead,
    BindingKind::StorageRead,
    BindingKind::StorageRead,
    BindingKind::StorageReadWrite,
    BindingKind::StorageReadWrite,
    BindingKind::StorageReadWrite,
];

/// The shader's operator code of a comparison builtin.
pub fn check_op(op: Builtin) -> Option<u32> {
    Some(match op {
        Builtin::Eq => 0,
        Builtin::Neq => 1,
        Builtin::Lt => 2,
        Builtin::Gt => 3,
        Builtin::Leq => 4,
        Builtin::Geq => 5,
        _ => return None,
    })
}

/// The keys of one join: equality key matrices of both sides (same word layout, `None`
/// without equality predicates), and the check key matrices with one operator per column.
pub struct JoinKeys {
    pub equal: Option<(KeyMatrix, KeyMatrix)>,
    pub checks: Option<(KeyMatrix, KeyMatrix)>,
    pub check_ops: Vec<Builtin>,
    pub rows_a: usize,
    pub rows_b: usize,
}

/// The matching pairs, sorted by a then b: `pairs` of them, as the i64 row indexes the
/// builtin returns, each a pair of u32 words (low, then high, which is 0): pair k is
/// `a[2k]`, `b[2k]`.
#[derive(Debug)]
pub struct JoinPairs {
    pub pairs: usize,
    pub a: GpuBuffer<u32>,
    pub b: GpuBuffer<u32>,
}

fn unsupported(message: String) -> GpuError {
    GpuError::Unsupported {
        what: "@join_index".to_string(),
        message,
    }
}

/// Buckets of at most this many rows are bucketed by a scatter, unordered, and each row of
/// a sorts its own pairs by b's row as it writes them; a larger bucket makes the join sort
/// the bucketed rows by slot instead (a stable radix sort), as a sorted walk needs no
/// per-row sort.
pub const SMALL_BUCKET: u32 = 64;

/// Runs the join: one submission up to the pair count, one read-back (the count, the wrap
/// flag and the largest bucket together), then the write.
pub fn join_index(device: &Device, keys: &JoinKeys) -> Result<JoinPairs> {
    let (rows_a, rows_b) = (keys.rows_a, keys.rows_b);
    let mut commands = Commands::new(device, "@join_index");
    // Candidates: per row of a, its slot; per slot, its range of bucketed b rows.
    let equality = match &keys.equal {
        Some((ea, eb)) => {
            let (slot_a, slot_b, capacity) = if rows_b <= rows_a {
                let table = record_insert(&mut commands, "@join_index", eb)?;
                let slot_a = record_probe(&mut commands, &table, eb, ea)?;
                (slot_a, table.slots, table.capacity)
            } else {
                let table = record_insert(&mut commands, "@join_index", ea)?;
                let slot_b = record_probe(&mut commands, &table, ea, eb)?;
                (table.slots, slot_b, table.capacity)
            };
            let counts = record_count_slots(&mut commands, &slot_b, capacity)?;
            let start = record_scan(&mut commands, counts.raw(), capacity, SUM_VALUES)?;
            let (bucketed, largest) =
                record_scatter_slots(&mut commands, &slot_b, &counts, &start)?;
            Some(Buckets {
                slot_a,
                slot_b,
                capacity,
                start,
                bucketed,
                largest,
            })
        }
        None => None,
    };

    let mut check_words = Vec::new();
    if let Some((ca, _)) = &keys.checks {
        for (&op, &(first, count)) in keys.check_ops.iter().zip(&ca.columns) {
            let code =
                check_op(op).ok_or_else(|| unsupported(format!("@{op} is not a comparison")))?;
            check_words.extend([code, check_len("@join_index", first)?, count as u32]);
        }
    }
    let num_checks = check_words.len() / 3;
    if check_words.is_empty() {
        check_words.push(0);
    }
    let check_words = device.upload("join checks", &check_words)?;
    let (dummy_a, dummy_b) = (unused(device)?, unused(device)?);
    let (check_a, check_b) = match &keys.checks {
        Some((ca, cb)) => (ca.words.raw(), cb.words.raw()),
        None => (dummy_a.raw(), dummy_b.raw()),
    };
    let no_buckets = [unused(device)?, unused(device)?, unused(device)?];
    let (slot_a, bucket_start, bucketed) = match &equality {
        Some(b) => (b.slot_a.raw(), b.start.raw(), b.bucketed.raw()),
        None => (
            no_buckets[0].raw(),
            no_buckets[1].raw(),
            no_buckets[2].raw(),
        ),
    };

    let source = join_source()?;
    let pipeline = |entry: &str| {
        device.pipeline(&KernelSpec {
            label: &format!("join.{entry}"),
            source,
            entry_point: entry,
            constants: &[],
            bindings: JOIN_BINDINGS,
        })
    };
    let join_params = |sort_runs: bool, pairs: usize| -> Result<crate::gpu::Uniform> {
        params(
            device,
            "join params",
            [
                check_len("@join_index", rows_a)?,
                check_len("@join_index", rows_b)?,
                u32::from(equality.is_none()),
                num_checks as u32,
                u32::from(sort_runs),
                check_len("@join_index", pairs)?,
                0,
                0,
            ],
        )
    };
    let uniform = join_params(false, 0)?;
    // count_pairs writes every row's count: no clear.
    let counts = device.scratch::<u32>("join counts", rows_a)?;
    let (unused_a, unused_b) = (unused(device)?, unused(device)?);
    commands.dispatch(
        &*pipeline("count_pairs")?,
        &[
            &uniform,
            slot_a,
            bucket_start,
            bucketed,
            check_a,
            check_b,
            check_words.raw(),
            counts.raw(),
            unused_a.raw(),
            unused_b.raw(),
        ],
        element_workgroups(rows_a),
    )?;
    let offsets = record_scan(&mut commands, counts.raw(), rows_a, SUM_VALUES)?;
    // Word 0: the wrap flag (check_wrap writes it); 1: the pair count; 2: the largest
    // bucket.
    let facts = device.zeroed::<u32>("join facts", 3)?;
    // Fewer than 2^32 candidate pairs in all cannot wrap: no check needed.
    let may_wrap = (rows_a as u64).saturating_mul(rows_b as u64) > u64::from(u32::MAX);
    if may_wrap {
        commands.dispatch(
            &*pipeline("check_wrap")?,
            &[
                &uniform,
                slot_a,
                bucket_start,
                bucketed,
                check_a,
                check_b,
                check_words.raw(),
                offsets.raw(),
                facts.raw(),
                unused_b.raw(),
            ],
            element_workgroups(rows_a),
        )?;
    }
    commands.copy_bytes(offsets.raw(), rows_a as u64 * 4, facts.raw(), 4, 4)?;
    if let Some(b) = &equality {
        commands.copy_bytes(b.largest.raw(), 0, facts.raw(), 8, 4)?;
    }
    commands.submit()?;
    let facts = device.download(&facts)?;
    if facts.first().copied().unwrap_or(0) != 0 {
        return Err(unsupported(
            "the join has more than 2^32 pairs, more than u32 indexes can hold".to_string(),
        ));
    }
    let total = facts.get(1).copied().unwrap_or(0) as usize;
    if total > super::buffer::MAX_ELEMENTS / 2 {
        return Err(unsupported(format!(
            "{total} pairs, more than a GPU buffer can index"
        )));
    }
    // Every word is written (the high words as 0): no clear.
    let out_a = device.scratch::<u32>("join pairs a", 2 * total)?;
    let out_b = device.scratch::<u32>("join pairs b", 2 * total)?;
    if total > 0 {
        // Small buckets: each row of a sorts its own pairs. A large one: the bucketed rows
        // are sorted by slot first (stable), so every walk is in b's order already.
        let largest = facts.get(2).copied().unwrap_or(0);
        let sorted = match &equality {
            Some(b) if largest > SMALL_BUCKET => Some(sorted_buckets(device, b)?),
            _ => None,
        };
        let bucketed = sorted.as_ref().map_or(bucketed, |s| s.raw());
        let uniform = join_params(equality.is_some() && sorted.is_none(), total)?;
        // Without other predicates every candidate is a pair: with the candidates in b's
        // order (sorted buckets, or all pairs) each pair is written by an invocation of its
        // own, so a large bucket is not written by one invocation alone.
        let expanded = num_checks == 0 && (equality.is_none() || sorted.is_some());
        let (entry, invocations) = if expanded {
            ("write_expanded", total)
        } else {
            ("write_pairs", rows_a)
        };
        let mut commands = Commands::new(device, "join write");
        commands.dispatch(
            &*pipeline(entry)?,
            &[
                &uniform,
                slot_a,
                bucket_start,
                bucketed,
                check_a,
                check_b,
                check_words.raw(),
                offsets.raw(),
                out_a.raw(),
                out_b.raw(),
            ],
            element_workgroups(invocations),
        )?;
        commands.submit()?;
    }
    Ok(JoinPairs {
        pairs: total,
        a: out_a,
        b: out_b,
    })
}

/// The hash buckets of b's rows: `bucketed[start[s] .. start[s + 1]]` are the rows of slot
/// `s` (unordered), `largest` holds the largest bucket's size.
struct Buckets {
    slot_a: GpuBuffer<u32>,
    slot_b: GpuBuffer<u32>,
    capacity: usize,
    start: GpuBuffer<u32>,
    bucketed: GpuBuffer<u32>,
    largest: GpuBuffer<u32>,
}

/// b's rows sorted by slot, stably (ascending within each bucket), rows without a slot last:
/// the same buckets as `b.bucketed`, each in b's order.
fn sorted_buckets(device: &Device, b: &Buckets) -> Result<GpuBuffer<u32>> {
    let rows_b = b.slot_b.len();
    // b rows without a slot sort after every bucket (key = capacity).
    let sort_keys = device.scratch::<u32>("join bucket keys", rows_b)?;
    let aux = unused(device)?;
    let mut commands = Commands::new(device, "join bucket keys");
    let values = [
        check_len("@join_index", rows_b)?,
        0,
        check_len("@join_index", b.capacity)?,
        0,
        0,
        0,
        0,
        0,
    ];
    record_keys(
        &mut commands,
        "clamp_to",
        values,
        b.slot_b.raw(),
        aux.raw(),
        sort_keys.raw(),
        rows_b,
    )?;
    commands.submit()?;
    // The keys are at most the capacity: no read-back of their bits.
    let largest = check_len("@join_index", b.capacity)?;
    Ok(radix_sort_u32_below(device, &sort_keys, Some(largest))?.permutation)
}
