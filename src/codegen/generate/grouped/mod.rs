//! Assembly of a grouped kernel (see [`crate::outline::kernel::GroupedAggregation`]): the
//! kernel's statements, then a group aggregation over the rows its masks keep, without
//! writing them.
//!
//! Every key column is a bool, char, i8 or i16, so a row's key is a *slot* in the product
//! of their ranges (first column most significant: slots ascend in key order). One pass,
//! `main_pass`, reads the rows once:
//! 1. Each workgroup gives the slots it meets entries of its own (`grouped_local_rank`, at
//!    most `GROUPED_GROUPS`; a row finds its slot's entry through a hint, `grouped_rank`,
//!    where every tag fits beside a rank in a word), and adds each kept row into its
//!    entry's accumulators in registers. As it ends, its slots take entries among the
//!    kernel's seen slots (`grouped_claim`, in words kept zero between launches), and it
//!    writes its sums where the slots' seen entries say, with the mask of those entries
//!    (a workgroup meeting more slots than it has entries, or a slot finding no seen entry
//!    free, sets the kernel's decline flag). Then it counts itself done (`group_done`).
//! 2. The last workgroup to count itself done settles the groups (`grouped_settle`): it
//!    reads the seen slots (setting them back to zero) and ranks them in key order. With
//!    more groups than the kernel holds it declines: the flag is set, the group count is
//!    0, and it writes nothing (the engine runs the unfused statements instead). Then it
//!    adds each group's sums over the workgroups that wrote them, in workgroup order, so
//!    every sum's order is fixed by the data alone, and writes per group: its number (for
//!    `@keys`), its key, its results, and its epilogue's values. It writes them, after the
//!    group count, only into one buffer the host maps (`ScratchPurpose::GroupResults`):
//!    the read-back after the kernel is one mapping, and the outputs are host values with
//!    no buffers of their own (a later GPU step that reads one gets it uploaded: at most
//!    `MAX_GROUPS` elements). No workgroup waits for another, so the pass needs no
//!    forward-progress guarantee.
//!
//! The settle was a pass of its own (one workgroup), and before that three (ranks, one
//! workgroup per accumulator, results). On an H100, for TPC-H q1 at SF 1, that pass took
//! 32 us of GPU time after the 117 us of the accumulating one (148 us in all, both in one
//! submission or not), and the host recorded its dispatch. Folded into the accumulating
//! pass the kernel took 146 us; with each run's loads written out one by one (see
//! `run_sum`) 136.5 us, and with the workgroups' entries found in loops of constant bounds
//! 133.5 us: the settle now adds some 17 us after the last workgroup's rows.
//!
//! Where q1's GPU time went at SF 1 (H200, 119 us in all, throw-away builds that left one
//! part out): without the settle 103 us; with every row added to one group instead of the
//! switch (ranks still found) 106 us; with no ranks and no switch 62 us, which is about
//! what streaming its 264 MB costs. So ranks, the switch and the workgroups' sums took some
//! 40 us together, the settle 16 us. (Leaving the workgroups' sums out is no measure: the
//! compiler then drops the additions and the value columns' loads.) Since ranks are looked
//! up through hints (`grouped_rank`) the kernel takes 99 us. Of the settle, cut short
//! at three points (H200, throw-away builds): up to the group count 89 us, up to the
//! entries 91, up to the sums 96, whole 99. Each part is a chain of waits in one
//! workgroup: two claims of the distinct slots (one invocation first, then the rest,
//! whose claims then only load) took 100 us, and runs of 32 workgroups (one batch of
//! sums instead of two) 100. With the slots claimed by each workgroup as it ends (the
//! settle reading a few seen words, not every workgroup's slots, and no table of the
//! workgroups' entries to build) the kernel took 95 us against 99 (H200, one call, two
//! processes each), and 94 with the decline flag read beside the seen slots.
//!
//! Measured again once shaders were compiled without naga's runtime checks (H200, SF 1,
//! 88 us in all; the kernel's WGSL replaced by hand in a throw-away build, parts left out
//! one after another): without the settle 79 us, and 80.5 with its reset of the seen
//! slots kept (the next launch's claims), 81 up to the group count, 86 up to the sums,
//! so the settle is some 1.5 us of claims, 0.5 of ranks, 5 of sums (two batches) and 2
//! of results; without the workgroups' sums at their end as well 75; with ranks by the
//! slot's hash alone (no hints) 73; with every row added to one group (no switch, and the
//! compiler drops the other groups' accumulators) 58, about the stream of its 264 MB. The
//! rows' adds are bound by registers and issue, not by memory: adding each row to every
//! group's accumulators through selects instead of the switch took 138 us (136 with the
//! first four groups so and the rest by the switch; 88 with two).

