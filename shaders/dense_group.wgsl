// Group ranks from a small key domain, without a hash table or a sort. Driven by
// `runtime/src/gpu/dense_group.rs`.
//
// Each key word `w` of a row lies in [min_w, max_w] (measured first). The row's slot is the
// mixed-radix number of its words less their minimums, word 0 most significant:
// slot = sum_w (word_w - min_w) * stride_w, with stride_w the product of the ranges of the
// words after w. Word order is key order (see `keys.rs`), so slot order is key order, and a
// group's rank is the number of occupied slots below its slot. Every count is an integer
// atomic (order-independent), so the result is the same on every run.
//
// `ranges` holds per word its minimum and its stride, then the domain's size; `set_ranges`
// computes it on the device from the measured `min, max` per word (nothing is read back to
// decide). `params.domain` is the capacity of the slot buffers: a bound on the domain from
// the key's types, or as many slots as the caller affords. A measured domain beyond it is
// marked NONE: the counting pass then does nothing and the summary says NONE groups (the
// caller hashes instead).
//
// Entry points:
// - `set_ranges` (one invocation): `ranges` from `minmax`, or the domain NONE when it
//   exceeds the capacity.
// - `slot_counts`: writes each row's slot into `slots` and counts the rows and their lowest
//   row per slot. Where the measured domain has at most LOCAL_SLOTS slots each workgroup
//   counts in workgroup memory first, then adds into `counts`/`firsts` once per occupied
//   slot (few global atomics where a few slots take every row); otherwise straight into
//   `counts`/`firsts`.
// - `compact_slots`: after the exclusive scans of the occupied slots (`present_scan`) and
//   of the counts (`count_scan`), one invocation per slot writes its rank
//   (`rank_of_slot`), its group's first row (`group_keys`) and first position in the
//   bucketed rows (`group_offsets`); `summary` gets the group count (NONE when the domain
//   is too large), the largest group's rows, then every word's `min, max`.
// - `scatter_rows`: each row into its group's bucket, at the next free place of its slot
//   (`cursor`, a copy of `count_scan`); rows within a bucket come in no particular order.
// - `sort_buckets`: one invocation per group puts its bucket's rows in ascending order
//   (insertion sort in place: for buckets of a few rows, as the caller checks).
//
// `firsts` holds NONE - row (NONE = 0xffffffff), so a zeroed buffer means "no row yet" and
// the lowest row is an atomicMax.
//
// Placeholders (each NAME in double braces): WORKGROUP_SIZE, LOCAL_SLOTS.

const WORKGROUP_SIZE: u32 = {{WORKGROUP_SIZE}}u;
const LOCAL_SLOTS: u32 = {{LOCAL_SLOTS}}u;
const NONE: u32 = 0xffffffffu;

