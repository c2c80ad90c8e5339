//! `@multiway_join` and `@multiway_count` on the GPU: a breadth-first worst-case-optimal join
//! (Wu, Zinn, Aref, Yalamanchili, ADMS 2014), one variable per round, over trie indexes built
//! on the GPU. The CPU Leapfrog Triejoin (`cpu/multiway.rs`) is its oracle; the spec is
//! `crate::multiway`.
//!
//! - Trie index per atom (`shaders/multiway_trie.wgsl`): the relation's columns (device
//!   buffers, where the relation kernels left them) permuted to the variable order, sorted and
//!   deduplicated by `@tuple_unique`'s kernels (`relation::tuple_unique`); each row's first
//!   differing column, a flag per level, compaction to the level's node starts, then the
//!   level values gathered and the offsets to the children found by binary search, written
//!   straight into one packed buffer per trie. A trie is cached (per thread) while its
//!   relation's column buffers live: each distinct (relation, column order) is built once
//!   per run however many atoms and calls read it ([`take_stats`] counts builds and reuses
//!   for `--time`).
//! - A round per variable (`shaders/multiway.wgsl`): per partial binding the children range
//!   of every atom containing the variable; the smallest drives (count), an exclusive scan of
//!   the counts and its total (recorded in the same submission, read back once), one
//!   invocation per candidate finds its binding by load-balancing search and the candidate in
//!   every other atom by binary search, then checks the comparisons (expand); a scan and
//!   compaction of the survivors and a gather of the new bindings, recorded with expand in
//!   one submission: the number kept stays on the device for the next round's kernels, so a
//!   round waits for the device once (its total), not twice. The result is the last
//!   round's bindings, in order: each round expands bindings in order and candidates in
//!   increasing order, so rows come out sorted and distinct.
//! - Counting (`@multiway_count`): the last round expands nothing; each candidate is tested
//!   where it lies and the passing ones are summed per workgroup into a 64-bit counter on the
//!   device, read once at the end. No row of the result, and no binding of the last
//!   variable, is ever stored.
//! - Batches: a round expands at most `batch_slots` candidates at a time (a window of the
//!   scan) and carries each window's survivors through the later rounds before the next
//!   window, depth first; a round whose scan would pass 2^32 is split in halves of its
//!   bindings. An intermediate too large for the device is therefore cut, never refused.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::{Arc, Weak};

use super::buffer::GpuBuffer;
use super::compact::{element_workgroups, where_true};
use super::device::Device;
use super::error::Result;
use super::keys::{check_len, filled, iota, unused};
use super::pipeline::{BindingKind, Commands, KernelSpec};
use super::relation::{tuple_unique, DeviceRelation};
use super::scan::{record_scan, SUM_VALUES};
use super::template::{partition_points, render, workgroup_size_text, Search};
use crate::multiway::Spec;

/// `shaders/multiway.wgsl`.
pub const MULTIWAY_WGSL: &str = include_str!("../../../shaders/multiway.wgsl");
/// `shaders/multiway_trie.wgsl`.
pub const MULTIWAY_TRIE_WGSL: &str = include_str!("../../../shaders/multiway_trie.wgsl");

/// The binary searches of `shaders/multiway.wgsl`.
const JOIN_SEARCHES: &[Search] = &[
    // The first position of a level in a range whose value is not below x (strict: above).
    Search {
        name: "first_value_from",
        params: ", values: u32, x: vec2<u32>, strict: bool",
        before: "value_before(values, mid, x, strict)",
    },
    // Load-balancing search: the first binding whose first candidate is after the slot.
    Search {
        name: "first_offset_after",
        params: ", slot: u32",
        before: "index_in[mid] <= slot",
    },
];

/// The binary search of `shaders/multiway_trie.wgsl`: the first node start of the next
/// level not before a row.
const TRIE_SEARCHES: &[Search] = &[Search {
    name: "first_start_from",
    params: ", start: u32",
    before: "aux[mid] < start",
}];

/// `shaders/multiway.wgsl`, specialised (rendered once).
pub(crate) fn join_source() -> Result<&'static str> {
    static SOURCE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    rendered_once(&SOURCE, "multiway.wgsl", MULTIWAY_WGSL, JOIN_SEARCHES)
}

/// `shaders/multiway_trie.wgsl`, specialised (rendered once).
pub(crate) fn trie_source() -> Result<&'static str> {
    static SOURCE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    rendered_once(
        &SOURCE,
        "multiway_trie.wgsl",
        MULTIWAY_TRIE_WGSL,
        TRIE_SEARCHES,
    )
}

