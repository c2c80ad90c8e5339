// Fused group aggregation (`@group_aggregate`): per-group sums and counts of value columns
// without building the groups' row lists. Driven by `runtime/src/gpu/group_aggregate.rs`.
//
// Every row already has its group's rank (key order): straight from `ranks` (hashing,
// `gpu/hash.rs::group_ranks`) or through a lookup, `offsets[ranks[row]]` (a row's slot in a
// small key domain and the slot's rank, `gpu/dense_group.rs`); `RANK` says which. Results
// are deterministic: no float atomics; every sum adds its terms in an order fixed by the
// data alone (each thread its rows in order, then a tree over the workgroup, then the
// workgroups' partials in workgroup order; a small group's rows in ascending row order).
//
// Accumulator slots: `FLOAT_SLOTS` f64 sums and `INT_SLOTS` i64 sums per group; i64 slot 0
// is the group's row count. Slot `s` of group `g` is entry `s * groups + g`.
//
// Entry points:
// - `partials` (few groups, `GROUPS` fixed in the text): workgroup `w` reduces rows
//   `w * chunk ..` into per-thread accumulators for every (slot, group), unrolled, then one
//   tree per accumulator; writes `partial_*[w * slots * groups + slot * groups + g]`.
// - `combine`: workgroup `s` adds entry `s` of every workgroup's partials, in workgroup
//   order, into `totals_*[s]`.
// - `segment_rows` (many groups): one invocation per group of at most `SMALL_GROUP` rows
//   adds the group's rows `rows[offsets[g] .. offsets[g + 1]]` one after another, in
//   ascending row order (`SORT` orders a bucket's rows first where the bucketing did not),
//   straight into `totals_*`.
// - `segments` (many groups): workgroup `g` reduces each group of more than `SMALL_GROUP`
//   rows (rows ascending) straight into `totals_*`.
// - `finish`: one invocation per (result, group) turns totals into the results.
//
// Placeholders (each NAME in double braces): WORKGROUP_SIZE, GROUPS, FLOAT_SLOTS, INT_SLOTS,
// SMALL_GROUP, RANK, SORT, ROW_AT, VALUE_BINDINGS, OUTPUT_BINDINGS, DECLARE, ACCUMULATE, REDUCE,
// SEGMENT_DECLARE, SEGMENT_ACCUMULATE, SEGMENT_REDUCE, ROW_STORE, FINISH.

const WORKGROUP_SIZE: u32 = {{WORKGROUP_SIZE}}u;
const GROUPS: u32 = {{GROUPS}}u;
const FLOAT_SLOTS: u32 = {{FLOAT_SLOTS}}u;
const INT_SLOTS: u32 = {{INT_SLOTS}}u;
const SMALL_GROUP: u32 = {{SMALL_GROUP}}u;

