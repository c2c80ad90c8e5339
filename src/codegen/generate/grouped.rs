//! Assembly of a grouped kernel (see [`crate::outline::kernel::GroupedAggregation`]): the
//! kernel's statements, then a group aggregation over the rows its masks keep, without
//! writing them.
//!
//! Every key column is a bool, char, i8 or i16, so a row's key is a *slot* in the product
//! of their ranges (first column most significant: slots ascend in key order). One pass,
//! `main_pass`, reads the rows once:
//! 1. Each workgroup gives the slots it meets entries of its own (`grouped_local_rank`, at
//!    most `GROUPED_GROUPS`), adds each kept row into its entry's accumulators in
//!    registers, and writes per entry the workgroup's sums and the slot they belong to (a
//!    workgroup meeting more slots than it has entries says so). Then it counts itself
//!    done (`group_done`).
//! 2. The last workgroup to count itself done settles the groups (`grouped_settle`): it
//!    gathers the distinct slots the workgroups met and ranks them in key order. With more
//!    groups than the kernel holds it declines: the flag is set, the group count is 0, and
//!    it writes nothing (the engine runs the unfused statements instead). Then it adds
//!    each group's sums over the workgroups, in workgroup order, so every sum's order is
//!    fixed by the data alone, and writes per group: its number (for `@keys`), its key,
//!    its results, and its epilogue's values. It writes them, after the group count, only
//!    into one buffer the host maps (`ScratchPurpose::GroupResults`): the read-back after
//!    the kernel is one mapping, and the outputs are host values with no buffers of their
//!    own (a later GPU step that reads one gets it uploaded: at most `MAX_GROUPS`
//!    elements). No workgroup waits for another, so the pass needs no forward-progress
//!    guarantee.
//!
//! The settle was a pass of its own (one workgroup), and before that three (ranks, one
//! workgroup per accumulator, results). On an H100, for TPC-H q1 at SF 1, that pass took
//! 32 us of GPU time after the 117 us of the accumulating one (148 us in all, both in one
//! submission or not), and the host recorded its dispatch. Folded into the accumulating
//! pass the kernel took 146 us; with each run's loads written out one by one (see
//! `run_sum`) 136.5 us, and with the workgroups' entries found in loops of constant bounds
//! 133.5 us: the settle now adds some 17 us after the last workgroup's rows.
//!
//! Where q1's GPU time goes at SF 1 (H200, 119 us in all, throw-away builds that left one
//! part out): without the settle 103 us; with every row added to one group instead of the
//! switch (ranks still found) 106 us; with no ranks and no switch 62 us, which is about
//! what streaming its 264 MB costs. So ranks, the switch and the workgroups' sums take some
//! 40 us together, the settle 16 us. (Leaving the workgroups' sums out is no measure: the
//! compiler then drops the additions and the value columns' loads.)

use super::*;
use horsec_runtime::args::group::Reduction;

