// Breadth-first multiway join of `@multiway_join` (runtime/src/gpu/multiway.rs; the CPU
// Leapfrog Triejoin in runtime/src/cpu/multiway.rs is its oracle).
//
// The join binds one variable per round. A round starts from `params.bindings` partial
// bindings (M): per atom, the trie node its last bound variable reached (`nodes`, atom-major:
// atom a of binding i at a * M + i), and the values of the variables bound so far (`vals`,
// variable-major, i64 as two words: variable u of binding i at words 2 (u M + i)).
//
// `trie` holds every atom's trie: level values (two words each) and offsets (one word each);
// `plan` holds, at word `params.step`, the round's record: the number of atoms that contain
// the variable, the number of comparisons, then 5 words per atom (atom, trie level,
// word of its level values, level length, word of the offsets into that level from the level
// above), then 2 words per comparison (op code, earlier variable u: `v op u` must hold; ops
// 0 <, 1 <=, 2 >, 3 >=, 4 !=).
//
// A round (entry points; bindings: params, plan, trie, nodes, vals, index_in, side_in, out_a,
// out_b, counter):
//   count    per binding (params.bindings of them, or counter[2] when params.kept != 0): the
//            children range of each atom; the smallest is the driver,
//            narrowed by the comparisons' bounds (binary search). out_a[i] = its size,
//            out_b[2i] = the driver (position in the record), out_b[2i + 1] = its first child.
//   (host)   exclusive scan of the counts (index_in below), recorded with count
//   scan_total  out_a[0] = 1 if the scan index_in (params.bindings + 1 words) decreases
//            anywhere (a total past 2^32 wrapped), out_a[1] = the total: the round's one read.
//   expand   per slot of the window [params.start, params.start + params.window): its binding
//            (load-balancing search: the last i with index_in[i] <= slot) and its candidate
//            value (a child of the driver); every other atom is searched for the value in its
//            children (binary search); comparisons checked. out_a[t] = 1 if all hold,
//            out_b[t * params.stride ..] = (binding, position of the value in each atom's
//            level, in record order). side_in = the drivers (out_b of count).
//   (host)   exclusive scan of the flags (index_in below)
//   compact  the kept slots in order: out_a[index_in[t]] = t where the flag side_in[t] is
//            set; their number to counter[2] (read by the host only when it must be: the
//            next round's count kernel and gather take it from there)
//   gather   per kept slot j (counter[2] of them; params.kept the new bindings' stride): the
//            new binding j: each atom's node (the slot's position for
//            the atoms of the round, the parent's otherwise) in out_a, the parent's values
//            and the new value in out_b. side_in = the slots (out_b of expand).
//   take     bindings params.start .. params.start + params.kept copied (out_a nodes, out_b
//            values of the first params.variable variables): a split of a round whose scan
//            would pass 2^32.
//   expand_count  the last round of a count (`@multiway_count`): expand's test per slot of
//            the window, no slot written; the passing slots are summed per workgroup and
//            added to counter (a u64: low word, high word, the carry added on wrap).
//
// Template parameters: {{WORKGROUP_SIZE}}; SEARCHES, in double braces: the binary searches,
// rendered from partition_point.wgsl by multiway.rs.

struct Params {
    bindings: u32,
    start: u32,
    window: u32,
    variable: u32,
    step: u32,
    atoms: u32,
    kept: u32,
    stride: u32,
}

const WORKGROUP_SIZE: u32 = {{WORKGROUP_SIZE}}u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> plan: array<u32>;
@group(0) @binding(2) var<storage, read> trie: array<u32>;
@group(0) @binding(3) var<storage, read> nodes: array<u32>;
@group(0) @binding(4) var<storage, read> vals: array<u32>;
@group(0) @binding(5) var<storage, read> index_in: array<u32>;
@group(0) @binding(6) var<storage, read> side_in: array<u32>;
@group(0) @binding(7) var<storage, read_write> out_a: array<u32>;
@group(0) @binding(8) var<storage, read_write> out_b: array<u32>;
@group(0) @binding(9) var<storage, read_write> counter: array<atomic<u32>>;