use super::*;
use horsec_runtime::args::group::Reduction;

mod accumulate;
mod epilogue;
mod outputs;
mod settle;

use outputs::GroupedOutputs;

/// Most accumulators (values and the count, times groups) one invocation keeps. For TPC-H
/// q1 at SF 1 (six accumulators a group, four groups met) on an H200, 24 (four groups in
/// registers, fewer registers) took 126 us of GPU time against 119 with 48, and 30 or 36
/// were no faster either. Accumulators in workgroup memory instead of registers (each
/// invocation its own column of them, at an address from the row's rank: no switch and few
/// registers, but four groups in the 48 KiB NVIDIA gives a workgroup) took 163-217 us, a
/// load and a store of workgroup memory per addition. Measured again with shaders compiled
/// without naga's loop counters and clamps (H200, two processes each): 48 took 88 us, 36
/// 87, 30 85 and 24 96. Thirty would hold five of q1's groups instead of eight, and a
/// workgroup meeting more declines the kernel (the unfused statements run instead): 3 us
/// are not worth that. With 48, 132 workgroups instead of 256 took 122 us. Nor would a
/// pipeline specialized to fewer groups (its other accumulators' adds compiled out, a
/// wide one launched where it declines) pay: five groups took 86 us and four 93.
const ACCUMULATORS: usize = 48;
// The settle keeps the groups' totals in the sum arrays past their first workgroup's worth
// of values (`GROUPED_TOTALS`): every accumulator's total fits there.
const _: () = assert!(ACCUMULATORS <= (BATCH - 1) * KERNEL_WORKGROUP_SIZE as usize);
/// Most groups a grouped kernel adds up.
const MAX_GROUPS: usize = 16;
/// Accumulators one workgroup sum adds at once: two arrays of this many per invocation
/// (i64 and f64) take 16 KiB, WebGPU's least workgroup memory. Eight float accumulators a
/// sum (16 KiB more, half the sums for q1) made q1's kernel take 129 us against 88 (H200,
/// SF 1): the accumulating pass pays for any workgroup memory or registers the end adds.
/// Within the same 16 KiB it gains: where the count is the only integer accumulator, its
/// sums go through the float arrays, which then hold twice as many accumulators a sum
/// (see [`GroupedLayout::counts_in_floats`]); q1's kernel took 86 us against 88.
const BATCH: usize = 4;
/// Float accumulators one workgroup sum adds at once where the counts go through the float
/// arrays: the i64 arrays' memory is theirs.
const FLOAT_BATCH: usize = 2 * BATCH;
// Where the counts go through the float arrays, the settle's tree of them starts at
// `BATCH` workgroups' worth of values, past the float tree and totals (which fit below it,
// as asserted after `ACCUMULATORS`), and their totals follow it (see `settle`).
const _: () = assert!(
    (BATCH + 1) * KERNEL_WORKGROUP_SIZE as usize + MAX_GROUPS
        <= FLOAT_BATCH * KERNEL_WORKGROUP_SIZE as usize
);
/// Most workgroups of the accumulating pass: few enough that every one is resident at
/// once on a large GPU, so that its sums at the end are paid once per workgroup slot.
/// More did not help q1 at SF 1 on an H200 (GPU busy under `--time`, one call, with a
/// settle whose invocations each took the entries of several workgroups; this one holds
/// one each): 512 workgroups took 120 us against 99, 512 with 24 accumulators 121, 1024
/// with 24 158; 256 with 24 took 104, and 3 or 4 rows in flight with 24 (registers freed
/// for them) 104 and 138. So neither more resident invocations nor more loads in flight
/// shorten the pass.
const MAX_GROUPED_WORKGROUPS: u32 = 256;
/// Rows each invocation of the accumulating pass has in flight: it adds these while the
/// loads of as many following rows are under way. Each invocation handles some 90 rows of
/// TPC-H q1 at SF 1 one after another, every step waiting on memory: on an H100 the
/// kernel's GPU time went 0.18 → 0.16 ms with 2 (4 was no faster, and slower with 48
/// accumulators: registers). Measured again on an H200 once shaders were compiled without
/// naga's loop counters and clamps (88 us with 2): 3 took 101 us and 4 117; two adjacent
/// rows per load (`vec2` elements, a pair in flight) 87, and two pairs in flight 114.
const ROWS_IN_FLIGHT: u32 = 2;
/// Accumulating workgroups whose partials of one accumulator one invocation of the settle
/// adds, in order, before the runs' sums are added by a tree. For q1 at SF 1 (H200, 88 us
/// with 16, loads written out): a loop instead 88, runs of 8 (three batches) 89; every
/// load of a batch issued before its adds 94, and of two batches at once 94 (registers);
/// the results staged in workgroup memory and written to the mapped buffer at once 88.
const GROUPED_RUN: u32 = 16;
/// Values of one accumulator (one per invocation) that one invocation adds in order, at the
/// end of each accumulating workgroup (see `grouped_sum_*`).
const SUM_RUN: u32 = 16;
/// Most slots of a key domain: a slot and its tag (slot + 1, 0 meaning none) are u32s.
const MAX_DOMAIN: u64 = u32::MAX as u64;
/// Bits of a rank in a rank hint, `(tag << HINT_RANK_BITS) | rank` (see `grouped_rank`):
/// every rank of a workgroup fits, and tags below `2^(32 - HINT_RANK_BITS)` fit beside it.
const HINT_RANK_BITS: u32 = 4;
const _: () = assert!(MAX_GROUPS <= 1 << HINT_RANK_BITS);
/// Rank hints per workgroup, `2^HINT_INDEX_BITS`, indexed by a tag's multiplicative hash.
const HINT_INDEX_BITS: u32 = 6;

