//! The settle of a grouped kernel (`grouped_settle`), run by the last accumulating
//! workgroup to finish: the distinct slots the workgroups met, ranked in key order (or a
//! decline), each group's sums over the workgroups in workgroup order, and its results.

use super::*;

// One invocation of the settle per accumulating workgroup combines that workgroup's
// partials.
const _: () = assert!(MAX_GROUPED_WORKGROUPS <= KERNEL_WORKGROUP_SIZE);
// Invocations below GROUPED_GROUPS read the seen slots, the next one the decline flag.
const _: () = assert!(MAX_GROUPS < KERNEL_WORKGROUP_SIZE as usize);

/// The settle's functions (module text after `main_pass`), given the name of the parameter
/// holding the number of accumulating workgroups and the lines writing each group's values
/// at group `g`.
pub(super) fn settle(
    layout: &GroupedLayout,
    partials_param: &str,
    finish_lines: &[String],
) -> String {
    let GroupedLayout {
        int_slots,
        float_slots,
        ref partials_i,
        ref partials_f,
        ref count,
        ref results,
        counts_in_floats,
        ..
    } = *layout;
    let mut text = String::new();
    let mut tail = String::new();
    text +=
        "// The groups, by one workgroup (invocation `local`) once every accumulating one is done.
fn grouped_settle(local: u32) {
";
    let _ = write!(
        text,
        "    // The kernel's seen slots, set back to zero for the next launch (every workgroup
    // has claimed its own by now), and each accumulating workgroup's mask of the entries
    // it wrote (a dispatched workgroup writes its own; the others' are not read).
    if local < GROUPED_GROUPS {{
        grouped_known[local] = atomicLoad(&group_done[GROUPED_SEEN + local]);
        atomicStore(&group_done[GROUPED_SEEN + local], 0u);
    }}
    // The decline flag likewise, read here rather than after the barrier, where the
    // others would wait for its load.
    if local == GROUPED_GROUPS {{
        grouped_declined = atomicLoad(&group_done[GROUPED_DECLINED]);
        atomicStore(&group_done[GROUPED_DECLINED], 0u);
    }}
    if local < {partials_param} {{
        grouped_masks[local] = group_tags[local];
    }}
    workgroupBarrier();
    // A group's rank: the tags seen below its own.
    if local < GROUPED_GROUPS {{
        let tag = grouped_known[local];
        if tag != 0u {{
            var rank = 0u;
            for (var k = 0u; k < GROUPED_GROUPS; k = k + 1u) {{
                let other = grouped_known[k];
                if other != 0u && other < tag {{
                    rank = rank + 1u;
                }}
            }}
            grouped_slots[rank] = tag - 1u;
            grouped_entry_of[rank] = local;
        }}
    }}
    if local == 0u {{
        var total = 0u;
        for (var k = 0u; k < GROUPED_GROUPS; k = k + 1u) {{
            if grouped_known[k] != 0u {{
                total = total + 1u;
            }}
        }}
        let declined = grouped_declined != 0u;
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
    // `grouped_masks` then fall in distinct banks; consecutive workgroups per run read
    // one bank, though on an H100 q1's kernel took the same time either way): each adds
    // its run's partials of one accumulator in that order, then the runs' sums are
    // added by a fixed tree (GROUPED_RUNS per accumulator), for GROUPED_LANES
    // accumulators at once. Accumulators are numbered group-major
    // (`a = g * slots + s`), as the accumulating pass numbers them. (A tree over all
    // the workgroups for four accumulators at a time took 27 of the pass's 39 us for q1
    // at SF 1 on an H100.)
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
            let s = a % {slots}u;
            let e = grouped_entry_of[a / {slots}u];
            let bit = 1u << e;
"
        );
        for i in 0..GROUPED_RUN {
            let _ = writeln!(
                text,
                "            let p{i} = {i}u * GROUPED_RUNS + run;
            let v{i} = {partials}[p{i} * {entries} + s * GROUPED_GROUPS + e];"
            );
        }
        for i in 0..GROUPED_RUN {
            let _ = writeln!(
                    text,
                    "            {acc} = {acc} + select({zero}, v{i}, p{i} < {partials_param} && (grouped_masks[p{i}] & bit) != 0u);"
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
            partials_i,
            "GROUPED_INT_ENTRIES",
            int_slots,
            "live_i"
        )
    );
    // The integer sums' tree and totals: in the i64 arrays, or the counts in the float
    // arrays past the float tree and totals (see `GroupedLayout::counts_in_floats`).
    let (int_tree, int_totals, int_value) = if counts_in_floats {
        (
            "grouped_f[GROUPED_COUNTS + ",
            "grouped_f[GROUPED_COUNT_TOTALS + ",
            "f64(acc_i)",
        )
    } else {
        ("grouped_i[", "grouped_i[GROUPED_TOTALS + ", "acc_i")
    };
    let mut tree = format!(
        "                {int_tree}local] = {int_tree}local] + {int_tree}local + half];\n",
    );
    let mut store = format!(
            "            if a < live_i {{
                {int_totals}(a % {int_slots}u) * GROUPED_GROUPS + a / {int_slots}u] = {int_tree}local];
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
        tree += "                grouped_f[local] = grouped_f[local] + grouped_f[local + half];\n";
        let _ = write!(
                store,
                "            if a < live_f {{
                grouped_f[GROUPED_TOTALS + (a % {float_slots}u) * GROUPED_GROUPS + a / {float_slots}u] = grouped_f[local];
            }}
"
            );
        live_floats = format!("live * {float_slots}u");
    }
    let _ = writeln!(adds, "        {int_tree}local] = {int_value};");
    if partials_f.is_some() {
        adds += "        grouped_f[local] = acc_f;\n";
    }
    let _ = write!(
        text,
        "    let lane = local / GROUPED_RUNS;
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
    // The tables the sums read (module scope).
    let _ = write!(
        tail,
        "const GROUPED_RUN: u32 = {GROUPED_RUN}u;
const GROUPED_RUNS: u32 = {MAX_GROUPED_WORKGROUPS}u / GROUPED_RUN;
const GROUPED_LANES: u32 = WORKGROUP_SIZE / GROUPED_RUNS;
// Per accumulating workgroup, the entries of the seen slots it wrote partials of (a bit
// each), and per group (in key order) its entry.
var<workgroup> grouped_masks: array<u32, {MAX_GROUPED_WORKGROUPS}>;
var<workgroup> grouped_entry_of: array<u32, GROUPED_GROUPS>;
var<workgroup> grouped_declined: u32;
"
    );
    if counts_in_floats {
        let _ = write!(
            tail,
            "// The counts' tree and totals in the float sums' array (see the pass's sums).
const GROUPED_COUNTS: u32 = {BATCH}u * WORKGROUP_SIZE;
const GROUPED_COUNT_TOTALS: u32 = GROUPED_COUNTS + WORKGROUP_SIZE;
"
        );
    }
    // Per group: its number, key and results (the sums written by invocation 0 above).
    let _ = write!(
        text,
        "    workgroupBarrier();
    for (var g = local; g < live; g = g + WORKGROUP_SIZE) {{
        let slot = grouped_slots[g];
        let count = {};
{}    }}
}}
",
        if counts_in_floats {
            "i64(grouped_f[GROUPED_COUNT_TOTALS + g])"
        } else {
            "grouped_i[GROUPED_TOTALS + g]"
        },
        indent(finish_lines, 2)
    );
    text += "\n";
    text += &tail;
    text
}