var<workgroup> passed: atomic<u32>;

// i64 values as (low word, high word): signed order.
fn less(a: vec2<u32>, b: vec2<u32>) -> bool {
    let ah = bitcast<i32>(a.y);
    let bh = bitcast<i32>(b.y);
    return ah < bh || (ah == bh && a.x < b.x);
}

fn level_value(values: u32, position: u32) -> vec2<u32> {
    return vec2<u32>(trie[values + 2u * position], trie[values + 2u * position + 1u]);
}

fn bound_value(u: u32, binding: u32) -> vec2<u32> {
    let w = 2u * (u * params.bindings + binding);
    return vec2<u32>(vals[w], vals[w + 1u]);
}

fn record(k: u32) -> u32 {
    return params.step + 2u + 5u * k;
}

// The children range [lo, hi) of atom k of the round for binding i.
fn children(k: u32, i: u32) -> vec2<u32> {
    let r = record(k);
    let atom = plan[r];
    let level = plan[r + 1u];
    if level == 0u {
        return vec2<u32>(0u, plan[r + 3u]);
    }
    let node = nodes[atom * params.bindings + i];
    let offsets = plan[r + 4u];
    return vec2<u32>(trie[offsets + node], trie[offsets + node + 1u]);
}

// Whether the value at `position` of a level comes before x (strict: is not above x).
fn value_before(values: u32, position: u32, x: vec2<u32>, strict: bool) -> bool {
    let y = level_value(values, position);
    return select(less(y, x), !less(x, y), strict);
}

{{SEARCHES}}
// The first position in [lo, hi) whose value is not below x (strict: above x).
fn search(values: u32, lo: u32, hi: u32, x: vec2<u32>, strict: bool) -> u32 {
    return first_value_from(lo, hi, values, x, strict);
}