/// The epilogue of a grouped kernel, at group `i`: its statements' lines, then each output
/// (local, type, value as stored).
struct Epilogue {
    statements: Vec<String>,
    outputs: Vec<(LocalId, Type, String)>,
}

/// A key column as the slot computation sees it.
struct KeyWord {
    /// The column's value as a `u32` below `range`.
    word: String,
    range: u64,
    ty: Type,
}

/// A value column: its accumulator type and value per row.
struct Column {
    local: LocalId,
    float: bool,
    value: String,
}

/// What the accumulating pass and the settle both need: how many groups a workgroup holds,
/// the value columns and their accumulators, and the names of the buffers they share.
struct GroupedLayout {
    /// Groups one workgroup holds (`GROUPED_GROUPS`), and the most the kernel adds up.
    groups: usize,
    /// The value columns, each once.
    columns: Vec<Column>,
    /// Each column's accumulator: (float, slot).
    slot_of: Vec<(bool, usize)>,
    /// Integer accumulators per group (slot 0 the count), and float ones.
    int_slots: usize,
    float_slots: usize,
    /// Whether a row is kept, and its slot in the key domain (WGSL at row `i`).
    keep: String,
    slot: String,
    /// Whether ranks are looked up through hints (`grouped_rank`): every tag fits beside a
    /// rank in a word (see [`HINT_RANK_BITS`]).
    hint_ranks: bool,
    /// Whether the counts' sums go through the float arrays and sums (the count is the only
    /// integer accumulator, and there are float ones): exact, since a count is below 2^32
    /// and every integer below 2^53 is an f64, whatever order the additions take. The
    /// workgroup memory of the i64 arrays then holds float accumulators instead, and the
    /// sums at each workgroup's end take half as many calls (TPC-H q1: three instead of
    /// six; its kernel took 86 us of GPU time at SF 1 on an H200 against 88).
    counts_in_floats: bool,
    /// Bindings: the workgroups' integer and float partials, the group count, and the
    /// buffer the host maps.
    partials_i: String,
    partials_f: Option<String>,
    count: String,
    results: String,
}