struct Params {
    rows: u32,
    groups: u32,
    // Rows per workgroup of `partials`.
    chunk: u32,
    // Workgroups of `partials`.
    workgroups: u32,
    results: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
// `partials`: each row's group rank (or slot, see `RANK`); `segment_rows`/`segments`: the
// rows of the groups, group after group.
@group(0) @binding(1) var<storage, read> ranks: array<u32>;
// `partials`: each slot's rank when `RANK` looks it up; `segment_rows`/`segments`:
// `groups + 1` offsets into `ranks`.
@group(0) @binding(2) var<storage, read> offsets: array<u32>;
@group(0) @binding(3) var<storage, read_write> partial_f: array<f64>;
@group(0) @binding(4) var<storage, read_write> partial_i: array<i64>;
@group(0) @binding(5) var<storage, read_write> totals_f: array<f64>;
@group(0) @binding(6) var<storage, read_write> totals_i: array<i64>;
{{VALUE_BINDINGS}}
{{OUTPUT_BINDINGS}}

var<workgroup> shared_f: array<f64, WORKGROUP_SIZE>;
var<workgroup> shared_i: array<i64, WORKGROUP_SIZE>;
var<workgroup> shared_rows: u32;

fn tree_f64(local: u32, value: f64) -> f64 {
    shared_f[local] = value;
    workgroupBarrier();
    for (var half = WORKGROUP_SIZE / 2u; half > 0u; half = half / 2u) {
        if local < half {
            shared_f[local] = shared_f[local] + shared_f[local + half];
        }
        workgroupBarrier();
    }
    let total = shared_f[0];
    workgroupBarrier();
    return total;
}

fn tree_i64(local: u32, value: i64) -> i64 {
    shared_i[local] = value;
    workgroupBarrier();
    for (var half = WORKGROUP_SIZE / 2u; half > 0u; half = half / 2u) {
        if local < half {
            shared_i[local] = shared_i[local] + shared_i[local + half];
        }
        workgroupBarrier();
    }
    let total = shared_i[0];
    workgroupBarrier();
    return total;
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn partials(
    @builtin(local_invocation_id) local_id: vec3<u32>,
    @builtin(workgroup_id) workgroup_id: vec3<u32>,
) {
    let local = local_id.x;
    let w = workgroup_id.x;
    let start = w * params.chunk;
    let end = min(start + params.chunk, params.rows);
{{DECLARE}}
    for (var row = start + local; row < end; row = row + WORKGROUP_SIZE) {
        let g = {{RANK}};
{{ACCUMULATE}}
    }
    let float_base = w * FLOAT_SLOTS * GROUPS;
    let int_base = w * INT_SLOTS * GROUPS;
{{REDUCE}}
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn combine(
    @builtin(local_invocation_id) local_id: vec3<u32>,
    @builtin(workgroup_id) workgroup_id: vec3<u32>,
) {
    let local = local_id.x;
    let s = workgroup_id.x;
    let float_entries = FLOAT_SLOTS * params.groups;
    let int_entries = INT_SLOTS * params.groups;
    if s < float_entries {
        var acc = f64(0.0);
        for (var w = local; w < params.workgroups; w = w + WORKGROUP_SIZE) {
            acc = acc + partial_f[w * float_entries + s];
        }
        let total = tree_f64(local, acc);
        if local == 0u {
            totals_f[s] = total;
        }
    } else if s < float_entries + int_entries {
        let t = s - float_entries;
        var acc = i64(0);
        for (var w = local; w < params.workgroups; w = w + WORKGROUP_SIZE) {
            acc = acc + partial_i[w * int_entries + t];
        }
        let total = tree_i64(local, acc);
        if local == 0u {
            totals_i[t] = total;
        }
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn segment_rows(
    @builtin(global_invocation_id) global_id: vec3<u32>,
    @builtin(num_workgroups) num_workgroups: vec3<u32>,
) {
    let stride = num_workgroups.x * WORKGROUP_SIZE;
    for (var g = global_id.x; g < params.groups; g = g + stride) {
        let cell_start = offsets[g];
        let n = offsets[g + 1u] - cell_start;
        if n > SMALL_GROUP {
            continue;
        }
{{SORT}}
{{SEGMENT_DECLARE}}
        for (var k = 0u; k < n; k = k + 1u) {
            let row = {{ROW_AT}};
{{SEGMENT_ACCUMULATE}}
        }
{{ROW_STORE}}
        totals_i[g] = i64(u64(n));
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn segments(
    @builtin(local_invocation_id) local_id: vec3<u32>,
    @builtin(workgroup_id) workgroup_id: vec3<u32>,
    @builtin(num_workgroups) num_workgroups: vec3<u32>,
) {
    let local = local_id.x;
    for (var g = workgroup_id.x; g < params.groups; g = g + num_workgroups.x) {
        if local == 0u {
            shared_rows = offsets[g + 1u] - offsets[g];
        }
        // Small groups are `segment_rows`'s; the test is uniform over the workgroup. The
        // barrier after it keeps the next group's write of `shared_rows` from overtaking a
        // slower invocation's read.
        let rows = workgroupUniformLoad(&shared_rows);
        workgroupBarrier();
        if rows <= SMALL_GROUP {
            continue;
        }
        let cell_start = offsets[g];
        let cell_end = offsets[g + 1u];
{{SEGMENT_DECLARE}}
        for (var e = cell_start + local; e < cell_end; e = e + WORKGROUP_SIZE) {
            let row = ranks[e];
{{SEGMENT_ACCUMULATE}}
        }
{{SEGMENT_REDUCE}}
        if local == 0u {
            totals_i[g] = i64(u64(cell_end - cell_start));
        }
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn finish(@builtin(global_invocation_id) global_id: vec3<u32>) {
    let i = global_id.x;
    if i >= params.results * params.groups {
        return;
    }
    let result = i / params.groups;
    let g = i % params.groups;
    let count = totals_i[g];
{{FINISH}}
}