fn rendered_once(
    cell: &'static std::sync::OnceLock<String>,
    name: &str,
    text: &str,
    searches: &[Search],
) -> Result<&'static str> {
    if let Some(source) = cell.get() {
        return Ok(source);
    }
    let source = render(
        name,
        text,
        &[
            ("WORKGROUP_SIZE", &workgroup_size_text()),
            ("SEARCHES", &partition_points(searches)?),
        ],
    )?;
    Ok(cell.get_or_init(|| source))
}

/// Overrides the number of candidates a round expands at once (tests force small batches).
pub const BATCH_ENV: &str = "HORSEC_MULTIWAY_BATCH";

/// The most candidates one `expand_count` dispatch tests (slot indexes are u32).
const COUNT_WINDOW: usize = 1 << 30;

const TRIE_BINDINGS: &[BindingKind] = &[
    BindingKind::Uniform,
    BindingKind::StorageRead,
    BindingKind::StorageRead,
    BindingKind::StorageReadWrite,
];

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

/// What the multiway joins of this thread did since the last [`take_stats`]: the engine
/// reports it under the step in `--time`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MultiwayStats {
    /// Tries built (a distinct relation in a distinct column order).
    pub tries_built: u32,
    /// Atoms served by a trie built before (by an earlier atom or call).
    pub tries_reused: u32,
    /// Rounds run (one variable over one window of bindings).
    pub rounds: u32,
    /// Windows of candidates expanded or counted.
    pub windows: u32,
    /// Blocking reads of the device (round totals, compaction sizes, rows, the count).
    pub host_waits: u32,
    /// Queue submissions.
    pub submissions: u32,
}