impl Generator<'_> {
    pub(super) fn assemble_grouped(mut self) -> Result<KernelLaunch, CodegenError> {
        let Some(grouped) = self.kernel.grouped.clone() else {
            return Err(CodegenError::malformed(&self.kernel.name, "not grouped"));
        };
        self.current = *self.kernel.statements.last().unwrap_or(&self.current);
        if !self.reductions.is_empty() {
            return Err(self.error(None, "a grouped kernel with reductions of its own"));
        }
        let (length, n) = self.vector_launch()?;

        // The rows kept: every key and value column must exist at the same rows.
        let mut kept: Option<Vec<String>> = None;
        let columns_read = grouped
            .keys
            .iter()
            .chain(grouped.results.iter().filter_map(|r| match &r.value {
                Some(Operand::Local(l, _)) => Some(l),
                _ => None,
            }))
            .copied()
            .collect::<Vec<_>>();
        for &local in &columns_read {
            let val = self.grouped_value(local)?;
            let mut condition: Vec<String> = self
                .guard(local, &length)
                .into_iter()
                .chain(val.active.iter().cloned())
                .collect();
            condition.sort();
            condition.dedup();
            match &kept {
                None => kept = Some(condition),
                Some(k) if *k == condition => {}
                Some(_) => {
                    return Err(self.error(
                        None,
                        "key and value columns kept by different masks (grouped on the host)",
                    ))
                }
            }
        }
        let keep = match kept.unwrap_or_default() {
            c if c.is_empty() => "true".to_string(),
            c => c.join(" && "),
        };

        // Keys: slots in the product of their ranges.
        let mut words = Vec::with_capacity(grouped.keys.len());
        for &key in &grouped.keys {
            let val = self.grouped_value(key)?;
            let (word, range) = match val.ty {
                Type::Bool => (format!("select(0u, 1u, {})", val.expr), 2),
                Type::Char => (val.expr.clone(), 256),
                Type::I8 => (format!("u32({} + 128i)", val.expr), 256),
                Type::I16 => (format!("u32({} + 32768i)", val.expr), 65536),
                ref other => return Err(self.error(None, format!("a grouped key of type {other}"))),
            };
            words.push(KeyWord {
                word,
                range,
                ty: val.ty.clone(),
            });
        }
        let mut strides = vec![1u64; words.len()];
        let mut domain = 1u64;
        for (k, word) in words.iter().enumerate().rev() {
            strides[k] = domain;
            domain = domain.saturating_mul(word.range);
        }
        if domain > MAX_DOMAIN {
            return Err(self.error(
                None,
                format!("a key domain of {domain} slots (grouped on the host above {MAX_DOMAIN})"),
            ));
        }
        let slot = words
            .iter()
            .zip(&strides)
            .map(|(w, s)| format!("({}) * {s}u", w.word))
            .collect::<Vec<_>>()
            .join(" + ");

        // Value columns, each once, in order of first use; slot 0 of the integers is the
        // count.
        let mut columns: Vec<Column> = Vec::new();
        for result in &grouped.results {
            let Some(Operand::Local(local, _)) = &result.value else {
                continue;
            };
            if columns.iter().any(|c| c.local == *local) {
                continue;
            }
            let val = self.grouped_value(*local)?;
            let float = val.ty.is_float();
            let acc = if float { Type::F64 } else { Type::I64 };
            let value = self.convert_expr(&val.expr, &val.ty, &acc).ok_or_else(|| {
                self.error(None, format!("cannot add up a value of type {}", val.ty))
            })?;
            columns.push(Column {
                local: *local,
                float,
                value,
            });
        }
        let float_slots = columns.iter().filter(|c| c.float).count();
        let int_slots = 1 + columns.len() - float_slots;
        let groups = (ACCUMULATORS / (float_slots + int_slots)).min(MAX_GROUPS);
        if groups < 2 {
            return Err(self.error(
                None,
                "too many value columns to add up in registers (grouped on the host)",
            ));
        }
        // Each column's accumulator: (float, slot).
        let mut slot_of: Vec<(bool, usize)> = Vec::with_capacity(columns.len());
        let (mut next_float, mut next_int) = (0, 1);
        for column in &columns {
            if column.float {
                slot_of.push((true, next_float));
                next_float += 1;
            } else {
                slot_of.push((false, next_int));
                next_int += 1;
            }
        }
        let slot_of_local = |local: &LocalId| {
            columns
                .iter()
                .position(|c| c.local == *local)
                .map(|k| slot_of[k])
        };

        // Scratch.
        self.use_type("i64");
        // Per accumulating workgroup, the mask of the seen slots' entries it wrote partials
        // of.
        let max_workgroups = u64::from(MAX_GROUPED_WORKGROUPS);
        self.scratch_binding(
            Scratch {
                element: GpuElement::U32,
                elements: Length::Constant(max_workgroups),
                purpose: ScratchPurpose::GroupSlots,
            },
            "group_tags".to_string(),
        );
        // The decline flag, then the group count (0 when declined): the count is the last
        // word, as of an offsets buffer.
        let (count_id, count) = self.scratch_binding(
            Scratch {
                element: GpuElement::U32,
                elements: Length::Constant(2),
                purpose: ScratchPurpose::GroupCount,
            },
            "group_count".to_string(),
        );
        // The accumulating workgroups done (the last to finish settles the groups), the
        // decline flag, and the slots seen (see `grouped_claim`): all zero between launches.
        self.scratch_binding(
            Scratch {
                element: GpuElement::U32,
                elements: Length::Constant(2 + groups as u64),
                purpose: ScratchPurpose::WorkgroupsDone,
            },
            "group_done".to_string(),
        );
        let max_partials = u64::from(MAX_GROUPED_WORKGROUPS);
        let int_entries = int_slots * groups;
        let float_entries = float_slots * groups;
        let partials = |g: &mut Self, element: GpuElement, elements: u64, name: &str| {
            g.scratch_binding(
                Scratch {
                    element,
                    elements: Length::Constant(elements.max(1)),
                    purpose: ScratchPurpose::GroupSums,
                },
                name.to_string(),
            )
            .1
        };
        let partials_i = partials(
            &mut self,
            GpuElement::I64,
            max_partials * int_entries as u64,
            "partials_i",
        );
        let partials_f = (float_slots > 0).then(|| {
            partials(
                &mut self,
                GpuElement::F64,
                max_partials * float_entries as u64,
                "partials_f",
            )
        });

        let GroupedOutputs {
            outputs,
            finish_lines,
            results,
        } = self.grouped_outputs(&grouped, groups, count_id, &words, &strides, &slot_of_local)?;

        // Passes.
        let partials_param = self.param("partials".to_string(), ParamValue::Workgroups { pass: 0 });
        let layout = GroupedLayout {
            groups,
            columns,
            slot_of,
            int_slots,
            float_slots,
            keep,
            slot,
            hint_ranks: domain < 1 << (32 - HINT_RANK_BITS),
            counts_in_floats: int_slots == 1 && float_slots > 0,
            partials_i,
            partials_f,
            count,
            results,
        };
        let mut text = self.accumulating_pass(&layout, &n);
        text += &settle::settle(&layout, &partials_param, &finish_lines);
        let passes = vec![Pass::Entry {
            entry_point: "main_pass".to_string(),
            dispatch: Dispatch::Elements {
                length,
                max_workgroups: MAX_GROUPED_WORKGROUPS,
            },
        }];
        // Its inputs as elements: the accumulating pass does more work per row than it
        // reads, and decoding is more of it. q1's kernel took 100 µs reading coded
        // quantities, discounts, taxes and flags, or the flags alone (one dictionary word
        // a row each), 95 reading them as they are (H200, SF 1). Measured again with
        // shaders compiled trusted (88 µs as they are): coded as generated 92, with the
        // code words read ahead and decoded only when the row is added 99, and with the
        // dictionaries copied into workgroup memory first 126.
        self.finish(text, passes, outputs, InputReads::Elements)
    }

    /// A key or value column of the grouped aggregation: one value per row of the kernel.
    fn grouped_value(&self, local: LocalId) -> Result<Val, CodegenError> {
        match self.values.get(&local) {
            Some(val) if val.level == Level::Element && !val.list => Ok(val.clone()),
            Some(_) => Err(self.error(
                None,
                format!("{} is not one value per row", self.name(local)),
            )),
            None => Err(CodegenError::malformed(
                &self.kernel.name,
                &format!("{} is not a value of the kernel", self.name(local)),
            )),
        }
    }
}
