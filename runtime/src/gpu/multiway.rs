//! `@multiway_join` on the GPU: a breadth-first worst-case-optimal join (Wu, Zinn, Aref,
//! Yalamanchili, ADMS 2014), one variable per round, over trie indexes built on the GPU. The
//! CPU Leapfrog Triejoin (`cpu/multiway.rs`) is its oracle; the spec is `crate::multiway`.
//!
//! - Trie index per atom (`shaders/multiway_trie.wgsl`): the relation's columns permuted to
//!   the variable order, sorted and deduplicated by the radix sort and compaction of
//!   `@tuple_unique` (`relation::sorted_unique_on_device`); each row's first differing
//!   column, a flag per level, compaction to the level's node starts, the level values
//!   gathered, and offsets to the children by binary search of the starts.
//! - A round per variable (`shaders/multiway.wgsl`): per partial binding the children range
//!   of every atom containing the variable; the smallest drives (count), an exclusive scan of
//!   the counts, one invocation per candidate finds its binding by load-balancing search
//!   and the candidate in every other atom by binary search, then checks the comparisons
//!   (expand); compaction of the survivors (`where_true`) and a gather of the new bindings.
//!   The result is the last round's bindings, in order: each round expands bindings in
//!   order and candidates in increasing order, so rows come out sorted and distinct.
//! - Batches: a round expands at most `batch_slots` candidates at a time (a window of the
//!   scan) and carries each window's survivors through the later rounds before the next
//!   window, depth first; a round whose scan would pass 2^32 is split in halves of its
//!   bindings. An intermediate too large for the device is therefore cut, never refused.
//!
//! Tries are rebuilt per call (no cache across calls yet).

use super::buffer::GpuBuffer;
use super::compact::{element_workgroups, where_true};
use super::device::Device;
use super::error::Result;
use super::keys::{check_len, filled, iota, unused};
use super::pipeline::{BindingKind, Commands, KernelSpec};
use super::relation::sorted_unique_on_device;
use super::scan::exclusive_scan;
use super::template::{render, workgroup_size_text};
use crate::multiway::Spec;

/// `shaders/multiway.wgsl`.
pub const MULTIWAY_WGSL: &str = include_str!("../../../shaders/multiway.wgsl");
/// `shaders/multiway_trie.wgsl`.
pub const MULTIWAY_TRIE_WGSL: &str = include_str!("../../../shaders/multiway_trie.wgsl");

/// Overrides the number of candidates a round expands at once (tests force small batches).
pub const BATCH_ENV: &str = "HORSEC_MULTIWAY_BATCH";

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
];

/// One level of one atom's trie inside the joined trie buffer (word positions).
#[derive(Clone, Copy, Debug)]
struct Level {
    values: usize,
    len: usize,
    /// Offsets from the level above into this one (unused at level 0).
    offsets: usize,
}

/// The join's result, one column per variable in the variable order, rows sorted.
pub fn multiway_join(
    device: &Device,
    spec: &Spec,
    relations: &[Vec<&[i64]>],
) -> Result<Vec<Vec<i64>>> {
    let batches = Batches {
        slots: batch_slots(device, spec),
        bindings: usize::MAX,
    };
    multiway_join_batched(device, spec, relations, batches)
}

/// How a round is cut: at most `slots` candidates expanded at once, and rounds of more than
/// `bindings` bindings split in halves as a scan past 2^32 is (tests cut both small).
#[derive(Clone, Copy, Debug)]
pub struct Batches {
    pub slots: usize,
    pub bindings: usize,
}

/// [`multiway_join`] with the rounds cut as `batches` says.
pub fn multiway_join_batched(
    device: &Device,
    spec: &Spec,
    relations: &[Vec<&[i64]>],
    batches: Batches,
) -> Result<Vec<Vec<i64>>> {
    let n = spec.variables.len();
    let mut result: Vec<Vec<i64>> = vec![Vec::new(); n];
    // `v op v` decides for every binding at once.
    if spec
        .comparisons
        .iter()
        .any(|c| c.left == c.right && !c.op.holds(0, 0))
    {
        return Ok(result);
    }
    // One trie per distinct permuted relation (a self-join such as triangles indexes its
    // relation once).
    let mut parts = Vec::with_capacity(relations.len());
    let mut built: Vec<Vec<&[i64]>> = Vec::new();
    let mut part_of_atom = Vec::with_capacity(relations.len());
    for (a, columns) in relations.iter().enumerate() {
        let permuted: Vec<&[i64]> = spec
            .trie_columns(a)
            .into_iter()
            .map(|c| columns[c])
            .collect();
        if let Some(p) = built.iter().position(|b| *b == permuted) {
            part_of_atom.push(p);
            continue;
        }
        let part = build_trie(device, &permuted)?;
        // An empty relation joins to nothing.
        if part[0].1 == 0 {
            return Ok(result);
        }
        part_of_atom.push(parts.len());
        parts.push(part);
        built.push(permuted);
    }
    let (trie, part_levels) = join_tries(device, parts)?;
    let levels: Vec<Vec<Level>> = part_of_atom
        .iter()
        .map(|&p| part_levels[p].clone())
        .collect();
    let (plan, steps) = plan_words(spec, &levels);
    let plan = device.upload("multiway plan", &plan)?;
    let join = Join {
        device,
        trie: &trie,
        plan: &plan,
        steps: &steps,
        atoms: spec.atoms.len(),
        round_atoms: (0..n).map(|v| spec.atoms_with(v).len()).collect(),
        variables: n,
        batch: batches.slots.max(1),
        split_above: batches.bindings.max(1),
    };
    let start = Bindings {
        nodes: device.zeroed::<u32>("multiway nodes", spec.atoms.len())?,
        values: device.zeroed::<u32>("multiway values", 2)?,
        count: 1,
    };
    join.round(0, &start, &mut result)?;
    Ok(result)
}

