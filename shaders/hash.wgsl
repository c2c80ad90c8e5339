// Open-addressing hash table over the rows of a key matrix (see keys.wgsl for the layout),
// for `@group`, `@unique`, `@member` and `@join_index` (runtime/src/gpu/hash.rs).
//
// The table has a power-of-two number of slots (at least twice the rows inserted, so
// probing always ends); a slot holds 0 (empty) or 1 + the index of the build row that
// claimed it. Linear probing. A row's key is all its words: equal keys land in one slot.
//
// Entry points:
//   insert      for each build row i: insert-or-find its key, slots[i] = its slot. The first
//               writer claims an empty slot by atomicCompareExchangeWeak; a row that finds
//               the slot taken compares its key with the claiming row's and moves on if
//               they differ. (A weak exchange may fail spuriously: the slot is then re-read.)
//   probe       for each probe row i: find its key among the build rows, slots[i] = the slot
//               or NONE (0xffffffff). The build and probe matrices may differ (joins).
//   first_rows  counters[slots[i]] = min(i) over the rows of each slot (counters start at
//               u32::MAX): the first row of each distinct key.
//   is_first    flags[i] = (counters[slots[i]] == i).
//   count_slots counters[slots[i]] += 1 for rows with a slot (a histogram of the slots).
//   scatter_slots  rows bucketed by slot, unordered within a bucket: with `build` the
//               exclusive scan of the histogram in `counters`, each row with a slot takes
//               position build[slot] + (its atomicSub of counters[slot]) - 1 of `flags`;
//               table[0] = the largest bucket (atomicMax).
//
// Template parameters: {{WORKGROUP_SIZE}}.

struct Params {
    n: u32,
    words: u32,
    mask: u32,
    build_rows: u32,
    probe_rows: u32,
    unused_0: u32,
    unused_1: u32,
    unused_2: u32,
}

const WORKGROUP_SIZE: u32 = {{WORKGROUP_SIZE}}u;
const NONE: u32 = 0xffffffffu;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> build: array<u32>;
@group(0) @binding(2) var<storage, read> probe_keys: array<u32>;
@group(0) @binding(3) var<storage, read_write> table: array<atomic<u32>>;
@group(0) @binding(4) var<storage, read_write> slots: array<u32>;
@group(0) @binding(5) var<storage, read_write> counters: array<atomic<u32>>;
@group(0) @binding(6) var<storage, read_write> flags: array<u32>;

// murmur3's finaliser: every input bit affects every output bit.
fn mix(x_in: u32) -> u32 {
    var x = x_in;
    x = x ^ (x >> 16u);
    x = x * 0x85ebca6bu;
    x = x ^ (x >> 13u);
    x = x * 0xc2b2ae35u;
    x = x ^ (x >> 16u);
    return x;
}

fn hash_build(row: u32) -> u32 {
    var h = 0x9e3779b9u;
    for (var w = 0u; w < params.words; w = w + 1u) {
        h = mix(h ^ mix(build[w * params.build_rows + row] + w));
    }
    return h;
}

fn hash_probe(row: u32) -> u32 {
    var h = 0x9e3779b9u;
    for (var w = 0u; w < params.words; w = w + 1u) {
        h = mix(h ^ mix(probe_keys[w * params.probe_rows + row] + w));
    }
    return h;
}

fn build_rows_equal(a: u32, b: u32) -> bool {
    for (var w = 0u; w < params.words; w = w + 1u) {
        let base = w * params.build_rows;
        if build[base + a] != build[base + b] {
            return false;
        }
    }
    return true;
}

fn probe_equals_build(p: u32, b: u32) -> bool {
    for (var w = 0u; w < params.words; w = w + 1u) {
        if probe_keys[w * params.probe_rows + p] != build[w * params.build_rows + b] {
            return false;
        }
    }
    return true;
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn insert(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var i = global.x; i < params.n; i = i + stride) {
        var slot = hash_build(i) & params.mask;
        loop {
            var owner = atomicLoad(&table[slot]);
            if owner == 0u {
                let attempt = atomicCompareExchangeWeak(&table[slot], 0u, i + 1u);
                if attempt.exchanged {
                    break;
                }
                owner = attempt.old_value;
                if owner == 0u {
                    // Spurious failure: try the same slot again.
                    continue;
                }
            }
            if build_rows_equal(owner - 1u, i) {
                break;
            }
            slot = (slot + 1u) & params.mask;
        }
        slots[i] = slot;
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn probe(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var i = global.x; i < params.n; i = i + stride) {
        var slot = hash_probe(i) & params.mask;
        var found = NONE;
        loop {
            let owner = atomicLoad(&table[slot]);
            if owner == 0u {
                break;
            }
            if probe_equals_build(i, owner - 1u) {
                found = slot;
                break;
            }
            slot = (slot + 1u) & params.mask;
        }
        slots[i] = found;
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn first_rows(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var i = global.x; i < params.n; i = i + stride) {
        atomicMin(&counters[slots[i]], i);
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn is_first(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var i = global.x; i < params.n; i = i + stride) {
        flags[i] = u32(atomicLoad(&counters[slots[i]]) == i);
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn count_slots(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var i = global.x; i < params.n; i = i + stride) {
        let slot = slots[i];
        if slot != NONE {
            atomicAdd(&counters[slot], 1u);
        }
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn scatter_slots(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var i = global.x; i < params.n; i = i + stride) {
        let slot = slots[i];
        if slot != NONE {
            let left = atomicSub(&counters[slot], 1u);
            flags[build[slot] + left - 1u] = i;
            atomicMax(&table[0], left);
        }
    }
}