struct Params {
    rows: u32,
    words: u32,
    // Slots of the slot buffers: at least the domain, if it is taken.
    domain: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
    pad3: u32,
    pad4: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
// The key matrix, word-major (`word * rows + row`).
@group(0) @binding(1) var<storage, read> keys: array<u32>;
// Per word: its minimum, then its stride; then the measured domain's size.
@group(0) @binding(2) var<storage, read_write> ranges: array<u32>;
@group(0) @binding(3) var<storage, read_write> slots: array<u32>;
@group(0) @binding(4) var<storage, read_write> counts: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read_write> firsts: array<atomic<u32>>;
// `domain + 1` elements each (the totals last).
@group(0) @binding(6) var<storage, read> present_scan: array<u32>;
@group(0) @binding(7) var<storage, read> count_scan: array<u32>;
@group(0) @binding(8) var<storage, read_write> rank_of_slot: array<u32>;
@group(0) @binding(9) var<storage, read_write> group_keys: array<u32>;
@group(0) @binding(10) var<storage, read_write> group_offsets: array<u32>;
// [groups, largest group's rows]
@group(0) @binding(11) var<storage, read_write> summary: array<atomic<u32>>;
@group(0) @binding(12) var<storage, read_write> cursor: array<atomic<u32>>;
@group(0) @binding(13) var<storage, read_write> bucketed: array<u32>;
// Per word: `min, max` (`set_ranges`).
@group(0) @binding(14) var<storage, read> minmax: array<u32>;

var<workgroup> local_counts: array<atomic<u32>, LOCAL_SLOTS>;
var<workgroup> local_firsts: array<atomic<u32>, LOCAL_SLOTS>;
var<workgroup> measured_domain: u32;

fn slot_of(row: u32) -> u32 {
    var slot = 0u;
    for (var w = 0u; w < params.words; w = w + 1u) {
        slot = slot + (keys[w * params.rows + row] - ranges[2u * w]) * ranges[2u * w + 1u];
    }
    return slot;
}

@compute @workgroup_size(1)
fn set_ranges() {
    var stride = 1u;
    var fits = true;
    for (var w = params.words; w > 0u; w = w - 1u) {
        let lo = minmax[2u * (w - 1u)];
        let hi = minmax[2u * (w - 1u) + 1u];
        ranges[2u * (w - 1u)] = lo;
        ranges[2u * (w - 1u) + 1u] = stride;
        // stride * (hi - lo + 1) <= capacity, without overflowing u32.
        let span = hi - lo;
        if span >= params.domain || stride > params.domain / (span + 1u) {
            fits = false;
            break;
        }
        stride = stride * (span + 1u);
    }
    ranges[2u * params.words] = select(NONE, stride, fits);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn slot_counts(
    @builtin(local_invocation_index) local: u32,
    @builtin(global_invocation_id) global_id: vec3<u32>,
    @builtin(num_workgroups) num_workgroups: vec3<u32>,
) {
    if local == 0u {
        measured_domain = ranges[2u * params.words];
    }
    let domain = workgroupUniformLoad(&measured_domain);
    if domain > params.domain {
        return;
    }
    let in_workgroup = domain <= LOCAL_SLOTS;
    if in_workgroup {
        for (var s = local; s < domain; s = s + WORKGROUP_SIZE) {
            atomicStore(&local_counts[s], 0u);
            atomicStore(&local_firsts[s], 0u);
        }
    }
    workgroupBarrier();
    let stride = num_workgroups.x * WORKGROUP_SIZE;
    for (var row = global_id.x; row < params.rows; row = row + stride) {
        let slot = slot_of(row);
        slots[row] = slot;
        if in_workgroup {
            atomicAdd(&local_counts[slot], 1u);
            atomicMax(&local_firsts[slot], NONE - row);
        } else {
            atomicAdd(&counts[slot], 1u);
            atomicMax(&firsts[slot], NONE - row);
        }
    }
    workgroupBarrier();
    if in_workgroup {
        for (var s = local; s < domain; s = s + WORKGROUP_SIZE) {
            let count = atomicLoad(&local_counts[s]);
            if count > 0u {
                atomicAdd(&counts[s], count);
                atomicMax(&firsts[s], atomicLoad(&local_firsts[s]));
            }
        }
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn compact_slots(
    @builtin(global_invocation_id) global_id: vec3<u32>,
    @builtin(num_workgroups) num_workgroups: vec3<u32>,
) {
    if global_id.x == 0u {
        for (var w = 0u; w < 2u * params.words; w = w + 1u) {
            atomicStore(&summary[2u + w], minmax[w]);
        }
    }
    if ranges[2u * params.words] > params.domain {
        if global_id.x == 0u {
            atomicStore(&summary[0], NONE);
        }
        return;
    }
    let stride = num_workgroups.x * WORKGROUP_SIZE;
    for (var s = global_id.x; s < params.domain; s = s + stride) {
        let count = atomicLoad(&counts[s]);
        if count > 0u {
            let rank = present_scan[s];
            rank_of_slot[s] = rank;
            group_keys[rank] = NONE - atomicLoad(&firsts[s]);
            group_offsets[rank] = count_scan[s];
            atomicMax(&summary[1], count);
        }
    }
    if global_id.x == 0u {
        let groups = present_scan[params.domain];
        atomicStore(&summary[0], groups);
        group_offsets[groups] = params.rows;
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn scatter_rows(
    @builtin(global_invocation_id) global_id: vec3<u32>,
    @builtin(num_workgroups) num_workgroups: vec3<u32>,
) {
    let stride = num_workgroups.x * WORKGROUP_SIZE;
    for (var row = global_id.x; row < params.rows; row = row + stride) {
        let at = atomicAdd(&cursor[slots[row]], 1u);
        bucketed[at] = row;
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn sort_buckets(
    @builtin(global_invocation_id) global_id: vec3<u32>,
    @builtin(num_workgroups) num_workgroups: vec3<u32>,
) {
    let groups = atomicLoad(&summary[0]);
    let stride = num_workgroups.x * WORKGROUP_SIZE;
    for (var g = global_id.x; g < groups; g = g + stride) {
        let start = group_offsets[g];
        let end = group_offsets[g + 1u];
        for (var i = start + 1u; i < end; i = i + 1u) {
            let row = bucketed[i];
            var j = i;
            loop {
                if j == start || bucketed[j - 1u] <= row {
                    break;
                }
                bucketed[j] = bucketed[j - 1u];
                j = j - 1u;
            }
            bucketed[j] = row;
        }
    }
}