impl MultiwayStats {
    /// The counters as (name, value), in the order `--time` prints them.
    pub fn fields(&self) -> [(&'static str, u64); 6] {
        [
            ("tries built", u64::from(self.tries_built)),
            ("tries reused", u64::from(self.tries_reused)),
            ("rounds", u64::from(self.rounds)),
            ("windows", u64::from(self.windows)),
            ("host waits", u64::from(self.host_waits)),
            ("submissions", u64::from(self.submissions)),
        ]
    }
}

/// A trie on the device: every level's values (two words each) and the offsets into each
/// level from the one above, in one buffer (the join kernel binds one trie buffer).
struct PackedTrie {
    words: GpuBuffer<u32>,
    /// Positions relative to the start of `words`.
    levels: Vec<Level>,
}

/// A cached trie: the relation column buffers it indexes (in trie order; weak, so the
/// cache does not keep a relation alive) and their length.
struct CachedTrie {
    columns: Vec<Weak<GpuBuffer<u32>>>,
    rows: usize,
    trie: Rc<PackedTrie>,
}

thread_local! {
    /// Tries of relations still alive: a relation's columns are immutable device buffers,
    /// so a trie stays right while they live. Dead ones are dropped at each look-up.
    static TRIES: RefCell<Vec<CachedTrie>> = const { RefCell::new(Vec::new()) };
    static STATS: Cell<MultiwayStats> = const {
        Cell::new(MultiwayStats {
            tries_built: 0,
            tries_reused: 0,
            rounds: 0,
            windows: 0,
            host_waits: 0,
            submissions: 0,
        })
    };
}

/// The counters since the last call, reset.
pub fn take_stats() -> MultiwayStats {
    STATS.with(|s| s.replace(MultiwayStats::default()))
}

fn count_stat(change: impl FnOnce(&mut MultiwayStats)) {
    STATS.with(|s| {
        let mut stats = s.get();
        change(&mut stats);
        s.set(stats);
    });
}

/// Drops every cached trie (tests measure builds from a clean start).
pub fn clear_trie_cache() {
    TRIES.with(|t| t.borrow_mut().clear());
}

/// The cached trie of exactly these column buffers, if any.
fn cached_trie(columns: &[Arc<GpuBuffer<u32>>], rows: usize) -> Option<Rc<PackedTrie>> {
    TRIES.with(|tries| {
        let mut tries = tries.borrow_mut();
        tries.retain(|t| t.columns.iter().all(|c| c.strong_count() > 0));
        tries
            .iter()
            .find(|t| {
                t.rows == rows
                    && t.columns.len() == columns.len()
                    && t.columns
                        .iter()
                        .zip(columns)
                        .all(|(w, c)| std::ptr::eq(w.as_ptr(), Arc::as_ptr(c)))
            })
            .map(|t| t.trie.clone())
    })
}

/// One level of one atom's trie inside the joined trie buffer (word positions).
#[derive(Clone, Copy, Debug)]
struct Level {
    values: usize,
    len: usize,
    /// Offsets from the level above into this one (unused at level 0).
    offsets: usize,
}

/// How a round is cut: at most `slots` candidates expanded at once, and rounds of more than
/// `bindings` bindings split in halves as a scan past 2^32 is (tests cut both small).
#[derive(Clone, Copy, Debug)]
pub struct Batches {
    pub slots: usize,
    pub bindings: usize,
}

/// The join's result, one column per variable in the variable order, rows sorted.
pub fn multiway_join(
    device: &Device,
    spec: &Spec,
    relations: &[DeviceRelation],
) -> Result<Vec<Vec<i64>>> {
    let batches = default_batches(device, spec);
    let mut result: Vec<Vec<i64>> = vec![Vec::new(); spec.variables.len()];
    join_relations(device, spec, relations, batches, Some(&mut result))?;
    Ok(result)
}

/// The number of rows of [`multiway_join`], counted without building them.
pub fn multiway_count(device: &Device, spec: &Spec, relations: &[DeviceRelation]) -> Result<u64> {
    join_relations(device, spec, relations, default_batches(device, spec), None)
}

fn default_batches(device: &Device, spec: &Spec) -> Batches {
    Batches {
        slots: batch_slots(device, spec),
        bindings: usize::MAX,
    }
}

/// [`multiway_join`] of host columns (uploaded) with the rounds cut as `batches` says.
pub fn multiway_join_batched(
    device: &Device,
    spec: &Spec,
    relations: &[Vec<&[i64]>],
    batches: Batches,
) -> Result<Vec<Vec<i64>>> {
    let relations = upload(device, relations)?;
    let mut result: Vec<Vec<i64>> = vec![Vec::new(); spec.variables.len()];
    join_relations(device, spec, &relations, batches, Some(&mut result))?;
    Ok(result)
}

/// [`multiway_count`] of host columns (uploaded) with the rounds cut as `batches` says.
pub fn multiway_count_batched(
    device: &Device,
    spec: &Spec,
    relations: &[Vec<&[i64]>],
    batches: Batches,
) -> Result<u64> {
    let relations = upload(device, relations)?;
    join_relations(device, spec, &relations, batches, None)
}

fn upload(device: &Device, relations: &[Vec<&[i64]>]) -> Result<Vec<DeviceRelation>> {
    relations
        .iter()
        .map(|columns| DeviceRelation::upload(device, columns))
        .collect()
}

/// The join: rows appended to `rows` when given, else counted; returns the number of rows.
fn join_relations(
    device: &Device,
    spec: &Spec,
    relations: &[DeviceRelation],
    batches: Batches,
    rows: Option<&mut Vec<Vec<i64>>>,
) -> Result<u64> {
    let before = device.host_costs();
    let counted = join_inner(device, spec, relations, batches, rows);
    // Tries of relations gone since are freed now, not at the next join.
    TRIES.with(|t| {
        t.borrow_mut()
            .retain(|t| t.columns.iter().all(|c| c.strong_count() > 0))
    });
    let spent = device.host_costs() - before;
    count_stat(|s| {
        s.host_waits += spent.waits.0;
        s.submissions += spent.submits.0;
    });
    counted
}

fn join_inner(
    device: &Device,
    spec: &Spec,
    relations: &[DeviceRelation],
    batches: Batches,
    mut rows: Option<&mut Vec<Vec<i64>>>,
) -> Result<u64> {
    let n = spec.variables.len();
    // `v op v` decides for every binding at once.
    if spec
        .comparisons
        .iter()
        .any(|c| c.left == c.right && !c.op.holds(0, 0))
    {
        return Ok(0);
    }
    // One trie per distinct permuted relation (a self-join such as triangles indexes its
    // relation once), from the cache when an earlier call built it.
    let mut parts: Vec<Rc<PackedTrie>> = Vec::new();
    let mut part_of_atom = Vec::with_capacity(relations.len());
    for (a, relation) in relations.iter().enumerate() {
        let permuted: Vec<Arc<GpuBuffer<u32>>> = spec
            .trie_columns(a)
            .into_iter()
            .map(|c| relation.columns[c].clone())
            .collect();
        let trie = match cached_trie(&permuted, relation.rows) {
            Some(trie) => {
                count_stat(|s| s.tries_reused += 1);
                trie
            }
            None => {
                let trie = Rc::new(build_trie(
                    device,
                    &DeviceRelation {
                        columns: permuted.clone(),
                        rows: relation.rows,
                    },
                )?);
                count_stat(|s| s.tries_built += 1);
                TRIES.with(|t| {
                    t.borrow_mut().push(CachedTrie {
                        columns: permuted.iter().map(Arc::downgrade).collect(),
                        rows: relation.rows,
                        trie: trie.clone(),
                    })
                });
                trie
            }
        };
        // An empty relation joins to nothing.
        if trie.levels[0].len == 0 {
            return Ok(0);
        }
        match parts.iter().position(|p| Rc::ptr_eq(p, &trie)) {
            Some(p) => part_of_atom.push(p),
            None => {
                part_of_atom.push(parts.len());
                parts.push(trie);
            }
        }
    }
    let joined;
    let (trie, part_levels): (&GpuBuffer<u32>, Vec<Vec<Level>>) = if parts.len() == 1 {
        (&parts[0].words, vec![parts[0].levels.clone()])
    } else {
        let (buffer, levels) = join_tries(device, &parts)?;
        joined = buffer;
        (&joined, levels)
    };
    let levels: Vec<Vec<Level>> = part_of_atom
        .iter()
        .map(|&p| part_levels[p].clone())
        .collect();
    let (plan, steps) = plan_words(spec, &levels);
    let plan = device.upload("multiway plan", &plan)?;
    let join = Join {
        device,
        trie,
        plan: &plan,
        steps: &steps,
        atoms: spec.atoms.len(),
        round_atoms: (0..n).map(|v| spec.atoms_with(v).len()).collect(),
        variables: n,
        batch: batches.slots.max(1),
        split_above: batches.bindings.max(1),
        counter: device.zeroed::<u32>("multiway count", 3)?,
        counting: rows.is_none(),
    };
    let start = Bindings {
        nodes: device.zeroed::<u32>("multiway nodes", spec.atoms.len())?,
        values: device.zeroed::<u32>("multiway values", 2)?,
        count: 1,
        live: Some(1),
    };
    let mut produced = 0u64;
    join.round(0, &start, &mut rows, &mut produced)?;
    if join.counting {
        let words = device.download_range(&join.counter, 0, 2)?;
        produced = u64::from(words[0]) | (u64::from(words[1]) << 32);
    }
    Ok(produced)
}

/// Per row, the first column where it differs from the row before (row 0: column 0), or
/// None when some row repeats or comes out of order (`check`: one read to find out; without
/// it the rows are known sorted and distinct).
fn first_differences(
    device: &Device,
    relation: &DeviceRelation,
    check: bool,
) -> Result<Option<GpuBuffer<u32>>> {
    let (rows, arity) = (relation.rows, relation.arity());
    let rows_u32 = check_len("@multiway_join", rows)?;
    let differences = filled(device, rows.max(1), arity as u32)?;
    let spare = unused(device)?;
    for (c, column) in relation.columns.iter().enumerate() {
        trie_kernel(
            device,
            "first_difference",
            [rows_u32, 0, c as u32, arity as u32, 0],
            column,
            &spare,
            &differences,
            rows,
        )?;
    }
    if check && rows > 1 {
        let flag = device.zeroed::<u32>("multiway order flag", 1)?;
        trie_kernel(
            device,
            "not_sorted",
            [rows_u32, 0, 0, arity as u32, 0],
            &spare,
            &differences,
            &flag,
            rows,
        )?;
        if device.download(&flag)?[0] != 0 {
            return Ok(None);
        }
    }
    Ok(Some(differences))
}

/// A trie built on the device, straight into its packed buffer.
fn build_trie(device: &Device, relation: &DeviceRelation) -> Result<PackedTrie> {
    let arity = relation.arity();
    // A relation already sorted and duplicate-free in trie order (the relation kernels'
    // outputs read in their own column order, such as `link` by triangles) is not sorted
    // again: its first differences show it, and they are what the levels need anyway.
    let (unique, first_difference) = match first_differences(device, relation, true)? {
        Some(differences) => (relation.clone(), differences),
        None => {
            let unique = tuple_unique(device, relation)?;
            let differences = first_differences(device, &unique, false)?;
            let differences = differences.ok_or_else(|| {
                super::error::GpuError::Readback(
                    "@multiway_join: a sorted relation's rows were found out of order".to_string(),
                )
            })?;
            (unique, differences)
        }
    };
    let (unique, rows) = (unique.columns, unique.rows);
    let empty_levels = || {
        (0..arity)
            .map(|_| Level {
                values: 0,
                len: 0,
                offsets: 0,
            })
            .collect()
    };
    if rows == 0 {
        return Ok(PackedTrie {
            words: device.zeroed::<u32>("empty trie", 1)?,
            levels: empty_levels(),
        });
    }
    let rows_u32 = check_len("@multiway_join", rows)?;
    let spare = unused(device)?;
    // The rows where each level's nodes start; the last level has a node per row.
    let mut starts = Vec::with_capacity(arity);
    for d in 0..arity {
        if d + 1 == arity {
            starts.push(iota(device, rows)?);
        } else {
            let flags = device.zeroed::<u32>("level flags", rows)?;
            trie_kernel(
                device,
                "level_flags",
                [rows_u32, 0, d as u32, arity as u32, 0],
                &spare,
                &first_difference,
                &flags,
                rows,
            )?;
            starts.push(where_true(device, &flags)?);
        }
    }
    drop(first_difference);
    // The packed layout: level d's values, then the offsets into level d + 1.
    let mut levels = Vec::with_capacity(arity);
    let mut words = 0usize;
    let mut offsets_at = Vec::with_capacity(arity);
    let mut offsets_into_next = 0;
    for start in &starts {
        let len = start.len();
        levels.push(Level {
            values: words,
            len,
            offsets: offsets_into_next,
        });
        words += 2 * len;
        offsets_into_next = words;
        offsets_at.push(words);
        words += len + 1;
    }
    // The last level has no offsets.
    words -= levels[arity - 1].len + 1;
    let base = |at: usize| check_len("@multiway_join trie", at);
    check_len("@multiway_join trie", words)?;
    let packed = device.zeroed::<u32>("multiway trie", words)?;
    for d in 0..arity {
        let len = starts[d].len();
        trie_kernel(
            device,
            "gather_values",
            [
                check_len("@multiway_join", len)?,
                0,
                0,
                0,
                base(levels[d].values)?,
            ],
            &unique[d],
            &starts[d],
            &packed,
            len,
        )?;
        if d + 1 < arity {
            let next = starts[d + 1].len();
            trie_kernel(
                device,
                "level_offsets",
                [
                    check_len("@multiway_join", len)?,
                    check_len("@multiway_join", next)?,
                    0,
                    0,
                    base(offsets_at[d])?,
                ],
                &starts[d],
                &starts[d + 1],
                &packed,
                len + 1,
            )?;
        }
    }
    Ok(PackedTrie {
        words: packed,
        levels,
    })
}

fn trie_kernel(
    device: &Device,
    entry: &'static str,
    params: [u32; 5],
    col: &GpuBuffer<u32>,
    aux: &GpuBuffer<u32>,
    out: &GpuBuffer<u32>,
    items: usize,
) -> Result<()> {
    if items == 0 {
        return Ok(());
    }
    let source = trie_source()?;
    let pipeline = device.pipeline(&KernelSpec {
        label: &format!("multiway_trie.{entry}"),
        source,
        entry_point: entry,
        constants: &[],
        bindings: TRIE_BINDINGS,
    })?;
    let [a, b, c, d, e] = params;
    let uniform = device.uniform(entry, &[a, b, c, d, e, 0, 0, 0])?;
    let mut commands = Commands::new(device, entry);
    commands.dispatch(
        &pipeline,
        &[&uniform, col.raw(), aux.raw(), out.raw()],
        element_workgroups(items),
    )?;
    commands.submit()
}

/// Several distinct tries copied into one buffer (the join kernel binds one trie buffer),
/// with their levels' positions in it.
fn join_tries(
    device: &Device,
    parts: &[Rc<PackedTrie>],
) -> Result<(GpuBuffer<u32>, Vec<Vec<Level>>)> {
    let mut words = 0usize;
    let mut levels = Vec::with_capacity(parts.len());
    for part in parts {
        levels.push(
            part.levels
                .iter()
                .map(|l| Level {
                    values: l.values + words,
                    len: l.len,
                    offsets: l.offsets + words,
                })
                .collect(),
        );
        words += part.words.len();
    }
    check_len("@multiway_join trie", words)?;
    let trie = device.zeroed::<u32>("multiway tries", words.max(1))?;
    let mut commands = Commands::new(device, "multiway tries");
    let mut at = 0u64;
    for part in parts {
        commands.copy_to_offset(&part.words, trie.raw(), at)?;
        at += part.words.byte_len();
    }
    commands.submit()?;
    Ok((trie, levels))
}

/// The plan buffer's words (see `shaders/multiway.wgsl`) and each round's record position.
fn plan_words(spec: &Spec, levels: &[Vec<Level>]) -> (Vec<u32>, Vec<u32>) {
    let mut words = Vec::new();
    let mut steps = Vec::with_capacity(spec.variables.len());
    for v in 0..spec.variables.len() {
        steps.push(words.len() as u32);
        let atoms = spec.atoms_with(v);
        let checks: Vec<_> = spec
            .checks_at(v)
            .into_iter()
            .filter(|&(_, u)| u != v)
            .collect();
        words.push(atoms.len() as u32);
        words.push(checks.len() as u32);
        for (a, depth) in atoms {
            let level = levels[a][depth];
            words.extend([
                a as u32,
                depth as u32,
                level.values as u32,
                level.len as u32,
                level.offsets as u32,
            ]);
        }
        for (op, u) in checks {
            words.extend([op.code(), u as u32]);
        }
    }
    (words, steps)
}

/// How many candidates a round expands at once: what the largest binding allows for the
/// slot records and new bindings, at most 2^25 (`HORSEC_MULTIWAY_BATCH` overrides it).
fn batch_slots(device: &Device, spec: &Spec) -> usize {
    if let Some(n) = std::env::var(BATCH_ENV)
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
        .filter(|&n| n > 0)
    {
        return n;
    }
    let binding = device.limits().max_storage_buffer_binding_size;
    let widest = spec.atoms.len().max(2 * spec.variables.len()) + 1;
    let by_binding = binding / (4 * widest as u64);
    by_binding.clamp(1, 1 << 25) as usize
}

/// Partial bindings on the device.
struct Bindings {
    nodes: GpuBuffer<u32>,
    values: GpuBuffer<u32>,
    /// The layout's stride: room for this many bindings.
    count: usize,
    /// How many there are, when the host knows; None: the compaction that made them left
    /// their number on the device (the join's counter word 2), where the next round's
    /// kernels read it, so that a round needs no read of its own to start.
    live: Option<usize>,
}

struct Join<'a> {
    device: &'a Device,
    trie: &'a GpuBuffer<u32>,
    plan: &'a GpuBuffer<u32>,
    steps: &'a [u32],
    atoms: usize,
    /// Per round, how many atoms contain its variable.
    round_atoms: Vec<usize>,
    variables: usize,
    batch: usize,
    /// Rounds of more bindings are split in halves before they count.
    split_above: usize,
    /// The count of a counting join (two words, low first), then the number of bindings
    /// the last compaction kept; bound to every dispatch.
    counter: GpuBuffer<u32>,
    /// The last round counts its candidates instead of binding them.
    counting: bool,
}

