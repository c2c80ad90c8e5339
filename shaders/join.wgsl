// `@join_index`: the pairs (i, j) of rows of a and b where every predicate holds, sorted by
// i then j (runtime/src/gpu/join.rs). Count, then write:
//   count_pairs  counts[i] = matching pairs of row i of a
//   (exclusive scan of counts: offsets, total = pairs)
//   check_wrap   out_a[0] = 1 if the u32 offsets wrapped (more than 2^32 pairs)
//   write_pairs  pair offsets[i] + k = the k-th pair of row i (by j); with
//                params.sort_runs, the walk's order is sorted by j (insertion sort: buckets
//                are small then, see SMALL_BUCKET in join.rs)
//   write_expanded  without other predicates and with candidates in b's order: the same
//                pairs, one invocation per pair (a binary search finds its row)
// Pairs are written as the i64 row indexes the builtin returns: pair k is out_a[2k],
// out_a[2k + 1] (low and high word; the high word is 0) and the same of out_b, so no pass
// widens them afterwards.
// Candidates for row i: with equality predicates, the b rows of its hash slot,
// bucketed[bucket_start[slot] .. bucket_start[slot + 1]] (ascending after a stable sort by
// slot, or unordered after a scatter);
// without any (params.all_pairs = 1), every row of b. The other predicates are checked on
// each candidate: check k compares the words check_words[3k+1] .. + check_words[3k+2] of the
// two check key matrices (keys.wgsl layout; most significant word first) with operator
// check_words[3k].
//
// Template parameters: {{WORKGROUP_SIZE}}.

struct Params {
    rows_a: u32,
    rows_b: u32,
    all_pairs: u32,
    num_checks: u32,
    // write_pairs: 1 when the buckets are unordered (each row sorts its own pairs by j).
    sort_runs: u32,
    // write_expanded: the pair count.
    pairs: u32,
    unused_2: u32,
    unused_3: u32,
}

const WORKGROUP_SIZE: u32 = {{WORKGROUP_SIZE}}u;
const NONE: u32 = 0xffffffffu;
// Operators; keep in sync with `check_op` in join.rs.
const OP_EQ: u32 = 0u;
const OP_NEQ: u32 = 1u;
const OP_LT: u32 = 2u;
const OP_GT: u32 = 3u;
const OP_LEQ: u32 = 4u;
const OP_GEQ: u32 = 5u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> slot_a: array<u32>;
@group(0) @binding(2) var<storage, read> bucket_start: array<u32>;
@group(0) @binding(3) var<storage, read> bucketed: array<u32>;
@group(0) @binding(4) var<storage, read> check_a: array<u32>;
@group(0) @binding(5) var<storage, read> check_b: array<u32>;
@group(0) @binding(6) var<storage, read> check_words: array<u32>;
// count_pairs: the counts; check_wrap and write_pairs: their exclusive scan (offsets).
@group(0) @binding(7) var<storage, read_write> counts: array<u32>;
@group(0) @binding(8) var<storage, read_write> out_a: array<u32>;
@group(0) @binding(9) var<storage, read_write> out_b: array<u32>;

fn holds(i: u32, j: u32) -> bool {
    for (var k = 0u; k < params.num_checks; k = k + 1u) {
        let op = check_words[3u * k];
        let first = check_words[3u * k + 1u];
        let words = check_words[3u * k + 2u];
        // -1, 0, 1 as a's key compares with b's, most significant word first.
        var order = 0;
        for (var w = first; w < first + words; w = w + 1u) {
            let x = check_a[w * params.rows_a + i];
            let y = check_b[w * params.rows_b + j];
            if x != y {
                order = select(1, -1, x < y);
                break;
            }
        }
        var ok = true;
        switch op {
            case OP_EQ: { ok = order == 0; }
            case OP_NEQ: { ok = order != 0; }
            case OP_LT: { ok = order < 0; }
            case OP_GT: { ok = order > 0; }
            case OP_LEQ: { ok = order <= 0; }
            case OP_GEQ: { ok = order >= 0; }
            default: { ok = false; }
        }
        if !ok {
            return false;
        }
    }
    return true;
}

// Pair `at` is (i, j), as i64 words.
fn put_pair(at: u32, i: u32, j: u32) {
    out_a[2u * at] = i;
    out_a[2u * at + 1u] = 0u;
    out_b[2u * at] = j;
    out_b[2u * at + 1u] = 0u;
}

// The candidate range of row i in `bucketed` (or in 0..rows_b for all pairs).
fn candidates(i: u32) -> vec2<u32> {
    if params.all_pairs != 0u {
        return vec2<u32>(0u, params.rows_b);
    }
    let slot = slot_a[i];
    if slot == NONE {
        return vec2<u32>(0u, 0u);
    }
    return vec2<u32>(bucket_start[slot], bucket_start[slot + 1u]);
}

fn candidate(k: u32) -> u32 {
    return select(bucketed[k], k, params.all_pairs != 0u);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn count_pairs(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var i = global.x; i < params.rows_a; i = i + stride) {
        let range = candidates(i);
        if params.num_checks == 0u {
            // Every candidate is a pair: no walk (a bucket may hold thousands of rows).
            counts[i] = range.y - range.x;
            continue;
        }
        var count = 0u;
        for (var k = range.x; k < range.y; k = k + 1u) {
            if holds(i, candidate(k)) {
                count = count + 1u;
            }
        }
        counts[i] = count;
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn check_wrap(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    // A row has fewer than 2^31 pairs, so a wrap of the running sum shows as a decrease.
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var i = global.x; i < params.rows_a; i = i + stride) {
        if counts[i + 1u] < counts[i] {
            out_a[0] = 1u;
        }
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn write_pairs(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var i = global.x; i < params.rows_a; i = i + stride) {
        let range = candidates(i);
        var at = counts[i];
        for (var k = range.x; k < range.y; k = k + 1u) {
            let j = candidate(k);
            if holds(i, j) {
                put_pair(at, i, j);
                at = at + 1u;
            }
        }
        if params.sort_runs != 0u {
            let first = counts[i];
            for (var k = first + 1u; k < at; k = k + 1u) {
                let j = out_b[2u * k];
                var m = k;
                while m > first && out_b[2u * (m - 1u)] > j {
                    out_b[2u * m] = out_b[2u * (m - 1u)];
                    m = m - 1u;
                }
                out_b[2u * m] = j;
            }
        }
    }
}

// Without other predicates, where every row's candidates are in b's order (sorted buckets,
// or all pairs): one invocation per pair instead of one per row of a, so a row with a large
// bucket does not write its pairs alone. Pair k belongs to the last row i with
// offsets[i] <= k (a binary search over the scanned counts; rows without pairs share their
// offset with the next row, so the last such i has pairs) and is its (k - offsets[i])-th
// candidate.
@compute @workgroup_size(WORKGROUP_SIZE)
fn write_expanded(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var k = global.x; k < params.pairs; k = k + stride) {
        // Invariant: counts[lo] <= k < counts[hi] (counts[rows_a] is the pair count).
        var lo = 0u;
        var hi = params.rows_a;
        while hi - lo > 1u {
            let mid = lo + (hi - lo) / 2u;
            if counts[mid] <= k {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let range = candidates(lo);
        put_pair(k, lo, candidate(range.x + (k - counts[lo])));
    }
}