/// One trie level on the device: its values (two words each), its length, and the offsets
/// into the next level (`len + 1` words; none for the last level).
type TrieLevel = (GpuBuffer<u32>, usize, Option<GpuBuffer<u32>>);

/// The trie of the rows of `columns`, level by level.
fn build_trie(device: &Device, columns: &[&[i64]]) -> Result<Vec<TrieLevel>> {
    let arity = columns.len();
    let unique = sorted_unique_on_device(device, columns)?;
    let (unique, rows) = (unique.columns, unique.rows);
    if rows == 0 {
        return (0..arity)
            .map(|_| Ok((device.zeroed::<u32>("empty level", 0)?, 0, None)))
            .collect();
    }
    let rows_u32 = check_len("@multiway_join", rows)?;
    let first_difference = filled(device, rows, arity as u32)?;
    let spare = unused(device)?;
    for (c, column) in unique.iter().enumerate() {
        trie_kernel(
            device,
            "first_difference",
            [rows_u32, 0, c as u32, arity as u32],
            column,
            &spare,
            &first_difference,
            rows,
        )?;
    }
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
                [rows_u32, 0, d as u32, arity as u32],
                &spare,
                &first_difference,
                &flags,
                rows,
            )?;
            starts.push(where_true(device, &flags)?);
        }
    }
    let mut levels = Vec::with_capacity(arity);
    for d in 0..arity {
        let len = starts[d].len();
        let values = device.zeroed::<u32>("trie level values", 2 * len)?;
        trie_kernel(
            device,
            "gather_values",
            [check_len("@multiway_join", len)?, 0, 0, 0],
            &unique[d],
            &starts[d],
            &values,
            len,
        )?;
        let offsets = if d + 1 < arity {
            let next = starts[d + 1].len();
            let offsets = device.zeroed::<u32>("trie offsets", len + 1)?;
            trie_kernel(
                device,
                "level_offsets",
                [
                    check_len("@multiway_join", len)?,
                    check_len("@multiway_join", next)?,
                    0,
                    0,
                ],
                &starts[d],
                &starts[d + 1],
                &offsets,
                len + 1,
            )?;
            Some(offsets)
        } else {
            None
        };
        levels.push((values, len, offsets));
    }
    Ok(levels)
}

fn trie_kernel(
    device: &Device,
    entry: &'static str,
    params: [u32; 4],
    col: &GpuBuffer<u32>,
    aux: &GpuBuffer<u32>,
    out: &GpuBuffer<u32>,
    items: usize,
) -> Result<()> {
    if items == 0 {
        return Ok(());
    }
    let source = render(
        "multiway_trie.wgsl",
        MULTIWAY_TRIE_WGSL,
        &[("WORKGROUP_SIZE", &workgroup_size_text())],
    )?;
    let pipeline = device.pipeline(&KernelSpec {
        label: &format!("multiway_trie.{entry}"),
        source: &source,
        entry_point: entry,
        bindings: TRIE_BINDINGS,
    })?;
    let uniform = device.uniform(entry, &params)?;
    let mut commands = Commands::new(device, entry);
    commands.dispatch(
        &pipeline,
        &[&uniform, col.raw(), aux.raw(), out.raw()],
        element_workgroups(items),
    )?;
    commands.submit()
}

type TrieParts = Vec<Vec<TrieLevel>>;

