// Relation kernels of Datalog's semi-naive evaluation (runtime/src/gpu/relation.rs).
//
// `a` and `b` are key matrices (see keys.wgsl: `words` order-preserving u32 words per row,
// word-major, word w of row r at w * rows + r), so rows compare lexicographically by
// comparing words. Relations are sorted; lookups are binary searches over the sorted rows
// (lower bound: first row >= key; upper bound: first row > key), except the join's, which
// looks its key up in a hash table from key to first row (HISA, as in GDlog).
//
// Entry points (bindings: params, a, b, idx, out, flag):
//   adjacent_distinct  out[k] = 1 if row idx[k] of a differs from row idx[k-1] (k = 0: 1);
//                      params.mode = 1: out[k] kept where already 1 (a relation's keys cut
//                      into column groups, one dispatch per group)
//   check_sorted       flag[slot] = min k with row k-1 of a >= row k (params.mode = 1:
//                      strictly increasing required) or > row k (mode = 0: non-decreasing)
//   check_monotonic    flag[slot] = min k with idx[k+1] < idx[k] (a scan that wrapped), k < n
//   store_total        flag[slot] = idx[n] (the total of a scan, read with the checks)
//   not_in_b           out[i] = 1 if row i of a is not a row of b
//   merge_path         the merge of disjoint sorted a and b (params.n = rows_a + rows_b
//                      output rows): each invocation takes MERGE_ITEMS consecutive output
//                      rows, finds how many of them come after how many rows of a by a
//                      binary search along its diagonal (merge path), then merges them
//                      sequentially, writing each row's key words to out (params.n rows)
//                      and its source to flag: i for row i of a, rows_a + j for row j of b
//   gather_merged      out[2k], out[2k+1] = the 64-bit element idx[k] of a ++ b (a: the
//                      first params.rows_a elements; idx = merge_path's sources)
//   hisa_insert        HISA build, 1: every row k of b that starts a run of equal rows
//                      claims an empty slot of the hash table flag[0 .. slots] (linear
//                      probing from the hash of its key) and stores k there
//   hisa_end           HISA build, 2: every row k of b that ends a run finds its run's slot
//                      s and stores k + 1 in flag[slots + s]
//   join_count         for probe row i of a, its key looked up in the HISA table idx of b:
//                      out[i] = the number of rows of b equal to it, flag[i] = the first
//   join_write         output k of params.n: its probe row i (the last i with idx[i] <= k,
//                      idx = exclusive scan of the counts, params.rows_a cells) in out[k]
//                      and its build row a[i] + k - idx[i] in flag[k], both as i64 (two
//                      words, a = the first rows)
//   gather_pairs       out[2j], out[2j+1] = a[2 idx[j]], a[2 idx[j] + 1] (64-bit elements)
//
// Relations whose key matrix passes one storage binding are keyed by column groups (a key
// matrix per group, each within a binding; relation/grouped.rs), one dispatch per group:
//   group_search       per row i of a, the rows [out[2i], out[2i+1]) of b equal to it on
//                      the groups so far, narrowed to those equal on this one (mode bit 1:
//                      the first group, the range starts as all of b). After the last
//                      group out[2i] is the number of rows of b before row i of a, and
//                      (mode bit 2, the last group) flag[i] = 1 if the range is empty: row i
//                      of a is not a row of b
//   check_sorted_group out[k] = 0 while rows k-1 and k of a are equal on the groups so far,
//                      1 once row k-1 is before, 2 once after (mode bit 2: the first
//                      group); mode bit 4, the last group: flag[slot] = min k with out[k] =
//                      2, or 0 when mode bit 1 (strictly increasing) is set
//   merge_scatter      flag[i + idx[2i]] = params.mode + i for row i of params.n: each row's
//                      place in the merge of two disjoint sorted relations is its index
//                      plus the number of rows of the other before it (group_search's out)
//   gather_merged_keys word w of out's row k (out[w n + k]) = word w of row idx[k] of
//                      a ++ b (merge_scatter's sources), params.words words
//
// Template parameters: {{WORKGROUP_SIZE}}; SEARCHES, in double braces: the binary searches,
// rendered from partition_point.wgsl by relation.rs.

struct Params {
    n: u32,
    rows_a: u32,
    rows_b: u32,
    words: u32,
    mode: u32,
    // The status word an entry point writes (check_sorted, check_monotonic, store_total).
    slot: u32,
    // The number of slots of a HISA table (a power of two).
    slots: u32,
    pad: u32,
}

const EMPTY: u32 = 0xffffffffu;

const WORKGROUP_SIZE: u32 = {{WORKGROUP_SIZE}}u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> a: array<u32>;
@group(0) @binding(2) var<storage, read> b: array<u32>;
@group(0) @binding(3) var<storage, read> idx: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<u32>;
@group(0) @binding(5) var<storage, read_write> flag: array<atomic<u32>>;

