// Trie indexes of `@multiway_join` (runtime/src/gpu/multiway.rs), built from a relation
// whose rows are sorted and distinct (as given when they are, else `@tuple_unique`'s
// kernels sort them first): one column buffer per level, i64 values as two u32 words
// (little-endian: low word first).
//
// Level d of the trie holds one node per distinct prefix of columns 0..d; node j of level d
// starts at row starts_d[j] (rows whose first difference from the row before is at a column
// <= d), and its children in level d + 1 are the nodes starting in [starts_d[j],
// starts_d[j + 1]).
//
// Entry points (bindings: params, col, aux, out):
//   first_difference   out[r] = params.column if out[r] is still params.arity (no difference
//                      seen in an earlier column) and row r of column `col` is above row
//                      r - 1 (params.arity + 1 if below: the rows are out of order); row 0
//                      differs at column 0. Run once per column, in order.
//   not_sorted         out[0] = 1 if some row r >= 1 has aux[r] >= params.arity (aux = the
//                      first differences: a repeated row or rows out of order)
//   level_flags        out[r] = 1 if aux[r] <= params.column (row r starts a node of level
//                      params.column), aux = the first differences
//   level_offsets      out[base + j] = the first k with aux[k] >= col[j] (col = starts of
//                      level d as u32, params.n of them; aux = starts of level d + 1,
//                      params.m of them), out[base + params.n] = params.m
//   gather_values      out[base + 2j], out[base + 2j + 1] = col[2 aux[j]], col[2 aux[j] + 1]
//
// The last two write into the packed trie (every level of one trie in one buffer, which the
// join binds) from word params.base.
//
// Template parameters: {{WORKGROUP_SIZE}}; SEARCHES, in double braces: the binary search,
// rendered from partition_point.wgsl by multiway.rs.

struct Params {
    n: u32,
    m: u32,
    column: u32,
    arity: u32,
    base: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

const WORKGROUP_SIZE: u32 = {{WORKGROUP_SIZE}}u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> col: array<u32>;
@group(0) @binding(2) var<storage, read> aux: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;

{{SEARCHES}}

@compute @workgroup_size(WORKGROUP_SIZE)
fn first_difference(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var r = global.x; r < params.n; r = r + stride) {
        if out[r] != params.arity {
            continue;
        }
        if r == 0u {
            out[r] = 0u;
        } else if col[2u * r] != col[2u * r - 2u] || col[2u * r + 1u] != col[2u * r - 1u] {
            // Signed order of (low, high) words.
            let high = bitcast<i32>(col[2u * r + 1u]);
            let high_before = bitcast<i32>(col[2u * r - 1u]);
            let below = high < high_before
                || (high == high_before && col[2u * r] < col[2u * r - 2u]);
            out[r] = select(params.column, params.arity + 1u, below);
        }
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn not_sorted(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var r = global.x + 1u; r < params.n; r = r + stride) {
        if aux[r] >= params.arity {
            // Every writer stores the same word.
            out[0] = 1u;
        }
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn level_flags(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var r = global.x; r < params.n; r = r + stride) {
        out[r] = select(0u, 1u, aux[r] <= params.column);
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn level_offsets(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var j = global.x; j <= params.n; j = j + stride) {
        if j == params.n {
            out[params.base + j] = params.m;
            continue;
        }
        out[params.base + j] = first_start_from(0u, params.m, col[j]);
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn gather_values(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var j = global.x; j < params.n; j = j + stride) {
        let source = 2u * aux[j];
        out[params.base + 2u * j] = col[source];
        out[params.base + 2u * j + 1u] = col[source + 1u];
    }
}
