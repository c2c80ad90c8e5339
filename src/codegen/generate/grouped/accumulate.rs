//! The accumulating pass of a grouped kernel (`main_pass`): each workgroup adds the rows it
//! reads into accumulators in registers per slot it meets, writes its sums of them and the
//! slots they belong to, and counts itself done; the last to finish runs the settle.

use super::*;

impl Generator<'_> {
    /// The module text up to and including `main_pass`: the grouped kernel's constants and
    /// workgroup memory, the workgroup sums, the row function, the slot ranks and the pass
    /// itself over `n` rows.
    pub(super) fn accumulating_pass(&mut self, layout: &GroupedLayout, n: &str) -> String {
        let GroupedLayout {
            groups,
            ref columns,
            ref slot_of,
            int_slots,
            float_slots,
            ref keep,
            ref slot,
            ref partials_i,
            hint_ranks,
            counts_in_floats,
            ..
        } = *layout;
        let int_entries = int_slots * groups;
        let float_entries = float_slots * groups;
        let mut text = format!(
            "const GROUPED_GROUPS: u32 = {groups}u;
const GROUPED_SUM_RUN: u32 = {SUM_RUN}u;
const GROUPED_SUM_RUNS: u32 = WORKGROUP_SIZE / GROUPED_SUM_RUN;
const GROUPED_INT_ENTRIES: u32 = {int_entries}u;
const GROUPED_FLOAT_ENTRIES: u32 = {float_entries}u;
// The settle keeps each group's totals in the workgroup's sum arrays past the first
// WORKGROUP_SIZE values (its trees use those), rather than in device memory: no binding, no
// storage barrier and no round trip to memory before the groups' results.
const GROUPED_TOTALS: u32 = WORKGROUP_SIZE;

var<workgroup> grouped_live: u32;
var<workgroup> grouped_slots: array<u32, GROUPED_GROUPS>;
var<workgroup> grouped_local: array<atomic<u32>, GROUPED_GROUPS>;
var<workgroup> grouped_overflow: atomic<u32>;
var<workgroup> grouped_ticket: u32;
// The kernel's seen slots as a workgroup found them, and its own entries' places among them.
var<workgroup> grouped_known: array<u32, GROUPED_GROUPS>;
var<workgroup> grouped_global: array<u32, GROUPED_GROUPS>;
// Words of `group_done` after its count: whether the kernel declines (a workgroup met more
// slots than it holds, or the workgroups more than the kernel does), then the seen slots'
// tags (slot + 1, 0 free), in the order they were claimed.
const GROUPED_DECLINED: u32 = 1u;
const GROUPED_SEEN: u32 = 2u;

"
        );
        text += "// The entry of the kernel's seen slots that holds `tag`, claimed in the first free one
// (which entry does not matter: the settle ranks the groups by their tags); with none free
// the kernel declines.
fn grouped_claim(tag: u32) -> u32 {
";
        text += &claim_loop(
            "group_done[GROUPED_SEEN + k]",
            "atomicStore(&group_done[GROUPED_DECLINED], 1u)",
        );
        // Workgroup sums of up to BATCH accumulators at once (FLOAT_BATCH where the counts
        // go with the floats and no i64 arrays are declared), each in a fixed order: run r
        // holds invocations r, r + SUM_RUNS, ... (so that a warp's reads fall in distinct
        // banks), added in that order, then the runs in order. Two barriers a batch; a tree
        // halving the invocations took one per level, nine a batch. On an H100, TPC-H q1's
        // kernel at SF 1 took 133.5 us with the trees (120 us with no workgroup sums at
        // all), the same with runs of consecutive invocations (16-way bank conflicts), and
        // 129-131 us with these. Sums by subgroup shuffles instead (a butterfly of
        // `subgroupShuffleXor` over every accumulator of a batch of 16 at once, then each
        // subgroup's sum added in subgroup order), which would need a path for devices
        // without subgroups, took 97 us against 99 on an H200: not worth the second path.
        // Measured again once each workgroup claimed its slots as it ended (16 accumulators
        // a batch, the subgroups' sums added in `subgroup_id` order): 96-97 us against 95,
        // slower.
        let mut kinds_used = Vec::new();
        if !counts_in_floats {
            kinds_used.push("i64");
        }
        if float_slots > 0 {
            kinds_used.push("f64");
        }
        // Accumulators a workgroup sum adds at once, in either kind's arrays.
        let batch = if counts_in_floats { FLOAT_BATCH } else { BATCH };
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
                values = batch * KERNEL_WORKGROUP_SIZE as usize,
                runs = batch * (KERNEL_WORKGROUP_SIZE / SUM_RUN) as usize,
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
";
        text += &claim_loop("grouped_local[k]", "atomicStore(&grouped_overflow, 1u)");
        // The rank through a hint first: one load of a small table indexed by a hash of
        // the tag, holding (tag << HINT_RANK_BITS) | rank of the last slot found there,
        // instead of a walk of the entries whose length differs across a warp's rows. A
        // hint of another tag (two tags with one hash, or none stored yet: 0) takes the
        // walk, which stores the rank it finds. Workgroup memory starts zeroed, and tags
        // start at 1. The rank is the walk's either way (a slot's entry never changes once
        // claimed), so the sums are the same to the bit. For TPC-H q1 at SF 1 on an H200 the kernel's GPU time
        // went from 119 us to 99 (with it, 2 rows in flight and 256 workgroups stay best:
        // 1 or 3 rows took 114 and 136 us, 132 or 200 workgroups 134 and 109). The hints
        // are atomics because other invocations store them while this one loads; plain
        // loads and stores of them took the same 99-100 us (H200), so nothing is lost.
        let rank_fn = if hint_ranks {
            let _ = write!(
                text,
                "const GROUPED_HINTS: u32 = {hints}u;
var<workgroup> grouped_hints: array<atomic<u32>, GROUPED_HINTS>;

fn grouped_rank(slot: u32) -> u32 {{
    let tag = slot + 1u;
    let at = (tag * 2654435761u) >> {shift}u;
    let hint = atomicLoad(&grouped_hints[at]);
    if hint >> {rank_bits}u == tag {{
        return hint & {rank_mask}u;
    }}
    let k = grouped_local_rank(slot);
    if k < GROUPED_GROUPS {{
        atomicStore(&grouped_hints[at], (tag << {rank_bits}u) | k);
    }}
    return k;
}}

",
                hints = 1u32 << HINT_INDEX_BITS,
                shift = 32 - HINT_INDEX_BITS,
                rank_bits = HINT_RANK_BITS,
                rank_mask = (1u32 << HINT_RANK_BITS) - 1,
            );
            "grouped_rank"
        } else {
            "grouped_local_rank"
        };
        // The pass: accumulators in registers per workgroup slot, partials per workgroup with
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
        // tag not met yet, to 154; finding the ranks of the step's rows before either
        // switch, so that their look-ups overlap, 99 to 103, 187 in one process.)
        // (Built by concatenation: groups times columns lines, twice per kernel.)
        let add = |r: &str| -> String {
            let mut lines = vec![
                cat!("if ", r, ".keep {"),
                cat!("    switch ", rank_fn, "(", r, ".slot) {"),
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
        // Per kind (integers, floats): (workgroup entry, variable, accumulator slot), in
        // entry order. A partial's place is its slot's row of its global entry's column.
        let mut ints: Vec<(usize, String, usize)> = Vec::new();
        let mut floats: Vec<(usize, String, usize)> = Vec::new();
        for g in 0..groups {
            let mut count = String::from("count_");
            push_decimal(&mut count, g as u64);
            push!(&mut text, "    var ", count, ": u32 = 0u;\n");
            let wide = if counts_in_floats {
                cat!("f64(", count, ")")
            } else {
                wgsl::u32_to_i64(&count)
            };
            ints.push((g, wide, 0));
            for &(float, s) in slot_of {
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
                if float {
                    floats.push((g, var, s));
                } else {
                    ints.push((g, var, s));
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
        // The workgroup's slots take entries of the kernel's seen slots (`group_done`, from
        // word GROUPED_SEEN; see `grouped_claim`): each slot's global entry is where its
        // partials go, and the mask of the global entries it wrote is where the settle finds
        // them. The settle then reads the seen slots (a few words) instead of every
        // workgroup's slots, and finds each workgroup's partials of a group by the group's
        // entry alone. A slot is claimed as its workgroup ends, while the others still read
        // their rows; in the common case it is there already, found in one load.
        let _ = write!(
            text,
            "    // The workgroup's slots (and whether it met too many), their entries among the
    // kernel's seen slots, then the sums of the accumulators of the slots it met, a batch
    // at a time.
    workgroupBarrier();
    if local_id.x < GROUPED_GROUPS {{
        grouped_known[local_id.x] = atomicLoad(&group_done[GROUPED_SEEN + local_id.x]);
    }}
    workgroupBarrier();
    if local_id.x < GROUPED_GROUPS {{
        let tag = atomicLoad(&grouped_local[local_id.x]);
        var entry = GROUPED_GROUPS;
        if tag != 0u {{
            for (var k = 0u; k < GROUPED_GROUPS; k = k + 1u) {{
                if grouped_known[k] == tag {{
                    entry = k;
                }}
            }}
            if entry == GROUPED_GROUPS {{
                entry = grouped_claim(tag);
            }}
        }}
        grouped_global[local_id.x] = entry;
    }}
    workgroupBarrier();
    if local_id.x == 0u {{
        var live = 0u;
        var mask = 0u;
        for (var k = 0u; k < GROUPED_GROUPS; k = k + 1u) {{
            if atomicLoad(&grouped_local[k]) != 0u {{
                live = k + 1u;
                // A slot that found no seen entry free declined the kernel: no bit.
                if grouped_global[k] < GROUPED_GROUPS {{
                    mask = mask | (1u << grouped_global[k]);
                }}
            }}
        }}
        group_tags[workgroup_id.x] = mask;
        if atomicLoad(&grouped_overflow) != 0u {{
            atomicStore(&group_done[GROUPED_DECLINED], 1u);
        }}
        grouped_live = live;
    }}
    let live = workgroupUniformLoad(&grouped_live);
"
        );
        // The sums, a batch of accumulators at a time: integers and floats apart, or the
        // counts with the floats (group-major: a group's count, then its floats).
        let int_sum = |&(entry, ref value, slot): &(usize, String, usize)| EndSum {
            entry,
            value: value.clone(),
            partials: partials_i.clone(),
            entries: "GROUPED_INT_ENTRIES",
            slot,
            stored: "sum",
        };
        let float_sum = |&(entry, ref value, slot): &(usize, String, usize)| EndSum {
            entry,
            value: value.clone(),
            partials: "partials_f".to_string(),
            entries: "GROUPED_FLOAT_ENTRIES",
            slot,
            stored: "sum",
        };
        let kinds: Vec<(&str, &str, Vec<EndSum>)> = if counts_in_floats {
            let mut sums = Vec::with_capacity(ints.len() + floats.len());
            for count in &ints {
                // Summed as f64, and stored back as the exact integer it is.
                sums.push(EndSum {
                    stored: "i64(sum)",
                    ..int_sum(count)
                });
                sums.extend(floats.iter().filter(|f| f.0 == count.0).map(float_sum));
            }
            vec![("f64", "grouped_f", sums)]
        } else {
            vec![
                ("i64", "grouped_i", ints.iter().map(int_sum).collect()),
                ("f64", "grouped_f", floats.iter().map(float_sum).collect()),
            ]
        };
        for (ty, shared, sums) in kinds {
            for chunk in sums.chunks(batch) {
                let lowest = chunk.iter().map(|sum| sum.entry).min().unwrap_or(0);
                let _ = writeln!(text, "    if {lowest}u < live {{");
                for (b, sum) in chunk.iter().enumerate() {
                    push!(&mut text, "        ", shared, "[");
                    push_decimal(&mut text, b as u64);
                    push!(
                        &mut text,
                        "u * WORKGROUP_SIZE + local_id.x] = ",
                        sum.value,
                        ";\n"
                    );
                }
                let _ = writeln!(
                    text,
                    "        let sum = grouped_sum_{ty}(local_id.x, {}u);",
                    chunk.len()
                );
                // Invocation b holds accumulator b's sum.
                text += "        switch local_id.x {\n";
                for (b, sum) in chunk.iter().enumerate() {
                    text += "            case ";
                    push_decimal(&mut text, b as u64);
                    push!(
                        &mut text,
                        "u: { ",
                        sum.partials,
                        "[workgroup_id.x * ",
                        sum.entries,
                        " + "
                    );
                    push_decimal(&mut text, sum.slot as u64);
                    text += "u * GROUPED_GROUPS + min(grouped_global[";
                    push_decimal(&mut text, sum.entry as u64);
                    push!(
                        &mut text,
                        "u], GROUPED_GROUPS - 1u)] = ",
                        sum.stored,
                        "; }\n"
                    );
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
        text
    }
}

/// The rest of a function that finds `tag` among entries of atomic words (`entry`, at entry
/// `k`; 0 free) or claims the first free one, returning its index: with none free it runs
/// `full` and returns GROUPED_GROUPS. A workgroup's entries and the kernel's seen slots are
/// both claimed so, in workgroup and storage memory: WGSL passes no pointer to storage, so
/// each has its own function.
fn claim_loop(entry: &str, full: &str) -> String {
    format!(
        "    var k = 0u;
    loop {{
        if k == GROUPED_GROUPS {{
            {full};
            return GROUPED_GROUPS;
        }}
        let held = atomicLoad(&{entry});
        if held == tag {{
            return k;
        }}
        if held == 0u {{
            let claim = atomicCompareExchangeWeak(&{entry}, 0u, tag);
            if claim.exchanged || claim.old_value == tag {{
                return k;
            }}
            if claim.old_value == 0u {{
                // A spurious failure: the entry is still free.
                continue;
            }}
        }}
        k = k + 1u;
    }}
    // Never reached (the loop only returns); naga asks for a return at the end.
    return GROUPED_GROUPS;
}}

"
    )
}

/// One accumulator of the sums at a workgroup's end: the workgroup entry of its group, the
/// value each invocation adds, and where the workgroup's sum goes (its partials, their
/// entries per workgroup, its accumulator slot, and the sum as they store it).
struct EndSum {
    entry: usize,
    value: String,
    partials: String,
    entries: &'static str,
    slot: usize,
    stored: &'static str,
}
