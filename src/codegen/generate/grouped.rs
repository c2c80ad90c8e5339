//! Assembly of a grouped kernel (see [`crate::outline::kernel::GroupedAggregation`]): the
//! kernel's statements, then a group aggregation over the rows its masks keep, without
//! writing them.
//!
//! Every key column is a bool, char, i8 or i16, so a row's key is a *slot* in the product
//! of their ranges (first column most significant: slots ascend in key order). Passes:
//! 1. `presence_pass` sets each kept row's slot in a bitmap.
//! 2. `rank_pass` (one workgroup) counts the bits: each group's rank is the number of
//!    occupied slots below it. With more groups than the kernel's registers hold
//!    (`GROUPED_GROUPS`) it declines: the decline flag is set, the group count is 0, and
//!    the later passes do nothing (the engine runs the unfused statements instead).
//! 3. `main_pass` adds each kept row into one accumulator per (value, group) in
//!    registers, reduced per workgroup into partials.
//! 4. `combine_pass` adds each accumulator's partials in workgroup order, one workgroup
//!    per accumulator, so every sum's order is fixed by the data alone.
//! 5. `finish_pass` writes per group: its number (for `@keys`), its key, its results.

use super::*;
use horsec_runtime::args::group::Reduction;

/// Most accumulators (values and the count, times groups) one invocation keeps.
const ACCUMULATORS: usize = 48;
/// Most groups a grouped kernel adds up.
const MAX_GROUPS: usize = 16;
/// Accumulators one workgroup sum adds at once: two arrays of this many per invocation
/// (i64 and f64) take 16 KiB, WebGPU's least workgroup memory.
const BATCH: usize = 4;
/// Most workgroups of the accumulating pass: few enough that every one is resident at
/// once on a large GPU, so that its sums at the end are paid once per workgroup slot.
const MAX_GROUPED_WORKGROUPS: u32 = 256;
/// Rows the accumulating pass reads before it adds them (their loads overlap).
const UNROLL: usize = 2;
/// Bitmap words kept in workgroup memory (8 KiB) by the presence pass.
const LOCAL_BITMAP_WORDS: u64 = 2048;
/// Most workgroups of the presence pass (each clears and flushes its bitmap once).
const MAX_PRESENCE_WORKGROUPS: u32 = 1024;
/// Most slots of a key domain (its bitmap is a 128 KiB buffer).
const MAX_DOMAIN: u64 = 1 << 20;
/// The bitmap scratch's binding, declared `array<atomic<u32>>`.
pub(super) const GROUP_PRESENCE: &str = "group_presence";

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
        let Some(length) = self.launch_length() else {
            return Err(CodegenError::malformed(
                &self.kernel.name,
                "not a vector kernel",
            ));
        };
        let n = self.param("n".to_string(), ParamValue::Length(length.clone()));
        self.widen_recorded(&length);

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
        let domain_words = domain.div_ceil(32);

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
            let value = wgsl::convert(&val.expr, &val.ty, &acc).ok_or_else(|| {
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
        let (_, presence) = self.scratch_binding(
            Scratch {
                element: GpuElement::U32,
                elements: Length::Constant(domain_words),
                purpose: ScratchPurpose::GroupSlots,
            },
            GROUP_PRESENCE.to_string(),
        );
        let (_, ranks) = self.scratch_binding(
            Scratch {
                element: GpuElement::U32,
                elements: Length::Constant(2 * domain_words + groups as u64),
                purpose: ScratchPurpose::GroupSlots,
            },
            "group_ranks".to_string(),
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
        let max_partials = u64::from(MAX_GROUPED_WORKGROUPS);
        let int_entries = int_slots * groups;
        let float_entries = float_slots * groups;
        let partials = |g: &mut Self, element: GpuElement, elements: u64, name: &str| {
            g.scratch_binding(
                Scratch {
                    element,
                    elements: Length::Constant(elements.max(1)),
                    purpose: ScratchPurpose::Partials,
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
        let totals_i = partials(&mut self, GpuElement::I64, int_entries as u64, "totals_i");
        let float_buffers = if float_slots > 0 {
            Some((
                partials(
                    &mut self,
                    GpuElement::F64,
                    max_partials * float_entries as u64,
                    "partials_f",
                ),
                partials(&mut self, GpuElement::F64, float_entries as u64, "totals_f"),
            ))
        } else {
            None
        };

        // Outputs: each as long as the group count, the flag one element.
        let group_length = Length::Compacted(count_id);
        let mut outputs = Vec::new();
        let mut output = |g: &mut Self, local: LocalId, ty: Type| -> Result<String, CodegenError> {
            let element = g.output_element(local, &ty)?;
            let buffer = g.output_binding(local, ValuePart::Elements, element);
            outputs.push(KernelOutput {
                slot: Self::slot(local),
                ty,
                layout: OutputLayout::Vector {
                    length: group_length.clone(),
                    capacity: Length::Constant(groups as u64),
                },
                dictionary: None,
            });
            Ok(buffer)
        };
        let mut finish_lines = Vec::new();
        if let Some(first) = grouped.first {
            let buffer = output(&mut self, first, Type::I64)?;
            finish_lines.push(format!("{buffer}[g] = i64(g);"));
        }
        for &key in &grouped.key_outputs {
            let k = grouped.keys.iter().position(|&c| c == key).ok_or_else(|| {
                CodegenError::malformed(&self.kernel.name, "a key output is no key")
            })?;
            let word = &words[k];
            let buffer = output(&mut self, key, word.ty.clone())?;
            let decoded = format!("((slot / {}u) % {}u)", strides[k], word.range);
            let value = match word.ty {
                Type::I8 => format!("i32({decoded}) - 128i"),
                Type::I16 => format!("i32({decoded}) - 32768i"),
                _ => decoded,
            };
            finish_lines.push(format!("{buffer}[g] = {value};"));
        }
        for result in &grouped.results {
            let value_ty = match &result.value {
                Some(Operand::Local(l, _)) => Some(self.grouped_value(*l)?.ty),
                _ => None,
            };
            let ty = result.reduction.result_type(value_ty.as_ref());
            let buffer = output(&mut self, result.target, ty.clone())?;
            let total = |(float, s): (bool, usize)| {
                if float {
                    format!("totals_f[{s}u * GROUPED_GROUPS + g]")
                } else {
                    format!("totals_i[{s}u * GROUPED_GROUPS + g]")
                }
            };
            let slot = match &result.value {
                Some(Operand::Local(l, _)) => slot_of_local(l),
                _ => None,
            };
            let value = match (result.reduction, slot) {
                (Reduction::Len, _) => "count".to_string(),
                (Reduction::Avg, Some(s)) => format!("f64({}) / f64(count)", total(s)),
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
            finish_lines.push(format!("{buffer}[g] = {value};"));
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
        let partials_param = self.param("partials".to_string(), ParamValue::Workgroups { pass: 2 });
        let mut text = format!(
            "const GROUPED_GROUPS: u32 = {groups}u;
const GROUPED_DOMAIN_WORDS: u32 = {domain_words}u;
const GROUPED_INT_ENTRIES: u32 = {int_entries}u;
const GROUPED_FLOAT_ENTRIES: u32 = {float_entries}u;

var<workgroup> grouped_counts: array<u32, WORKGROUP_SIZE>;
var<workgroup> grouped_total: u32;
var<workgroup> grouped_live: u32;
"
        );
        // Workgroup sums of up to BATCH accumulators at once (each its own fixed-order
        // tree): a sum per accumulator would cost a barrier per level each.
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
                "var<workgroup> {shared}: array<{ty}, {}>;

fn grouped_sum_{ty}(local: u32, k: u32) {{
    workgroupBarrier();
    for (var half = WORKGROUP_SIZE / 2u; half > 0u; half = half / 2u) {{
        if local < half {{
            for (var b = 0u; b < k; b = b + 1u) {{
                let at = b * WORKGROUP_SIZE + local;
                {shared}[at] = {shared}[at] + {shared}[at + half];
            }}
        }}
        workgroupBarrier();
    }}
}}

",
                BATCH * KERNEL_WORKGROUP_SIZE as usize
            );
        }
        // The row function: the kernel's statements at row `i`, whether the row is kept,
        // its slot and its values. Both passes over the rows call it; the accumulating
        // pass calls it for several rows before it adds any, so that their loads overlap.
        text += "struct GroupedRow {\n    keep: bool,\n    slot: u32,\n";
        for (j, column) in columns.iter().enumerate() {
            let ty = if column.float { "f64" } else { "i64" };
            let _ = writeln!(text, "    x_{j}: {ty},");
        }
        text += "}\n\nfn grouped_row(i: u32) -> GroupedRow {\n    var row: GroupedRow;\n";
        text += &indent(&self.element_lines, 1);
        let _ = writeln!(text, "    if {keep} {{");
        text += "        row.keep = true;\n";
        let _ = writeln!(text, "        row.slot = {slot};");
        for (j, column) in columns.iter().enumerate() {
            let _ = writeln!(text, "        row.x_{j} = {};", column.value);
        }
        text += "    }\n    return row;\n}\n\n";
        // 1. The slots the kept rows occupy: in workgroup memory first where the bitmap
        // fits, so that the rows' bits (a few hot words) meet in the workgroup.
        let local_bitmap = domain_words <= LOCAL_BITMAP_WORDS;
        if local_bitmap {
            let _ = writeln!(
                text,
                "var<workgroup> grouped_bits: array<atomic<u32>, {domain_words}>;\n"
            );
        }
        text += &entry_header("presence_pass");
        if local_bitmap {
            text +=
                "    for (var w = local_id.x; w < GROUPED_DOMAIN_WORDS; w = w + WORKGROUP_SIZE) {
        atomicStore(&grouped_bits[w], 0u);
    }
    workgroupBarrier();
";
        }
        let bits = if local_bitmap {
            "grouped_bits".to_string()
        } else {
            presence.clone()
        };
        let _ = write!(
            text,
            "    let stride = num_workgroups.x * WORKGROUP_SIZE;
    for (var i = global_id.x; i < {n}; i = i + stride) {{
        let row = grouped_row(i);
        if row.keep {{
            let word = row.slot >> 5u;
            let bit = 1u << (row.slot & 31u);
            if (atomicLoad(&{bits}[word]) & bit) == 0u {{
                atomicOr(&{bits}[word], bit);
            }}
        }}
    }}
"
        );
        if local_bitmap {
            let _ = write!(
                text,
                "    workgroupBarrier();
    for (var w = local_id.x; w < GROUPED_DOMAIN_WORDS; w = w + WORKGROUP_SIZE) {{
        let marked = atomicLoad(&grouped_bits[w]);
        if marked != 0u {{
            atomicOr(&{presence}[w], marked);
        }}
    }}
"
            );
        }
        text += "}\n\n";
        // 2. Ranks: per bitmap word, the groups below it; each group's slot.
        text += &entry_header("rank_pass");
        let _ = write!(
            text,
            "    let local = local_id.x;
    let per = (GROUPED_DOMAIN_WORDS + WORKGROUP_SIZE - 1u) / WORKGROUP_SIZE;
    let begin = min(local * per, GROUPED_DOMAIN_WORDS);
    let end = min(begin + per, GROUPED_DOMAIN_WORDS);
    var occupied = 0u;
    for (var w = begin; w < end; w = w + 1u) {{
        occupied = occupied + countOneBits(atomicLoad(&{presence}[w]));
    }}
    grouped_counts[local] = occupied;
    workgroupBarrier();
    if local == 0u {{
        var running = 0u;
        for (var t = 0u; t < WORKGROUP_SIZE; t = t + 1u) {{
            let c = grouped_counts[t];
            grouped_counts[t] = running;
            running = running + c;
        }}
        grouped_total = running;
    }}
    workgroupBarrier();
    var rank = grouped_counts[local];
    for (var w = begin; w < end; w = w + 1u) {{
        let bits = atomicLoad(&{presence}[w]);
        {ranks}[w] = rank;
        {ranks}[GROUPED_DOMAIN_WORDS + w] = bits;
        var rest = bits;
        loop {{
            if rest == 0u {{
                break;
            }}
            if rank < GROUPED_GROUPS {{
                {ranks}[2u * GROUPED_DOMAIN_WORDS + rank] = w * 32u + firstTrailingBit(rest);
            }}
            rank = rank + 1u;
            rest = rest & (rest - 1u);
        }}
    }}
    if local == 0u {{
        let declined = grouped_total > GROUPED_GROUPS;
        {count}[0] = select(0u, 1u, declined);
        {count}[1] = select(grouped_total, 0u, declined);
    }}
}}

"
        );
        // 3. Accumulators in registers, partials per workgroup.
        text += &entry_header("main_pass");
        let _ = write!(
            text,
            "    let stride = num_workgroups.x * WORKGROUP_SIZE;
    let rows = select({n}, 0u, {count}[1] == 0u);
"
        );
        // One row's additions (`r` a GroupedRow), by a switch on its group: only the
        // group's accumulators change (on the H100 as fast as adding into every group's
        // with a select, and fewer instructions where there are more groups).
        let add = |r: &str| -> String {
            let mut lines = vec![
                format!("if {r}.keep {{"),
                format!("    let word = {r}.slot >> 5u;"),
                format!("    let below = {ranks}[GROUPED_DOMAIN_WORDS + word] & ((1u << ({r}.slot & 31u)) - 1u);"),
                format!("    let rank = {ranks}[word] + countOneBits(below);"),
                "    switch rank {".to_string(),
            ];
            for g in 0..groups {
                lines.push(format!("        case {g}u: {{"));
                lines.push(format!("            count_{g} = count_{g} + 1u;"));
                for (j, &(float, s)) in slot_of.iter().enumerate() {
                    let name = if float { "f" } else { "j" };
                    lines.push(format!(
                        "            {name}_{s}_{g} = {name}_{s}_{g} + {r}.x_{j};"
                    ));
                }
                lines.push("        }".to_string());
            }
            lines.push("        default: {}".to_string());
            lines.push("    }".to_string());
            lines.push("}".to_string());
            indent(&lines, 2)
        };
        // Per kind (integers, floats): (group, variable, entry), group-major.
        let mut ints: Vec<(usize, String, usize)> = Vec::new();
        let mut floats: Vec<(usize, String, usize)> = Vec::new();
        for g in 0..groups {
            let _ = writeln!(text, "    var count_{g}: u32 = 0u;");
            ints.push((g, format!("i64(count_{g})"), g));
            for &(float, s) in &slot_of {
                let (name, ty, zero) = if float {
                    ("f", "f64", "0.0lf")
                } else {
                    ("j", "i64", "0li")
                };
                let var = format!("{name}_{s}_{g}");
                let _ = writeln!(text, "    var {var}: {ty} = {zero};");
                let entry = s * groups + g;
                if float {
                    floats.push((g, var, entry));
                } else {
                    ints.push((g, var, entry));
                }
            }
        }
        // UNROLL rows per step while UNROLL of them remain, then one at a time; every
        // invocation adds its rows in ascending order either way.
        let _ = writeln!(
            text,
            "    var i = global_id.x;
    loop {{
        if i >= rows || rows - i <= {}u * stride {{
            break;
        }}",
            UNROLL - 1
        );
        for u in 0..UNROLL {
            let _ = writeln!(text, "        let r{u} = grouped_row(i + {u}u * stride);");
        }
        for u in 0..UNROLL {
            text += &add(&format!("r{u}"));
        }
        let _ = writeln!(text, "        i = i + {UNROLL}u * stride;\n    }}");
        text += "    for (; i < rows; i = i + stride) {\n        let r = grouped_row(i);\n";
        text += &add("r");
        text += "    }\n";
        let _ = write!(
            text,
            "    // The accumulators of groups that exist, a batch at a time.
    if local_id.x == 0u {{
        grouped_live = {count}[1];
    }}
    let live = workgroupUniformLoad(&grouped_live);
"
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
                    let _ = writeln!(
                        text,
                        "        {shared}[{b}u * WORKGROUP_SIZE + local_id.x] = {var};"
                    );
                }
                let _ = writeln!(
                    text,
                    "        grouped_sum_{ty}(local_id.x, {}u);",
                    batch.len()
                );
                text += "        if local_id.x == 0u {\n";
                for (b, (_, _, entry)) in batch.iter().enumerate() {
                    let _ = writeln!(
                        text,
                        "            {buffer}[workgroup_id.x * {entries} + {entry}u] = {shared}[{b}u * WORKGROUP_SIZE];"
                    );
                }
                text += "        }\n    }\n";
            }
        }
        text += "}\n\n";
        // 4. Each accumulator's partials, in workgroup order.
        text += &entry_header("combine_pass");
        let float_combine = match &float_buffers {
            Some((partials_f, totals_f)) => format!(
                "        let f = e - GROUPED_INT_ENTRIES;
        if f % GROUPED_GROUPS < live {{
            var acc = 0.0lf;
            for (var p = local_id.x; p < {partials_param}; p = p + WORKGROUP_SIZE) {{
                acc = acc + {partials_f}[p * GROUPED_FLOAT_ENTRIES + f];
            }}
            grouped_f[local_id.x] = acc;
            grouped_sum_f64(local_id.x, 1u);
            if local_id.x == 0u {{
                {totals_f}[f] = grouped_f[0];
            }}
        }}
"
            ),
            None => String::new(),
        };
        let _ = write!(
            text,
            "    let e = workgroup_id.x;
    if local_id.x == 0u {{
        grouped_live = {count}[1];
    }}
    let live = workgroupUniformLoad(&grouped_live);
    if e < GROUPED_INT_ENTRIES {{
        if e % GROUPED_GROUPS < live {{
            var acc = 0li;
            for (var p = local_id.x; p < {partials_param}; p = p + WORKGROUP_SIZE) {{
                acc = acc + {partials_i}[p * GROUPED_INT_ENTRIES + e];
            }}
            grouped_i[local_id.x] = acc;
            grouped_sum_i64(local_id.x, 1u);
            if local_id.x == 0u {{
                {totals_i}[e] = grouped_i[0];
            }}
        }}
    }} else {{
{float_combine}    }}
}}

"
        );
        // 5. Per group: its number, key and results.
        text += &entry_header("finish_pass");
        let _ = write!(
            text,
            "    for (var g = local_id.x; g < {count}[1]; g = g + WORKGROUP_SIZE) {{
        let slot = {ranks}[2u * GROUPED_DOMAIN_WORDS + g];
        let count = totals_i[g];
{}    }}
}}
",
            indent(&finish_lines, 2)
        );
        let entries = (int_entries + float_entries) as u64;
        let passes = vec![
            Pass::Entry {
                entry_point: "presence_pass".to_string(),
                dispatch: Dispatch::Elements {
                    length: length.clone(),
                    max_workgroups: MAX_PRESENCE_WORKGROUPS,
                },
            },
            Pass::Entry {
                entry_point: "rank_pass".to_string(),
                dispatch: Dispatch::Single,
            },
            Pass::Entry {
                entry_point: "main_pass".to_string(),
                dispatch: Dispatch::Elements {
                    length,
                    max_workgroups: MAX_GROUPED_WORKGROUPS,
                },
            },
            Pass::Entry {
                entry_point: "combine_pass".to_string(),
                dispatch: Dispatch::Elements {
                    length: Length::Constant(entries * u64::from(KERNEL_WORKGROUP_SIZE)),
                    max_workgroups: MAX_DISPATCH_WORKGROUPS,
                },
            },
            Pass::Entry {
                entry_point: "finish_pass".to_string(),
                dispatch: Dispatch::Single,
            },
        ];
        self.finish(text, passes, outputs)
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