/// Most accumulators (values and the count, times groups) one invocation keeps. For TPC-H
/// q1 at SF 1 (six accumulators a group, four groups met) on an H200, 24 (four groups in
/// registers, fewer registers) took 126 us of GPU time against 119 with 48, and 30 or 36
/// were no faster either. Accumulators in workgroup memory instead of registers (each
/// invocation its own column of them, at an address from the row's rank: no switch and few
/// registers, but four groups in the 48 KiB NVIDIA gives a workgroup) took 163-217 us, a
/// load and a store of workgroup memory per addition.
const ACCUMULATORS: usize = 48;
// The settle keeps the groups' totals in the sum arrays past their first workgroup's worth
// of values (`GROUPED_TOTALS`): every accumulator's total fits there.
const _: () = assert!(ACCUMULATORS <= (BATCH - 1) * KERNEL_WORKGROUP_SIZE as usize);
/// Most groups a grouped kernel adds up.
const MAX_GROUPS: usize = 16;
/// Accumulators one workgroup sum adds at once: two arrays of this many per invocation
/// (i64 and f64) take 16 KiB, WebGPU's least workgroup memory.
const BATCH: usize = 4;
/// Most workgroups of the accumulating pass: few enough that every one is resident at
/// once on a large GPU, so that its sums at the end are paid once per workgroup slot.
const MAX_GROUPED_WORKGROUPS: u32 = 256;
/// Rows each invocation of the accumulating pass has in flight: it adds these while the
/// loads of as many following rows are under way. Each invocation handles some 90 rows of
/// TPC-H q1 at SF 1 one after another, every step waiting on memory: on an H100 the
/// kernel's GPU time went 0.18 → 0.16 ms with 2 (4 was no faster, and slower with 48
/// accumulators: registers).
const ROWS_IN_FLIGHT: u32 = 2;
/// Accumulating workgroups whose partials of one accumulator one invocation of the settle
/// adds, in order, before the runs' sums are added by a tree.
const GROUPED_RUN: u32 = 16;
/// Values of one accumulator (one per invocation) that one invocation adds in order, at the
/// end of each accumulating workgroup (see `grouped_sum_*`).
const SUM_RUN: u32 = 16;
/// Most slots of a key domain: a slot and its tag (slot + 1, 0 meaning none) are u32s.
const MAX_DOMAIN: u64 = u32::MAX as u64;

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
        // The slots each accumulating workgroup met (slot + 1 per entry, 0 unused), then
        // per workgroup whether it met more than it holds.
        let max_workgroups = u64::from(MAX_GROUPED_WORKGROUPS);
        self.scratch_binding(
            Scratch {
                element: GpuElement::U32,
                elements: Length::Constant(max_workgroups * (groups as u64 + 1)),
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
        // The accumulating workgroups done: the last to finish settles the groups.
        self.scratch_binding(
            Scratch {
                element: GpuElement::U32,
                elements: Length::Constant(1),
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

        // Outputs: each as long as the group count, the flag one element.
        let group_length = Length::Compacted(count_id);
        let mut outputs = Vec::new();
        // Each output as written: its index in `outputs`, element and value. An output has
        // no buffer of its own: the settle writes its values only where the host maps them
        // (after the group count), and the launch takes them from there as host values. A
        // grouped kernel ends a query's aggregation (TPC-H q1's and q8's feed only the
        // result table), and a buffer bound per output cost the host their allocation and
        // wgpu's tracking at encoding, submission and clean-up on every run.
        let mut written: Vec<(usize, GpuElement, String)> = Vec::new();
        let mut output =
            |g: &mut Self, local: LocalId, ty: Type, value: String| -> Result<(), CodegenError> {
                let element = g.output_element(local, &ty)?;
                written.push((outputs.len(), element, value));
                outputs.push(KernelOutput {
                    slot: Self::slot(local),
                    ty,
                    layout: OutputLayout::Vector {
                        length: group_length.clone(),
                        capacity: Length::Constant(groups as u64),
                    },
                    dictionary: None,
                });
                Ok(())
            };
        // Each group's values, as the finish pass writes them: its number, its keys, its
        // results.
        let mut per_group: Vec<(LocalId, Type, String)> = Vec::new();
        if let Some(first) = grouped.first {
            per_group.push((first, Type::I64, "i64(g)".to_string()));
        }
        for &key in &grouped.key_outputs {
            let k = grouped.keys.iter().position(|&c| c == key).ok_or_else(|| {
                CodegenError::malformed(&self.kernel.name, "a key output is no key")
            })?;
            let word = &words[k];
            let decoded = format!("((slot / {}u) % {}u)", strides[k], word.range);
            // Parenthesized: the epilogue's statements take it as an operand (`k * k` of
            // an i8 key was `i32(w) - 128i * i32(w) - 128i`).
            let value = match word.ty {
                Type::I8 => format!("(i32({decoded}) - 128i)"),
                Type::I16 => format!("(i32({decoded}) - 32768i)"),
                _ => decoded,
            };
            per_group.push((key, word.ty.clone(), value));
        }
        for result in &grouped.results {
            let value_ty = match &result.value {
                Some(Operand::Local(l, _)) => Some(self.grouped_value(*l)?.ty),
                _ => None,
            };
            let ty = result.reduction.result_type(value_ty.as_ref());
            let total = |(float, s): (bool, usize)| {
                if float {
                    format!("grouped_f[GROUPED_TOTALS + {s}u * GROUPED_GROUPS + g]")
                } else {
                    format!("grouped_i[GROUPED_TOTALS + {s}u * GROUPED_GROUPS + g]")
                }
            };
            let slot = match &result.value {
                Some(Operand::Local(l, _)) => slot_of_local(l),
                _ => None,
            };
            let value = match (result.reduction, slot) {
                (Reduction::Len, _) => "count".to_string(),
                (Reduction::Avg, Some(s)) => format!("(f64({}) / f64(count))", total(s)),
                (Reduction::Sum, Some(s)) if ty == Type::F64 && !s.0 => {
                    format!("f64({})", total(s))
                }
                (Reduction::Sum, Some(s)) => total(s),
                (_, None) => {
                    return Err(self.error(
                        None,
                        format!("`{}` without a value column", result.reduction.name()),
                    ))
                }
            };
            per_group.push((result.target, ty, value));
        }
        // Written where something besides the epilogue reads them.
        let mut finish_lines = Vec::new();
        for (local, ty, value) in &per_group {
            if self.kernel.outputs.contains(local) {
                output(&mut self, *local, ty.clone(), value.clone())?;
            }
        }
        if !grouped.epilogue.is_empty() {
            let lines = self.grouped_epilogue(&grouped, &per_group, &group_length)?;
            for (local, ty, line) in lines.outputs {
                output(&mut self, local, ty, line)?;
            }
            finish_lines.extend(lines.statements);
            finish_lines.insert(0, "let i = g;".to_string());
        }
        // The values where the host maps them, after the group count and its flag (see
        // `ScratchPurpose::GroupResults`): the read-back after the kernel maps one buffer.
        let mut copies = Vec::with_capacity(written.len());
        let mut offset = 2u64;
        for (k, element, _) in &written {
            copies.push((*k, offset));
            offset += groups as u64 * (element.size() / 4);
        }
        self.use_type("u64");
        let (_, results) = self.scratch_binding(
            Scratch {
                element: GpuElement::U32,
                elements: Length::Constant(offset),
                purpose: ScratchPurpose::GroupResults {
                    count: count_id,
                    outputs: copies.clone(),
                },
            },
            "group_results".to_string(),
        );
        for ((_, element, value), (_, at)) in written.iter().zip(&copies) {
            // Through a variable of the stored type, so that a literal has that type too.
            let ty = element.wgsl();
            if element.size() == 8 {
                finish_lines.extend([
                    "{".to_string(),
                    format!("    let value: {ty} = {value};"),
                    "    let bits = bitcast<u64>(value);".to_string(),
                    format!("    {results}[{at}u + 2u * g] = u32(bits & 4294967295lu);"),
                    format!("    {results}[{at}u + 2u * g + 1u] = u32(bits >> 32u);"),
                    "}".to_string(),
                ]);
            } else {
                finish_lines.extend([
                    "{".to_string(),
                    format!("    let value: {ty} = {value};"),
                    format!("    {results}[{at}u + g] = bitcast<u32>(value);"),
                    "}".to_string(),
                ]);
            }
        }
        // The launch resolves parameters before the pass runs: one that is (or depends on)
        // the group count would read the count before this pass has written it, and the
        // launch would keep that stale count for the outputs' length too.
        let reads_count = self.params.iter().any(|p| {
            let ParamValue::Length(length) = &p.value else {
                return false;
            };
            let mut counts = Vec::new();
            length.compactions(&mut counts);
            counts.contains(&count_id)
        });
        if reads_count {
            return Err(self.error(None, "a parameter that needs the group count"));
        }
        // The decline flag: word 0 of the count buffer, read back with the count.
        outputs.push(KernelOutput {
            slot: Self::slot(grouped.declined),
            ty: Type::Bool,
            layout: OutputLayout::Flag {
                scratch: count_id,
                word: 0,
            },
            dictionary: None,
        });

        // Passes.
        let partials_param = self.param("partials".to_string(), ParamValue::Workgroups { pass: 0 });
        let tags = u64::from(MAX_GROUPED_WORKGROUPS) * groups as u64;
        let mut text = format!(
            "const GROUPED_GROUPS: u32 = {groups}u;
const GROUPED_SUM_RUN: u32 = {SUM_RUN}u;
const GROUPED_SUM_RUNS: u32 = WORKGROUP_SIZE / GROUPED_SUM_RUN;
const GROUPED_TAGS: u32 = {tags}u;
const GROUPED_INT_ENTRIES: u32 = {int_entries}u;
const GROUPED_FLOAT_ENTRIES: u32 = {float_entries}u;
// The settle keeps each group's totals in the workgroup's sum arrays past the first
// WORKGROUP_SIZE values (its trees use those), rather than in device memory: no binding, no
// storage barrier and no round trip to memory before the groups' results.
const GROUPED_TOTALS: u32 = WORKGROUP_SIZE;

var<workgroup> grouped_live: u32;
var<workgroup> grouped_seen: array<atomic<u32>, GROUPED_GROUPS>;
var<workgroup> grouped_slots: array<u32, GROUPED_GROUPS>;
var<workgroup> grouped_declined: atomic<u32>;
var<workgroup> grouped_local: array<atomic<u32>, GROUPED_GROUPS>;
var<workgroup> grouped_overflow: atomic<u32>;
var<workgroup> grouped_ticket: u32;

"
        );
        // Workgroup sums of up to BATCH accumulators at once, each in a fixed order: run r
        // holds invocations r, r + SUM_RUNS, ... (so that a warp's reads fall in distinct
        // banks), added in that order, then the runs in order. Two barriers a batch; a tree
        // halving the invocations took one per level, nine a batch. On an H100, TPC-H q1's
        // kernel at SF 1 took 133.5 us with the trees (120 us with no workgroup sums at
        // all), the same with runs of consecutive invocations (16-way bank conflicts), and
        // 129-131 us with these.
        let mut kinds_used = vec!["i64"];
        if float_slots > 0 {
            kinds_used.push("f64");
        }
        for ty in kinds_used {
            let shared = if ty == "f64" {
                "grouped_f"
            } else {
                "grouped_i"
            };
            let _ = write!(
                text,
                "var<workgroup> {shared}: array<{ty}, {values}>;
var<workgroup> {shared}_runs: array<{ty}, {runs}>;

// Invocation b < k gets the workgroup's sum of accumulator b (whose value of invocation t
// is at {shared}[b * WORKGROUP_SIZE + t]); the others get 0.
fn grouped_sum_{ty}(local: u32, k: u32) -> {ty} {{
    workgroupBarrier();
    if local < k * GROUPED_SUM_RUNS {{
        let at = (local / GROUPED_SUM_RUNS) * WORKGROUP_SIZE + local % GROUPED_SUM_RUNS;
        var run = {shared}[at];
        for (var j = 1u; j < GROUPED_SUM_RUN; j = j + 1u) {{
            run = run + {shared}[at + j * GROUPED_SUM_RUNS];
        }}
        {shared}_runs[local] = run;
    }}
    workgroupBarrier();
    var sum = {ty}(0);
    if local < k {{
        sum = {shared}_runs[local * GROUPED_SUM_RUNS];
        for (var j = 1u; j < GROUPED_SUM_RUNS; j = j + 1u) {{
            sum = sum + {shared}_runs[local * GROUPED_SUM_RUNS + j];
        }}
    }}
    return sum;
}}

",
                values = BATCH * KERNEL_WORKGROUP_SIZE as usize,
                runs = BATCH * (KERNEL_WORKGROUP_SIZE / SUM_RUN) as usize,
            );
        }
        // The row function: the kernel's statements at row `i`, whether the row is kept,
        // its slot and its values. The accumulating pass calls it for several rows before
        // it adds any, so that their loads overlap.
        text += "struct GroupedRow {\n    keep: bool,\n    slot: u32,\n";
        for (j, column) in columns.iter().enumerate() {
            let ty = if column.float { "f64" } else { "i64" };
            text += "    x_";
            push_decimal(&mut text, j as u64);
            push!(&mut text, ": ", ty, ",\n");
        }
        // Columns every row reads come in as arguments, read a row ahead (see the pass).
        let ahead = self.unconditional_row_reads();
        let params: String = ahead
            .iter()
            .enumerate()
            .map(|(k, (_, reg))| format!(", ahead{k}: {reg}"))
            .collect();
        let _ = write!(
            text,
            "}}\n\nfn grouped_row(i: u32{params}) -> GroupedRow {{\n    var row: GroupedRow;\n"
        );
        let mut row_lines = indent(&self.element_lines, 1);
        for (k, (read, _)) in ahead.iter().enumerate() {
            row_lines = row_lines.replace(read.as_str(), &format!("ahead{k}"));
        }
        text += &row_lines;
        let _ = writeln!(text, "    if {keep} {{");
        text += "        row.keep = true;\n";
        let _ = writeln!(text, "        row.slot = {slot};");
        for (j, column) in columns.iter().enumerate() {
            text += "        row.x_";
            push_decimal(&mut text, j as u64);
            push!(&mut text, " = ", column.value, ";\n");
        }
        text += "    }\n    return row;\n}\n\n";
        // A slot's rank in its workgroup: the slots a workgroup meets take the entries of
        // `grouped_local` (slot + 1; 0 free) in the order its invocations meet them. Which
        // invocation claims an entry first does not matter: every invocation adds its own
        // rows per slot, and the workgroup sums each slot's accumulators in invocation
        // order, whatever entry the slot has. More slots than entries overflow.
        text += "fn grouped_local_rank(slot: u32) -> u32 {
    let tag = slot + 1u;
    var k = 0u;
    loop {
        if k == GROUPED_GROUPS {
            atomicStore(&grouped_overflow, 1u);
            return GROUPED_GROUPS;
        }
        let held = atomicLoad(&grouped_local[k]);
        if held == tag {
            return k;
        }
        if held == 0u {
            let claim = atomicCompareExchangeWeak(&grouped_local[k], 0u, tag);
            if claim.exchanged || claim.old_value == tag {
                return k;
            }
            if claim.old_value == 0u {
                // A spurious failure: the entry is still free.
                continue;
            }
        }
        k = k + 1u;
    }
    // Never reached (the loop only returns); naga asks for a return at the end.
    return GROUPED_GROUPS;
}

";
        // 1. Accumulators in registers per workgroup slot, partials per workgroup with
        // the slots they belong to.
        text += &self.entry_header("main_pass");
        let _ = write!(
            text,
            "    let stride = num_workgroups.x * WORKGROUP_SIZE;
    let rows = {n};
"
        );
        // One row's additions (`r` a GroupedRow), by a switch on its workgroup slot: only
        // that slot's accumulators change. (Adding `select(0, x, rank == g)` to every
        // group's accumulators instead, with no branch, took q1's kernel at SF 1 on an
        // H200 from 119 us to 188; keeping the last slot's rank in a register, to skip the
        // look-up when a row repeats it, to 123; keeping every slot's tag met in a register
        // and finding the rank among them with selects, the workgroup's atomics only for a
        // tag not met yet, to 154.)
        // (Built by concatenation: groups times columns lines, twice per kernel.)
        let add = |r: &str| -> String {
            let mut lines = vec![
                cat!("if ", r, ".keep {"),
                cat!("    switch grouped_local_rank(", r, ".slot) {"),
            ];
            for g in 0..groups {
                let mut case = String::from("        case ");
                push_decimal(&mut case, g as u64);
                case += "u: {";
                lines.push(case);
                let mut count = String::from("count_");
                push_decimal(&mut count, g as u64);
                lines.push(cat!("            ", count, " = ", count, " + 1u;"));
                for (j, &(float, s)) in slot_of.iter().enumerate() {
                    let mut var = String::from(if float { "f_" } else { "j_" });
                    push_decimal(&mut var, s as u64);
                    var += "_";
                    push_decimal(&mut var, g as u64);
                    let mut line = cat!("            ", var, " = ", var, " + ", r, ".x_");
                    push_decimal(&mut line, j as u64);
                    line += ";";
                    lines.push(line);
                }
                lines.push("        }".to_string());
            }
            lines.push("        default: {}".to_string());
            lines.push("    }".to_string());
            lines.push("}".to_string());
            indent(&lines, 2)
        };
        // Per kind (integers, floats): (slot, variable, entry), slot-major.
        let mut ints: Vec<(usize, String, usize)> = Vec::new();
        let mut floats: Vec<(usize, String, usize)> = Vec::new();
        for g in 0..groups {
            let mut count = String::from("count_");
            push_decimal(&mut count, g as u64);
            push!(&mut text, "    var ", count, ": u32 = 0u;\n");
            ints.push((g, cat!("i64(", count, ")"), g));
            for &(float, s) in &slot_of {
                let (name, ty, zero) = if float {
                    ("f_", "f64", "0.0lf")
                } else {
                    ("j_", "i64", "0li")
                };
                let mut var = String::from(name);
                push_decimal(&mut var, s as u64);
                var += "_";
                push_decimal(&mut var, g as u64);
                push!(&mut text, "    var ", var, ": ", ty, " = ", zero, ";\n");
                let entry = s * groups + g;
                if float {
                    floats.push((g, var, entry));
                } else {
                    ints.push((g, var, entry));
                }
            }
        }
        // Rows in steps of ROWS_IN_FLIGHT, whose always-read columns were read during the
        // step before: their loads overlap the rows' arithmetic and adds (with none read
        // ahead, the pass waited on memory every row; q1 at SF 10 took 1.39 ms of GPU time
        // on an H100, 1.19 with one row ahead). Every invocation adds its rows in ascending
        // order: row `i + r * stride` is the step's row r.
        text += "    var i = global_id.x;\n";
        let read_at = |read: &str, index: &str| read.replacen("[i]", &format!("[{index}]"), 1);
        let at = |r: u32| match r {
            0 => "i".to_string(),
            1 => "i + stride".to_string(),
            r => format!("i + {r}u * stride"),
        };
        for r in 0..ROWS_IN_FLIGHT {
            for (k, (read, reg)) in ahead.iter().enumerate() {
                let first = read_at(read, &format!("min({}, max(rows, 1u) - 1u)", at(r)));
                let _ = writeln!(text, "    var next{k}_{r}: {reg} = {first};");
            }
        }
        text += "    loop {\n        if i >= rows {\n            break;\n        }\n";
        for r in 0..ROWS_IN_FLIGHT {
            for (k, (read, reg)) in ahead.iter().enumerate() {
                let following =
                    read_at(read, &format!("min({}, rows - 1u)", at(ROWS_IN_FLIGHT + r)));
                let _ = writeln!(text, "        let row{k}_{r}: {reg} = next{k}_{r};");
                let _ = writeln!(text, "        next{k}_{r} = {following};");
            }
        }
        for r in 0..ROWS_IN_FLIGHT {
            let args: String = (0..ahead.len()).map(|k| format!(", row{k}_{r}")).collect();
            let row = at(r);
            if r == 0 {
                let _ = writeln!(text, "        let r0 = grouped_row({row}{args});");
                text += &add("r0");
            } else {
                // Past the last row the step's later rows are clamped reads: skipped.
                let _ = writeln!(text, "        if {row} < rows {{");
                let _ = writeln!(text, "            let r{r} = grouped_row({row}{args});");
                text += &indent(
                    &add(&format!("r{r}"))
                        .lines()
                        .map(String::from)
                        .collect::<Vec<_>>(),
                    1,
                );
                text += "        }\n";
            }
        }
        let _ = writeln!(text, "        i = {};\n    }}", at(ROWS_IN_FLIGHT));
        let _ = write!(
            text,
            "    // The workgroup's slots (and whether it met too many), then the sums of the
    // accumulators of the slots it met, a batch at a time.
    workgroupBarrier();
    if local_id.x == 0u {{
        var live = 0u;
        for (var k = 0u; k < GROUPED_GROUPS; k = k + 1u) {{
            let tag = atomicLoad(&grouped_local[k]);
            {tags_buffer}[workgroup_id.x * GROUPED_GROUPS + k] = tag;
            if tag != 0u {{
                live = k + 1u;
            }}
        }}
        {tags_buffer}[GROUPED_TAGS + workgroup_id.x] = atomicLoad(&grouped_overflow);
        grouped_live = live;
    }}
    let live = workgroupUniformLoad(&grouped_live);
",
            tags_buffer = "group_tags",
        );
        let kinds = [
            (
                "i64",
                "grouped_i",
                partials_i.as_str(),
                "GROUPED_INT_ENTRIES",
                &ints,
            ),
            (
                "f64",
                "grouped_f",
                "partials_f",
                "GROUPED_FLOAT_ENTRIES",
                &floats,
            ),
        ];
        for (ty, shared, buffer, entries, accumulators) in kinds {
            for batch in accumulators.chunks(BATCH) {
                let lowest = batch.iter().map(|(g, ..)| *g).min().unwrap_or(0);
                let _ = writeln!(text, "    if {lowest}u < live {{");
                for (b, (_, var, _)) in batch.iter().enumerate() {
                    push!(&mut text, "        ", shared, "[");
                    push_decimal(&mut text, b as u64);
                    push!(&mut text, "u * WORKGROUP_SIZE + local_id.x] = ", var, ";\n");
                }
                let _ = writeln!(
                    text,
                    "        let sum = grouped_sum_{ty}(local_id.x, {}u);",
                    batch.len()
                );
                // Invocation b holds accumulator b's sum.
                text += "        switch local_id.x {\n";
                for (b, (_, _, entry)) in batch.iter().enumerate() {
                    text += "            case ";
                    push_decimal(&mut text, b as u64);
                    push!(
                        &mut text,
                        "u: { ",
                        buffer,
                        "[workgroup_id.x * ",
                        entries,
                        " + "
                    );
                    push_decimal(&mut text, *entry as u64);
                    text += "u] = sum; }\n";
                }
                text += "            default: {}\n";
                text += "        }\n    }\n";
            }
        }
        text += "    // The last workgroup to finish settles the groups. Each writes its tags and
    // partials before it counts itself done (the barrier orders them before the count, at
    // device scope); the last reads them all after its count (the barrier orders its reads
    // after it), and sets the count back to zero for the next launch (every workgroup has
    // counted itself by then). No workgroup waits for another.
    storageBarrier();
    if local_id.x == 0u {
        grouped_ticket = atomicAdd(&group_done[0], 1u);
    }
    let ticket = workgroupUniformLoad(&grouped_ticket);
    if ticket + 1u == num_workgroups.x {
        storageBarrier();
        if local_id.x == 0u {
            atomicStore(&group_done[0], 0u);
        }
        grouped_settle(local_id.x);
    }
}

";
        // 2. The groups: the distinct slots the workgroups met, ranked in key order (or a
        // decline); each group's sums over the workgroups; its results.
        if MAX_GROUPED_WORKGROUPS > KERNEL_WORKGROUP_SIZE {
            return Err(CodegenError::malformed(
                &self.kernel.name,
                "more accumulating workgroups than invocations to combine their partials",
            ));
        }
        text += "// Adds a slot's tag (slot + 1) to the distinct ones met, in the first free entry
// (which entry does not matter: ranks come from the tags); more than GROUPED_GROUPS decline.
fn grouped_seen_insert(tag: u32) {
    var k = 0u;
    loop {
        if k == GROUPED_GROUPS {
            atomicStore(&grouped_declined, 1u);
            return;
        }
        let held = atomicLoad(&grouped_seen[k]);
        if held == tag {
            return;
        }
        if held == 0u {
            let claim = atomicCompareExchangeWeak(&grouped_seen[k], 0u, tag);
            if claim.exchanged || claim.old_value == tag {
                return;
            }
            if claim.old_value == 0u {
                // A spurious failure: the entry is still free.
                continue;
            }
        }
        k = k + 1u;
    }
}

";
        let mut tail = String::new();
        text += "// The groups, by one workgroup (invocation `local`) once every accumulating one is done.
fn grouped_settle(local: u32) {
";
        let _ = write!(
            text,
            "    // Invocation p holds accumulating workgroup p's tags, read at once (a dispatched
    // workgroup writes all of its own; the others' are not written).
    var own: array<u32, GROUPED_GROUPS>;
    if local < {partials_param} {{
        for (var k = 0u; k < GROUPED_GROUPS; k = k + 1u) {{
            own[k] = group_tags[local * GROUPED_GROUPS + k];
        }}
        if group_tags[GROUPED_TAGS + local] != 0u {{
            atomicStore(&grouped_declined, 1u);
        }}
    }}
    for (var k = 0u; k < GROUPED_GROUPS; k = k + 1u) {{
        if own[k] != 0u {{
            grouped_seen_insert(own[k]);
        }}
    }}
    workgroupBarrier();
    // A group's rank: the tags met below its own.
    if local < GROUPED_GROUPS {{
        let tag = atomicLoad(&grouped_seen[local]);
        if tag != 0u {{
            var rank = 0u;
            for (var k = 0u; k < GROUPED_GROUPS; k = k + 1u) {{
                let other = atomicLoad(&grouped_seen[k]);
                if other != 0u && other < tag {{
                    rank = rank + 1u;
                }}
            }}
            grouped_slots[rank] = tag - 1u;
        }}
    }}
    if local == 0u {{
        var total = 0u;
        for (var k = 0u; k < GROUPED_GROUPS; k = k + 1u) {{
            if atomicLoad(&grouped_seen[k]) != 0u {{
                total = total + 1u;
            }}
        }}
        let declined = atomicLoad(&grouped_declined) != 0u;
        {count}[0] = select(0u, 1u, declined);
        {count}[1] = select(total, 0u, declined);
        {results}[0] = select(0u, 1u, declined);
        {results}[1] = select(total, 0u, declined);
        grouped_live = select(total, 0u, declined);
    }}
    let live = workgroupUniformLoad(&grouped_live);
"
        );
        // Each group's sums over the workgroups. Invocations work in runs of GROUPED_RUN
        // workgroups, run r holding workgroups r, r + GROUPED_RUNS, ... (a warp's reads of
        // `grouped_entries` then fall in distinct banks; consecutive workgroups per run read
        // one bank, though on an H100 q1's kernel took the same time either way): each adds
        // its run's partials of one accumulator in that order, then the runs' sums are
        // added by a fixed tree (GROUPED_RUNS per accumulator), for GROUPED_LANES
        // accumulators at once. Accumulators are numbered group-major
        // (`a = g * slots + s`), as the accumulating pass numbers them. (A tree over all
        // the workgroups for four accumulators at a time took 27 of the pass's 39 us for q1
        // at SF 1 on an H100.)
        let entry_words = groups.div_ceil(4);
        let float_decl = if partials_f.is_some() {
            "        var acc_f: f64 = 0.0lf;\n"
        } else {
            ""
        };
        // The loads are unconditional (indexes kept in bounds, the values not taken
        // masked out) and written out one by one before the first add, so that a run's
        // loads are in flight together: loaded under a condition, each waited for the one
        // before (34 us for the separate settle pass against 32), and in a loop the sums
        // and the results took 19 us of q1's kernel at SF 1 on an H100, against 10 written
        // out.
        let run_sum = |acc: &str,
                       zero: &str,
                       partials: &str,
                       entries: &str,
                       slots: usize,
                       live: &str| {
            let mut text = format!(
                "        if a < {live} {{
            let g = a / {slots}u;
            let s = a % {slots}u;
"
            );
            for i in 0..GROUPED_RUN {
                let _ = writeln!(
                    text,
                    "            let p{i} = {i}u * GROUPED_RUNS + run;
            let k{i} = grouped_entry(p{i}, g);
            let v{i} = {partials}[p{i} * {entries} + s * GROUPED_GROUPS + min(k{i}, GROUPED_GROUPS - 1u)];"
                );
            }
            for i in 0..GROUPED_RUN {
                let _ = writeln!(
                    text,
                    "            {acc} = {acc} + select({zero}, v{i}, p{i} < {partials_param} && k{i} < GROUPED_GROUPS);"
                );
            }
            text += "        }\n";
            text
        };
        let mut adds = format!(
            "        var acc_i: i64 = 0li;\n{float_decl}{}",
            run_sum(
                "acc_i",
                "0li",
                &partials_i,
                "GROUPED_INT_ENTRIES",
                int_slots,
                "live_i"
            )
        );
        let mut tree = String::from(
            "                grouped_i[local] = grouped_i[local] + grouped_i[local + half];\n",
        );
        let mut store = format!(
            "            if a < live_i {{
                grouped_i[GROUPED_TOTALS + (a % {int_slots}u) * GROUPED_GROUPS + a / {int_slots}u] = grouped_i[local];
            }}
"
        );
        let mut live_floats = "0u".to_string();
        if let Some(partials_f) = &partials_f {
            adds += &run_sum(
                "acc_f",
                "0.0lf",
                partials_f,
                "GROUPED_FLOAT_ENTRIES",
                float_slots,
                "live_f",
            );
            tree +=
                "                grouped_f[local] = grouped_f[local] + grouped_f[local + half];\n";
            let _ = write!(
                store,
                "            if a < live_f {{
                grouped_f[GROUPED_TOTALS + (a % {float_slots}u) * GROUPED_GROUPS + a / {float_slots}u] = grouped_f[local];
            }}
"
            );
            live_floats = format!("live * {float_slots}u");
        }
        adds += "        grouped_i[local] = acc_i;\n";
        if partials_f.is_some() {
            adds += "        grouped_f[local] = acc_f;\n";
        }
        let _ = write!(
            text,
            "    // Each accumulating workgroup's entry of each group (255 where it met none), a byte
    // each: where its partials of that group are. Loops of constant bounds only, so that
    // the compiler unrolls them and `own` stays in registers (indexed by a loop variable
    // of a bound known only at run time, it was local memory: 3 us of q1's 136.5 at SF 1
    // on an H100).
    if local < {partials_param} {{
        for (var w = 0u; w < {entry_words}u; w = w + 1u) {{
            var word = 0u;
            for (var j = 0u; j < 4u; j = j + 1u) {{
                let g = w * 4u + j;
                var entry = 255u;
                if g < live {{
                    let tag = grouped_slots[g] + 1u;
                    for (var k = 0u; k < GROUPED_GROUPS; k = k + 1u) {{
                        if own[k] == tag {{
                            entry = k;
                        }}
                    }}
                }}
                word = word | (entry << (8u * j));
            }}
            grouped_entries[w * GROUPED_RUNS * GROUPED_RUN + local] = word;
        }}
    }}
    workgroupBarrier();
    let lane = local / GROUPED_RUNS;
    let run = local % GROUPED_RUNS;
    let live_i = live * {int_slots}u;
    let live_f = {live_floats};
    let batches = (max(live_i, live_f) + GROUPED_LANES - 1u) / GROUPED_LANES;
    for (var batch = 0u; batch < batches; batch = batch + 1u) {{
        let a = batch * GROUPED_LANES + lane;
{adds}        for (var half = GROUPED_RUNS / 2u; half > 0u; half = half / 2u) {{
            workgroupBarrier();
            if run < half {{
{tree}            }}
        }}
        if run == 0u {{
{store}        }}
        workgroupBarrier();
    }}
"
        );
        // The entry helper and the table it reads (module scope).
        let _ = write!(
            tail,
            "const GROUPED_RUN: u32 = {GROUPED_RUN}u;
const GROUPED_RUNS: u32 = {MAX_GROUPED_WORKGROUPS}u / GROUPED_RUN;
const GROUPED_LANES: u32 = WORKGROUP_SIZE / GROUPED_RUNS;
var<workgroup> grouped_entries: array<u32, {}>;

// The entry accumulating workgroup p gave group g (GROUPED_GROUPS or more: none).
fn grouped_entry(p: u32, g: u32) -> u32 {{
    return (grouped_entries[(g / 4u) * GROUPED_RUNS * GROUPED_RUN + p] >> (8u * (g % 4u))) & 255u;
}}
",
            u64::from(MAX_GROUPED_WORKGROUPS) * entry_words as u64
        );
        // Per group: its number, key and results (the sums written by invocation 0 above).
        let _ = write!(
            text,
            "    workgroupBarrier();
    for (var g = local; g < live; g = g + WORKGROUP_SIZE) {{
        let slot = grouped_slots[g];
        let count = grouped_i[GROUPED_TOTALS + g];
{}    }}
}}
",
            indent(&finish_lines, 2)
        );
        text += "\n";
        text += &tail;
        let passes = vec![Pass::Entry {
            entry_point: "main_pass".to_string(),
            dispatch: Dispatch::Elements {
                length,
                max_workgroups: MAX_GROUPED_WORKGROUPS,
            },
        }];
        self.finish(text, passes, outputs)
    }

    /// The epilogue's statements at group `i` (see [`GroupedAggregation::epilogue`]), over
    /// the group's values `per_group` (local, type, value as stored), and the values of its
    /// outputs as stored.
    fn grouped_epilogue(
        &mut self,
        grouped: &crate::outline::kernel::GroupedAggregation,
        per_group: &[(LocalId, Type, String)],
        group_length: &Length,
    ) -> Result<Epilogue, CodegenError> {
        // The row function's values and variables are not in scope here.
        self.computed.clear();
        let row_lines = std::mem::take(&mut self.element_lines);
        for (local, ty, value) in per_group {
            let mut val = Val::scalar(wgsl::load(value, ty), ty.clone());
            val.level = Level::Element;
            self.values.insert(*local, val);
            self.lengths.insert(*local, group_length.clone());
        }
        let checks = self.launch_checks.len();
        self.in_epilogue = true;
        let generated = self.epilogue_statements(grouped, group_length);
        self.in_epilogue = false;
        generated?;
        if self.launch_checks.len() != checks {
            return Err(self.error(None, "an epilogue that needs checks at launch"));
        }
        let mut outputs = Vec::new();
        let epilogue_outputs: Vec<LocalId> = self
            .kernel
            .outputs
            .iter()
            .copied()
            .filter(|o| !per_group.iter().any(|(local, ..)| local == o))
            .collect();
        for local in epilogue_outputs {
            let ty = self.output_type(local);
            let val = match self.values.get(&local) {
                Some(val) if val.active.is_empty() && !val.list && val.level != Level::Cell => {
                    val.clone()
                }
                _ => {
                    return Err(self.error(
                        None,
                        format!(
                            "epilogue output {} is not one value per group",
                            self.name(local)
                        ),
                    ))
                }
            };
            outputs.push((local, ty, wgsl::store(&val.expr, &val.ty)));
        }
        let statements = std::mem::replace(&mut self.element_lines, row_lines);
        Ok(Epilogue {
            statements,
            outputs,
        })
    }

    /// The epilogue's statements, in order (see [`Generator::grouped_epilogue`]).
    fn epilogue_statements(
        &mut self,
        grouped: &crate::outline::kernel::GroupedAggregation,
        group_length: &Length,
    ) -> Result<(), CodegenError> {
        for &id in &grouped.epilogue {
            self.current = id;
            // `@index(key, first)` is the group's key.
            if let Some((target, key)) = self.key_of_group(id, grouped) {
                let val = self.values.get(&key).cloned().ok_or_else(|| {
                    CodegenError::malformed(&self.kernel.name, "a key output has no value")
                })?;
                self.values.insert(target, val);
                self.lengths.insert(target, group_length.clone());
                continue;
            }
            self.statement(id)?;
        }
        Ok(())
    }

    /// `(target, key)` when statement `id` is `target = @index(key, first)` of the grouped
    /// aggregation.
    fn key_of_group(
        &self,
        id: StmtId,
        grouped: &crate::outline::kernel::GroupedAggregation,
    ) -> Option<(LocalId, LocalId)> {
        let StmtKind::Assign { targets, expr, .. } = &self.tree.stmt(id)?.kind else {
            return None;
        };
        let [Target::Local(target)] = targets.as_slice() else {
            return None;
        };
        let (
            Callee::Builtin(Builtin::Index),
            [Arg::Operand(Operand::Local(key, _)), Arg::Operand(Operand::Local(first, _))],
        ) = expr_call(expr)?
        else {
            return None;
        };
        (grouped.first == Some(*first) && grouped.key_outputs.contains(key))
            .then_some((*target, *key))
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
