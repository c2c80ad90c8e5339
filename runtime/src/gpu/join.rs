//! `@join_index` on the GPU (`shaders/join.wgsl`): a hash join on the equality predicates,
//! the other predicates checked on probe, count then write.
//!
//! 1. The hash table is built on the side with fewer rows (`hash.wgsl` insert); the other
//!    side probes it, so both sides end with a slot per row (the larger side's rows without
//!    a match get none).
//! 2. b's rows are bucketed by slot with a stable radix sort of their slots (log2(slots)
//!    bits), so each bucket lists its rows ascending; a histogram and a scan of the slots
//!    give each bucket's start.
//! 3. `count_pairs`: each row i of a walks its bucket, checks the other predicates, counts;
//!    a scan gives the output offsets and the pair count (read back: it sizes the output);
//!    `write_pairs` repeats the walk and writes. Pairs come out sorted by i, then j — the CPU
//!    builtin's order.
//!
//! Without an equality predicate every pair is a candidate (as on the CPU).

use super::buffer::GpuBuffer;
use super::compact::element_workgroups;
use super::device::Device;
use super::error::{GpuError, Result};
use super::hash::{count_slots, hash_insert, hash_probe};
use super::keys::{check_len, params, record_keys, unused, KeyMatrix};
use super::pipeline::{BindingKind, Commands, KernelSpec};
use super::scan::exclusive_scan;
use super::sort::radix_sort_u32;
use super::template::{render, workgroup_size_text};
use crate::builtin::Builtin;

/// `shaders/join.wgsl`.
pub const JOIN_WGSL: &str = include_str!("../../../shaders/join.wgsl");

/// The join module, specialised.
pub fn join_source() -> Result<String> {
    render(
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

/// The matching pairs: `a[k]`, `b[k]` for k < the pair count, sorted by a then b.
#[derive(Debug)]
pub struct JoinPairs {
    pub a: GpuBuffer<u32>,
    pub b: GpuBuffer<u32>,
}

fn unsupported(message: String) -> GpuError {
    GpuError::Unsupported {
        what: "@join_index".to_string(),
        message,
    }
}

/// Runs the join.
pub fn join_index(device: &Device, keys: &JoinKeys) -> Result<JoinPairs> {
    let (rows_a, rows_b) = (keys.rows_a, keys.rows_b);
    // Candidates: per row of a, its slot; per slot, its range of bucketed b rows.
    let (slot_a, bucket_start, bucketed, all_pairs) = match &keys.equal {
        Some((ea, eb)) => {
            let (slot_a, slot_b, capacity) = if rows_b <= rows_a {
                let table = hash_insert(device, "@join_index", eb)?;
                let slot_a = hash_probe(device, &table, eb, ea)?;
                (slot_a, table.slots, table.capacity)
            } else {
                let table = hash_insert(device, "@join_index", ea)?;
                let slot_b = hash_probe(device, &table, ea, eb)?;
                (table.slots, slot_b, table.capacity)
            };
            // b rows without a slot sort after every bucket (key = capacity).
            let sort_keys = device.zeroed::<u32>("join bucket keys", rows_b)?;
            let aux = unused(device)?;
            let mut commands = Commands::new(device, "join bucket keys");
            let values = [
                check_len("@join_index", rows_b)?,
                0,
                check_len("@join_index", capacity)?,
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
                slot_b.raw(),
                aux.raw(),
                sort_keys.raw(),
                rows_b,
            )?;
            commands.submit()?;
            let bucketed = radix_sort_u32(device, &sort_keys)?.permutation;
            let counts = count_slots(device, &slot_b, capacity)?;
            let start = exclusive_scan(device, &counts)?;
            (slot_a, start, bucketed, false)
        }
        None => (unused(device)?, unused(device)?, unused(device)?, true),
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

    let source = join_source()?;
    let pipeline = |entry: &str| {
        device.pipeline(&KernelSpec {
            label: &format!("join.{entry}"),
            source: &source,
            entry_point: entry,
            bindings: JOIN_BINDINGS,
        })
    };
    let uniform = params(
        device,
        "join params",
        [
            check_len("@join_index", rows_a)?,
            check_len("@join_index", rows_b)?,
            u32::from(all_pairs),
            num_checks as u32,
            0,
            0,
            0,
            0,
        ],
    );
    let counts = device.zeroed::<u32>("join counts", rows_a)?;
    let (unused_a, unused_b) = (unused(device)?, unused(device)?);
    let mut commands = Commands::new(device, "join count");
    commands.dispatch(
        &*pipeline("count_pairs")?,
        &[
            &uniform,
            slot_a.raw(),
            bucket_start.raw(),
            bucketed.raw(),
            check_a,
            check_b,
            check_words.raw(),
            counts.raw(),
            unused_a.raw(),
            unused_b.raw(),
        ],
        element_workgroups(rows_a),
    )?;
    commands.submit()?;
    let offsets = exclusive_scan(device, &counts)?;
    let wrapped = device.zeroed::<u32>("join wrap flag", 1)?;
    let mut commands = Commands::new(device, "join wrap check");
    commands.dispatch(
        &*pipeline("check_wrap")?,
        &[
            &uniform,
            slot_a.raw(),
            bucket_start.raw(),
            bucketed.raw(),
            check_a,
            check_b,
            check_words.raw(),
            offsets.raw(),
            wrapped.raw(),
            unused_b.raw(),
        ],
        element_workgroups(rows_a),
    )?;
    commands.submit()?;
    if device.download(&wrapped)?.first().copied().unwrap_or(0) != 0 {
        return Err(unsupported(
            "the join has more than 2^32 pairs, more than u32 indexes can hold".to_string(),
        ));
    }
    let total = device
        .download_range(&offsets, rows_a, 1)?
        .first()
        .copied()
        .unwrap_or(0) as usize;
    if total > super::buffer::MAX_ELEMENTS {
        return Err(unsupported(format!(
            "{total} pairs, more than a GPU buffer can index"
        )));
    }
    let out_a = device.zeroed::<u32>("join pairs a", total)?;
    let out_b = device.zeroed::<u32>("join pairs b", total)?;
    if total > 0 {
        let mut commands = Commands::new(device, "join write");
        commands.dispatch(
            &*pipeline("write_pairs")?,
            &[
                &uniform,
                slot_a.raw(),
                bucket_start.raw(),
                bucketed.raw(),
                check_a,
                check_b,
                check_words.raw(),
                offsets.raw(),
                out_a.raw(),
                out_b.raw(),
            ],
            element_workgroups(rows_a),
        )?;
        commands.submit()?;
    }
    Ok(JoinPairs { a: out_a, b: out_b })
}