fn holds(op: u32, v: vec2<u32>, u: vec2<u32>) -> bool {
    switch op {
        case 0u: { return less(v, u); }
        case 1u: { return !less(u, v); }
        case 2u: { return less(u, v); }
        case 3u: { return !less(v, u); }
        default: { return v.x != u.x || v.y != u.y; }
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn count(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    let atoms = plan[params.step];
    let checks = plan[params.step + 1u];
    // params.kept != 0: the bindings are counted on the device (counter[2], left by compact),
    // params.bindings is their stride.
    var live = params.bindings;
    if params.kept != 0u {
        live = atomicLoad(&counter[2]);
    }
    for (var i = global.x; i < live; i = i + stride) {
        var driver = 0u;
        var range = children(0u, i);
        for (var k = 1u; k < atoms; k = k + 1u) {
            let r = children(k, i);
            if r.y - r.x < range.y - range.x {
                driver = k;
                range = r;
            }
        }
        let values = plan[record(driver) + 2u];
        let first_check = params.step + 2u + 5u * atoms;
        for (var c = 0u; c < checks; c = c + 1u) {
            let op = plan[first_check + 2u * c];
            let x = bound_value(plan[first_check + 2u * c + 1u], i);
            switch op {
                case 0u: { range.y = search(values, range.x, range.y, x, false); }
                case 1u: { range.y = search(values, range.x, range.y, x, true); }
                case 2u: { range.x = search(values, range.x, range.y, x, true); }
                case 3u: { range.x = search(values, range.x, range.y, x, false); }
                default: {}
            }
        }
        out_a[i] = select(0u, range.y - range.x, range.y > range.x);
        out_b[2u * i] = driver;
        out_b[2u * i + 1u] = range.x;
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn expand(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var t = global.x; t < params.window; t = t + stride) {
        out_a[t] = select(0u, 1u, candidate(params.start + t, t * params.stride, true));
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn gather(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    let atoms = plan[params.step];
    // params.kept is the new bindings' stride; counter[2] how many there are.
    let kept = params.kept;
    let live = atomicLoad(&counter[2]);
    for (var j = global.x; j < live; j = j + stride) {
        let slot = index_in[j] * params.stride;
        let parent = side_in[slot];
        for (var a = 0u; a < params.atoms; a = a + 1u) {
            var node = nodes[a * params.bindings + parent];
            for (var k = 0u; k < atoms; k = k + 1u) {
                if plan[record(k)] == a {
                    node = side_in[slot + 1u + k];
                }
            }
            out_a[a * kept + j] = node;
        }
        for (var u = 0u; u < params.variable; u = u + 1u) {
            let source = 2u * (u * params.bindings + parent);
            let to = 2u * (u * kept + j);
            out_b[to] = vals[source];
            out_b[to + 1u] = vals[source + 1u];
        }
        let x = level_value(plan[record(0u) + 2u], side_in[slot + 1u]);
        let to = 2u * (params.variable * kept + j);
        out_b[to] = x.x;
        out_b[to + 1u] = x.y;
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn compact(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    if global.x == 0u {
        atomicStore(&counter[2], index_in[params.window]);
    }
    for (var t = global.x; t < params.window; t = t + stride) {
        if side_in[t] != 0u {
            out_a[index_in[t]] = t;
        }
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn take(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    let kept = params.kept;
    for (var j = global.x; j < kept; j = j + stride) {
        let parent = params.start + j;
        for (var a = 0u; a < params.atoms; a = a + 1u) {
            out_a[a * kept + j] = nodes[a * params.bindings + parent];
        }
        for (var u = 0u; u < params.variable; u = u + 1u) {
            let source = 2u * (u * params.bindings + parent);
            let to = 2u * (u * kept + j);
            out_b[to] = vals[source];
            out_b[to + 1u] = vals[source + 1u];
        }
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn scan_total(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    if global.x == 0u {
        out_a[1] = index_in[params.bindings];
    }
    for (var i = global.x; i < params.bindings; i = i + stride) {
        if index_in[i + 1u] < index_in[i] {
            // Every writer stores the same word.
            out_a[0] = 1u;
        }
    }
}

// Whether candidate `slot` of the round passes (every atom has it, every comparison holds);
// the binding and the atoms' positions go to out_b from `out` when `keep` is set.
fn candidate(slot: u32, out: u32, keep: bool) -> bool {
    let atoms = plan[params.step];
    let checks = plan[params.step + 1u];
    let first_check = params.step + 2u + 5u * atoms;
    // Load-balancing search: the binding whose output range holds the slot.
    let parent = first_offset_after(0u, params.bindings, slot) - 1u;
    let driver = side_in[2u * parent];
    let position = side_in[2u * parent + 1u] + (slot - index_in[parent]);
    let x = level_value(plan[record(driver) + 2u], position);
    if keep {
        out_b[out] = parent;
    }
    var ok = true;
    for (var k = 0u; k < atoms && ok; k = k + 1u) {
        if k == driver {
            if keep {
                out_b[out + 1u + k] = position;
            }
            continue;
        }
        let range = children(k, parent);
        let values = plan[record(k) + 2u];
        let found = search(values, range.x, range.y, x, false);
        if found < range.y && !less(x, level_value(values, found)) {
            if keep {
                out_b[out + 1u + k] = found;
            }
        } else {
            ok = false;
        }
    }
    for (var c = 0u; c < checks && ok; c = c + 1u) {
        let u = bound_value(plan[first_check + 2u * c + 1u], parent);
        ok = holds(plan[first_check + 2u * c], x, u);
    }
    return ok;
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn expand_count(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(local_invocation_index) local: u32,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    var mine = 0u;
    for (var t = global.x; t < params.window; t = t + stride) {
        if candidate(params.start + t, 0u, false) {
            mine = mine + 1u;
        }
    }
    if mine > 0u {
        atomicAdd(&passed, mine);
    }
    workgroupBarrier();
    if local == 0u {
        let sum = atomicLoad(&passed);
        if sum > 0u {
            let before = atomicAdd(&counter[0], sum);
            if before > 0xffffffffu - sum {
                atomicAdd(&counter[1], 1u);
            }
        }
    }
}