/// The buffers of one dispatch of `multiway.wgsl`, in binding order after the uniform.
struct JoinArgs<'b> {
    nodes: &'b GpuBuffer<u32>,
    values: &'b GpuBuffer<u32>,
    index_in: &'b GpuBuffer<u32>,
    side_in: &'b GpuBuffer<u32>,
    out_a: &'b GpuBuffer<u32>,
    out_b: &'b GpuBuffer<u32>,
}

type Rows<'r> = Option<&'r mut Vec<Vec<i64>>>;

impl Join<'_> {
    /// Records one dispatch of `entry` over `items` work items into `commands`.
    fn record(
        &self,
        commands: &mut Commands<'_>,
        entry: &'static str,
        params: [u32; 8],
        args: JoinArgs<'_>,
        items: usize,
    ) -> Result<()> {
        if items == 0 {
            return Ok(());
        }
        let source = join_source()?;
        let pipeline = self.device.pipeline(&KernelSpec {
            label: &format!("multiway.{entry}"),
            source,
            entry_point: entry,
            constants: &[],
            bindings: JOIN_BINDINGS,
        })?;
        let uniform = self.device.uniform(entry, &params)?;
        commands.dispatch(
            &pipeline,
            &[
                &uniform,
                self.plan.raw(),
                self.trie.raw(),
                args.nodes.raw(),
                args.values.raw(),
                args.index_in.raw(),
                args.side_in.raw(),
                args.out_a.raw(),
                args.out_b.raw(),
                self.counter.raw(),
            ],
            element_workgroups(items),
        )
    }

    /// One dispatch in a submission of its own.
    fn dispatch(
        &self,
        entry: &'static str,
        params: [u32; 8],
        args: JoinArgs<'_>,
        items: usize,
    ) -> Result<()> {
        let mut commands = Commands::new(self.device, entry);
        self.record(&mut commands, entry, params, args, items)?;
        commands.submit()
    }

    fn len(&self, n: usize) -> Result<u32> {
        check_len("@multiway_join", n)
    }

    /// Binds variable `v` for every binding of `bindings` and carries on to the end,
    /// appending complete bindings to `rows` (or, counting, adding the last round's passing
    /// candidates to the device counter); `produced` counts the rows appended.
    fn round(
        &self,
        v: usize,
        bindings: &Bindings,
        rows: &mut Rows<'_>,
        produced: &mut u64,
    ) -> Result<()> {
        let stride_m = bindings.count;
        // The number of bindings is read only where the host needs it: to split them, or
        // to take the rows.
        let mut live = bindings.live;
        if live.is_none() && (v == self.variables || stride_m > self.split_above) {
            live = Some(self.device.download_range(&self.counter, 2, 1)?[0] as usize);
        }
        if let Some(m) = live {
            if v < self.variables && m > self.split_above {
                return self.split(v, bindings, m, rows, produced);
            }
        }
        if v == self.variables {
            let m = live.unwrap_or(0);
            // The values of every variable in one read (variable-major, two words each).
            let words =
                self.device
                    .download_range(&bindings.values, 0, 2 * self.variables * stride_m)?;
            let values: Vec<i64> = bytemuck::pod_collect_to_vec::<u32, i64>(&words);
            if let Some(rows) = rows.as_deref_mut() {
                for (u, column) in rows.iter_mut().enumerate() {
                    column.extend_from_slice(&values[u * stride_m..u * stride_m + m]);
                }
            }
            *produced += m as u64;
            return Ok(());
        }
        count_stat(|s| s.rounds += 1);
        let step = self.steps[v];
        let stride = 1 + self.round_atoms[v];
        let base = [
            self.len(stride_m)?,
            0,
            0,
            v as u32,
            step,
            self.atoms as u32,
            // Bindings a compaction left are counted by the kernels from its word (the
            // host may have read it, but the stride is still the window's).
            u32::from(bindings.live.is_none()),
            0,
        ];
        // Count, scan and the scan's total in one submission; one read.
        let counts = self.device.zeroed::<u32>("multiway counts", stride_m)?;
        let drivers = self
            .device
            .zeroed::<u32>("multiway drivers", 2 * stride_m)?;
        let total_words = self.device.zeroed::<u32>("multiway round total", 2)?;
        let (spare_a, spare_b) = (unused(self.device)?, unused(self.device)?);
        let mut commands = Commands::new(self.device, "multiway round");
        self.record(
            &mut commands,
            "count",
            base,
            JoinArgs {
                nodes: &bindings.nodes,
                values: &bindings.values,
                index_in: &spare_a,
                side_in: &spare_b,
                out_a: &counts,
                out_b: &drivers,
            },
            stride_m,
        )?;
        let scan = record_scan(&mut commands, counts.raw(), stride_m, SUM_VALUES)?;
        self.record(
            &mut commands,
            "scan_total",
            base,
            JoinArgs {
                nodes: &bindings.nodes,
                values: &bindings.values,
                index_in: &scan,
                side_in: &spare_a,
                out_a: &total_words,
                out_b: &spare_b,
            },
            stride_m,
        )?;
        commands.submit()?;
        drop(counts);
        let read = self.device.download(&total_words)?;
        if read[0] != 0 {
            // The scan passed 2^32 (one binding's children never do).
            let m = match live {
                Some(m) => m,
                None => self.device.download_range(&self.counter, 2, 1)?[0] as usize,
            };
            if m > 1 {
                return self.split(v, bindings, m, rows, produced);
            }
        }
        let total = read[1] as usize;
        if self.counting && v + 1 == self.variables {
            // Test every candidate where it lies; nothing is stored but the count.
            let mut commands = Commands::new(self.device, "multiway count");
            let mut window_start = 0;
            while window_start < total {
                let window = COUNT_WINDOW.min(total - window_start);
                count_stat(|s| s.windows += 1);
                let mut params = base;
                params[1] = self.len(window_start)?;
                params[2] = self.len(window)?;
                self.record(
                    &mut commands,
                    "expand_count",
                    params,
                    JoinArgs {
                        nodes: &bindings.nodes,
                        values: &bindings.values,
                        index_in: &scan,
                        side_in: &drivers,
                        out_a: &spare_a,
                        out_b: &spare_b,
                    },
                    window,
                )?;
                window_start += window;
            }
            return commands.submit();
        }
        let mut window_start = 0;
        while window_start < total {
            let window = self.batch.min(total - window_start);
            count_stat(|s| s.windows += 1);
            // Expand, scan the flags, compact and gather in one submission: the number
            // kept stays on the device (counter word 2) and the new bindings get room for
            // the whole window.
            let flags = self.device.zeroed::<u32>("multiway flags", window)?;
            let slots = self
                .device
                .zeroed::<u32>("multiway slots", window * stride)?;
            let kept = self.device.zeroed::<u32>("multiway kept", window)?;
            let nodes = self
                .device
                .zeroed::<u32>("multiway nodes", self.atoms * window)?;
            let values = self
                .device
                .zeroed::<u32>("multiway values", 2 * (v + 1) * window)?;
            let mut params = base;
            params[1] = self.len(window_start)?;
            params[2] = self.len(window)?;
            params[7] = stride as u32;
            let mut commands = Commands::new(self.device, "multiway window");
            self.record(
                &mut commands,
                "expand",
                params,
                JoinArgs {
                    nodes: &bindings.nodes,
                    values: &bindings.values,
                    index_in: &scan,
                    side_in: &drivers,
                    out_a: &flags,
                    out_b: &slots,
                },
                window,
            )?;
            let offsets = record_scan(&mut commands, flags.raw(), window, SUM_VALUES)?;
            self.record(
                &mut commands,
                "compact",
                params,
                JoinArgs {
                    nodes: &bindings.nodes,
                    values: &bindings.values,
                    index_in: &offsets,
                    side_in: &flags,
                    out_a: &kept,
                    out_b: &spare_b,
                },
                window,
            )?;
            params[6] = self.len(window)?;
            self.record(
                &mut commands,
                "gather",
                params,
                JoinArgs {
                    nodes: &bindings.nodes,
                    values: &bindings.values,
                    index_in: &kept,
                    side_in: &slots,
                    out_a: &nodes,
                    out_b: &values,
                },
                window,
            )?;
            commands.submit()?;
            drop((flags, slots, kept, offsets));
            let extended = Bindings {
                nodes,
                values,
                count: window,
                live: None,
            };
            self.round(v + 1, &extended, rows, produced)?;
            window_start += window;
        }
        Ok(())
    }

    /// Round `v` on each half of the `m` bindings by itself, in order.
    fn split(
        &self,
        v: usize,
        bindings: &Bindings,
        m: usize,
        rows: &mut Rows<'_>,
        produced: &mut u64,
    ) -> Result<()> {
        let half = m / 2;
        for (start, count) in [(0, half), (half, m - half)] {
            let part = self.take(v, bindings, start, count)?;
            self.round(v, &part, rows, produced)?;
        }
        Ok(())
    }

    /// Bindings `start .. start + count` of `bindings`, before round `v`.
    fn take(&self, v: usize, bindings: &Bindings, start: usize, count: usize) -> Result<Bindings> {
        let nodes = self
            .device
            .zeroed::<u32>("multiway nodes", (self.atoms * count).max(1))?;
        let values = self
            .device
            .zeroed::<u32>("multiway values", (2 * v * count).max(2))?;
        let params = [
            self.len(bindings.count)?,
            self.len(start)?,
            0,
            v as u32,
            self.steps[v],
            self.atoms as u32,
            self.len(count)?,
            0,
        ];
        let (spare_a, spare_b) = (unused(self.device)?, unused(self.device)?);
        self.dispatch(
            "take",
            params,
            JoinArgs {
                nodes: &bindings.nodes,
                values: &bindings.values,
                index_in: &spare_a,
                side_in: &spare_b,
                out_a: &nodes,
                out_b: &values,
            },
            count,
        )?;
        Ok(Bindings {
            nodes,
            values,
            count,
            live: Some(count),
        })
    }
}