/// Every atom's levels copied into one buffer (the join kernel binds one trie buffer).
fn join_tries(device: &Device, parts: TrieParts) -> Result<(GpuBuffer<u32>, Vec<Vec<Level>>)> {
    let mut words = 0usize;
    let mut levels = Vec::with_capacity(parts.len());
    for part in &parts {
        let mut atom = Vec::with_capacity(part.len());
        let mut offsets_into_next = None;
        for (values, len, offsets) in part {
            let level = Level {
                values: words,
                len: *len,
                offsets: offsets_into_next.unwrap_or(0),
            };
            words += values.len();
            offsets_into_next = offsets.as_ref().map(|o| {
                let at = words;
                words += o.len();
                at
            });
            atom.push(level);
        }
        levels.push(atom);
    }
    check_len("@multiway_join trie", words)?;
    let trie = device.zeroed::<u32>("multiway tries", words.max(1))?;
    let mut commands = Commands::new(device, "multiway tries");
    let mut at = 0u64;
    for part in &parts {
        for (values, _, offsets) in part {
            commands.copy_to_offset(values, trie.raw(), at);
            at += values.byte_len();
            if let Some(o) = offsets {
                commands.copy_to_offset(o, trie.raw(), at);
                at += o.byte_len();
            }
        }
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
    by_binding.clamp(1024, 1 << 25) as usize
}

/// Partial bindings on the device.
struct Bindings {
    nodes: GpuBuffer<u32>,
    values: GpuBuffer<u32>,
    count: usize,
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

impl Join<'_> {
    fn dispatch(
        &self,
        entry: &'static str,
        params: [u32; 8],
        args: JoinArgs<'_>,
        items: usize,
    ) -> Result<()> {
        if items == 0 {
            return Ok(());
        }
        let source = render(
            "multiway.wgsl",
            MULTIWAY_WGSL,
            &[("WORKGROUP_SIZE", &workgroup_size_text())],
        )?;
        let pipeline = self.device.pipeline(&KernelSpec {
            label: &format!("multiway.{entry}"),
            source: &source,
            entry_point: entry,
            bindings: JOIN_BINDINGS,
        })?;
        let uniform = self.device.uniform(entry, &params)?;
        let mut commands = Commands::new(self.device, entry);
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
            ],
            element_workgroups(items),
        )?;
        commands.submit()
    }

    fn len(&self, n: usize) -> Result<u32> {
        check_len("@multiway_join", n)
    }

    /// Binds variable `v` for every binding of `bindings` and carries on to the end, appending
    /// complete bindings to `result`.
    fn round(&self, v: usize, bindings: &Bindings, result: &mut [Vec<i64>]) -> Result<()> {
        let m = bindings.count;
        if v < self.variables && m > self.split_above {
            return self.split(v, bindings, result);
        }
        if v == self.variables {
            for (u, column) in result.iter_mut().enumerate() {
                let words = self
                    .device
                    .download_range(&bindings.values, 2 * u * m, 2 * m)?;
                column.extend(bytemuck::pod_collect_to_vec::<u32, i64>(&words));
            }
            return Ok(());
        }
        let step = self.steps[v];
        let stride = 1 + self.round_atoms[v];
        let base = [self.len(m)?, 0, 0, v as u32, step, self.atoms as u32, 0, 0];
        let counts = self.device.zeroed::<u32>("multiway counts", m)?;
        let drivers = self.device.zeroed::<u32>("multiway drivers", 2 * m)?;
        let (spare_a, spare_b) = (unused(self.device)?, unused(self.device)?);
        self.dispatch(
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
            m,
        )?;
        let scan = exclusive_scan(self.device, &counts)?;
        drop(counts);
        if m > 1 && self.wrapped(bindings, &scan, base)? {
            return self.split(v, bindings, result);
        }
        let total = self.device.download_range(&scan, m, 1)?[0] as usize;
        let mut window_start = 0;
        while window_start < total {
            let window = self.batch.min(total - window_start);
            let flags = self.device.zeroed::<u32>("multiway flags", window)?;
            let slots = self
                .device
                .zeroed::<u32>("multiway slots", window * stride)?;
            let mut params = base;
            params[1] = self.len(window_start)?;
            params[2] = self.len(window)?;
            params[7] = stride as u32;
            self.dispatch(
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
            let kept = where_true(self.device, &flags)?;
            drop(flags);
            let next = kept.len();
            if next > 0 {
                let nodes = self
                    .device
                    .zeroed::<u32>("multiway nodes", self.atoms * next)?;
                let values = self
                    .device
                    .zeroed::<u32>("multiway values", 2 * (v + 1) * next)?;
                params[6] = self.len(next)?;
                self.dispatch(
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
                    next,
                )?;
                drop(slots);
                let extended = Bindings {
                    nodes,
                    values,
                    count: next,
                };
                self.round(v + 1, &extended, result)?;
            }
            window_start += window;
        }
        Ok(())
    }

    /// Round `v` on each half of the bindings by itself, in order.
    fn split(&self, v: usize, bindings: &Bindings, result: &mut [Vec<i64>]) -> Result<()> {
        let m = bindings.count;
        let half = m / 2;
        for (start, count) in [(0, half), (half, m - half)] {
            let part = self.take(v, bindings, start, count)?;
            self.round(v, &part, result)?;
        }
        Ok(())
    }

    /// Whether the exclusive scan of a round's counts wrapped past 2^32.
    fn wrapped(&self, bindings: &Bindings, scan: &GpuBuffer<u32>, base: [u32; 8]) -> Result<bool> {
        let flag = self.device.zeroed::<u32>("multiway wrap flag", 1)?;
        let (spare_a, spare_b) = (unused(self.device)?, unused(self.device)?);
        self.dispatch(
            "check_wrap",
            base,
            JoinArgs {
                nodes: &bindings.nodes,
                values: &bindings.values,
                index_in: scan,
                side_in: &spare_a,
                out_a: &flag,
                out_b: &spare_b,
            },
            bindings.count,
        )?;
        Ok(self.device.download(&flag)?[0] != 0)
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
        })
    }
}