// -1, 0 or 1 as row i of a is before, equal to or after row j of b.
fn compare_ab(i: u32, j: u32) -> i32 {
    for (var w = 0u; w < params.words; w = w + 1u) {
        let x = a[w * params.rows_a + i];
        let y = b[w * params.rows_b + j];
        if x < y {
            return -1;
        }
        if x > y {
            return 1;
        }
    }
    return 0;
}

fn compare_aa(i: u32, j: u32) -> i32 {
    for (var w = 0u; w < params.words; w = w + 1u) {
        let x = a[w * params.rows_a + i];
        let y = a[w * params.rows_a + j];
        if x < y {
            return -1;
        }
        if x > y {
            return 1;
        }
    }
    return 0;
}

{{SEARCHES}}
// The first row of b not before row i of a (upper: the first row after it).
fn bound_in_b(i: u32, upper: bool) -> u32 {
    return first_row_of_b_from(0u, params.rows_b, i, upper);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn adjacent_distinct(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var k = global.x; k < params.n; k = k + stride) {
        // mode 1: a row an earlier key group found distinct stays so.
        if params.mode == 1u && out[k] != 0u {
            continue;
        }
        var distinct = 1u;
        if k > 0u && compare_aa(idx[k], idx[k - 1u]) == 0 {
            distinct = 0u;
        }
        out[k] = distinct;
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn check_sorted(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var k = global.x + 1u; k < params.rows_a; k = k + stride) {
        let c = compare_aa(k - 1u, k);
        if c > 0 || (params.mode == 1u && c == 0) {
            atomicMin(&flag[params.slot], k);
        }
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn check_monotonic(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var k = global.x; k < params.n; k = k + stride) {
        if idx[k + 1u] < idx[k] {
            atomicMin(&flag[params.slot], k);
        }
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn store_total(@builtin(global_invocation_id) global: vec3<u32>) {
    if global.x == 0u {
        atomicStore(&flag[params.slot], idx[params.n]);
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn not_in_b(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var i = global.x; i < params.rows_a; i = i + stride) {
        let at = bound_in_b(i, false);
        var missing = 1u;
        if at < params.rows_b && compare_ab(i, at) == 0 {
            missing = 0u;
        }
        out[i] = missing;
    }
}

// Output rows per invocation of merge_path: one diagonal search per MERGE_ITEMS rows.
const MERGE_ITEMS: u32 = 8u;

// Whether row i of a comes before row j of b (the two are disjoint: never equal).
fn a_before_b(i: u32, j: u32) -> bool {
    return compare_ab(i, j) < 0;
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn merge_path(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    let total = params.n;
    let chunks = (total + MERGE_ITEMS - 1u) / MERGE_ITEMS;
    for (var c = global.x; c < chunks; c = c + stride) {
        let d = c * MERGE_ITEMS;
        // The rows of a among the first d outputs: the first i in [max(0, d - rows_b),
        // min(d, rows_a)] with row i of a after row d - i - 1 of b.
        var lo = 0u;
        if d > params.rows_b {
            lo = d - params.rows_b;
        }
        lo = merge_diagonal(lo, min(d, params.rows_a), d);
        var i = lo;
        var j = d - lo;
        let end = min(d + MERGE_ITEMS, total);
        for (var k = d; k < end; k = k + 1u) {
            let take_a = j >= params.rows_b || (i < params.rows_a && a_before_b(i, j));
            if take_a {
                for (var w = 0u; w < params.words; w = w + 1u) {
                    out[w * total + k] = a[w * params.rows_a + i];
                }
                atomicStore(&flag[k], i);
                i = i + 1u;
            } else {
                for (var w = 0u; w < params.words; w = w + 1u) {
                    out[w * total + k] = b[w * params.rows_b + j];
                }
                atomicStore(&flag[k], params.rows_a + j);
                j = j + 1u;
            }
        }
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn gather_merged(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var k = global.x; k < params.n; k = k + stride) {
        let source = idx[k];
        if source < params.rows_a {
            out[2u * k] = a[2u * source];
            out[2u * k + 1u] = a[2u * source + 1u];
        } else {
            let j = source - params.rows_a;
            out[2u * k] = b[2u * j];
            out[2u * k + 1u] = b[2u * j + 1u];
        }
    }
}

// Hash of the key words of row i of a (of row j of b: the same function of the same words).
fn mix(h: u32, word: u32) -> u32 {
    var x = h ^ word;
    x = x * 0x9e3779b1u;
    x = x ^ (x >> 15u);
    x = x * 0x85ebca77u;
    return x ^ (x >> 13u);
}

fn hash_a(i: u32) -> u32 {
    var h = 0x2545f491u;
    for (var w = 0u; w < params.words; w = w + 1u) {
        h = mix(h, a[w * params.rows_a + i]);
    }
    return h;
}

fn hash_b(j: u32) -> u32 {
    var h = 0x2545f491u;
    for (var w = 0u; w < params.words; w = w + 1u) {
        h = mix(h, b[w * params.rows_b + j]);
    }
    return h;
}

fn compare_bb(i: u32, j: u32) -> i32 {
    for (var w = 0u; w < params.words; w = w + 1u) {
        let x = b[w * params.rows_b + i];
        let y = b[w * params.rows_b + j];
        if x < y {
            return -1;
        }
        if x > y {
            return 1;
        }
    }
    return 0;
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn hisa_insert(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    let mask = params.slots - 1u;
    for (var k = global.x; k < params.rows_b; k = k + stride) {
        if k > 0u && compare_bb(k - 1u, k) == 0 {
            continue;
        }
        // Run starts have distinct keys (b is sorted), so a taken slot is another key's:
        // probe on. The table has more slots than rows, so an empty one is always found.
        var s = hash_b(k) & mask;
        loop {
            let r = atomicCompareExchangeWeak(&flag[s], EMPTY, k);
            if r.exchanged {
                break;
            }
            if r.old_value != EMPTY {
                s = (s + 1u) & mask;
            }
        }
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn hisa_end(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    let mask = params.slots - 1u;
    for (var k = global.x; k < params.rows_b; k = k + stride) {
        if k + 1u < params.rows_b && compare_bb(k, k + 1u) == 0 {
            continue;
        }
        var s = hash_b(k) & mask;
        loop {
            let first = atomicLoad(&flag[s]);
            if first == EMPTY {
                break;
            }
            if compare_bb(first, k) == 0 {
                atomicStore(&flag[params.slots + s], k + 1u);
                break;
            }
            s = (s + 1u) & mask;
        }
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn join_count(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    let mask = params.slots - 1u;
    for (var i = global.x; i < params.rows_a; i = i + stride) {
        var s = hash_a(i) & mask;
        var first = 0u;
        var end = 0u;
        loop {
            let at = idx[s];
            if at == EMPTY {
                break;
            }
            if compare_ab(i, at) == 0 {
                first = at;
                end = idx[params.slots + s];
                break;
            }
            s = (s + 1u) & mask;
        }
        out[i] = end - first;
        atomicStore(&flag[i], first);
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn join_write(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var k = global.x; k < params.n; k = k + stride) {
        // The last probe row whose first output is at or before k (load-balancing search:
        // one invocation per output pair, whatever the number of matches per row).
        let i = first_offset_after(0u, params.rows_a, k) - 1u;
        out[2u * k] = i;
        out[2u * k + 1u] = 0u;
        atomicStore(&flag[2u * k], a[i] + (k - idx[i]));
        atomicStore(&flag[2u * k + 1u], 0u);
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn gather_pairs(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var j = global.x; j < params.n; j = j + stride) {
        let source = 2u * idx[j];
        out[2u * j] = a[source];
        out[2u * j + 1u] = a[source + 1u];
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn group_search(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var i = global.x; i < params.rows_a; i = i + stride) {
        var lo = 0u;
        var hi = params.rows_b;
        if (params.mode & 1u) == 0u {
            lo = out[2u * i];
            hi = out[2u * i + 1u];
        }
        let first = first_row_of_b_from(lo, hi, i, false);
        let end = first_row_of_b_from(first, hi, i, true);
        out[2u * i] = first;
        out[2u * i + 1u] = end;
        if (params.mode & 2u) != 0u {
            atomicStore(&flag[i], select(0u, 1u, first == end));
        }
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn check_sorted_group(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var k = global.x + 1u; k < params.rows_a; k = k + stride) {
        var state = 0u;
        if (params.mode & 2u) == 0u {
            state = out[k];
        }
        if state == 0u {
            let c = compare_aa(k - 1u, k);
            if c < 0 {
                state = 1u;
            } else if c > 0 {
                state = 2u;
            }
        }
        out[k] = state;
        let strictly = (params.mode & 1u) != 0u;
        if (params.mode & 4u) != 0u && (state == 2u || (strictly && state == 0u)) {
            atomicMin(&flag[params.slot], k);
        }
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn merge_scatter(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var i = global.x; i < params.n; i = i + stride) {
        atomicStore(&flag[i + idx[2u * i]], params.mode + i);
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn gather_merged_keys(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var k = global.x; k < params.n; k = k + stride) {
        let source = idx[k];
        for (var w = 0u; w < params.words; w = w + 1u) {
            if source < params.rows_a {
                out[w * params.n + k] = a[w * params.rows_a + source];
            } else {
                out[w * params.n + k] = b[w * params.rows_b + source - params.rows_a];
            }
        }
    }
}
