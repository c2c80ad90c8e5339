// Exclusive prefix sum over u32 (wrapping), reduce-then-scan.
//
// Pass structure (driven by runtime/src/gpu/scan.rs):
//   1. reduce_tiles: the sum of each tile of TILE inputs goes to tile_sums[tile].
//   2. the tile sums are scanned by the same three passes, recursively, until one tile remains;
//      the result (exclusive offsets of the tiles) replaces tile_sums.
//   3. scan_tiles: each tile is scanned locally and offset by its tile's exclusive sum.
// No pass waits on another workgroup, so it needs no forward-progress guarantee (unlike a
// single-pass decoupled look-back). Workgroups loop over tiles (grid-stride), so any tile
// count fits under the 65 535-workgroup dispatch limit.
//
// output has n + 1 elements: output[i] = map(input[0]) + ... + map(input[i - 1]), and
// output[n] is the total.
//
// Template parameters: {{WORKGROUP_SIZE}}, {{ITEMS_PER_THREAD}}, and {{MAP}}, an expression in
// `x: u32` applied to each input as it is loaded (`x` to sum values, `u32(x != 0u)` to count
// true flags).

struct Params {
    n: u32,
    num_tiles: u32,
    unused_0: u32,
    unused_1: u32,
}

const WORKGROUP_SIZE: u32 = {{WORKGROUP_SIZE}}u;
const ITEMS_PER_THREAD: u32 = {{ITEMS_PER_THREAD}}u;
const TILE: u32 = WORKGROUP_SIZE * ITEMS_PER_THREAD;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> input: array<u32>;
// reduce_tiles writes the tile sums here; scan_tiles reads the tiles' exclusive offsets.
@group(0) @binding(2) var<storage, read_write> tile_sums: array<u32>;
@group(0) @binding(3) var<storage, read_write> output: array<u32>;

var<workgroup> partials: array<u32, WORKGROUP_SIZE>;

fn load(i: u32) -> u32 {
    if i < params.n {
        let x = input[i];
        return {{MAP}};
    }
    return 0u;
}

// Inclusive scan of one value per invocation across the workgroup (Hillis-Steele).
// Must be called from uniform control flow; leaves the workgroup total in
// partials[WORKGROUP_SIZE - 1] until the caller's next barrier.
fn workgroup_inclusive_scan(lid: u32, value: u32) -> u32 {
    partials[lid] = value;
    workgroupBarrier();
    for (var offset = 1u; offset < WORKGROUP_SIZE; offset = offset * 2u) {
        var addend = 0u;
        if lid >= offset {
            addend = partials[lid - offset];
        }
        workgroupBarrier();
        partials[lid] = partials[lid] + addend;
        workgroupBarrier();
    }
    return partials[lid];
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn reduce_tiles(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    for (var tile = workgroup.x; tile < params.num_tiles; tile = tile + workgroups.x) {
        let first = tile * TILE + lid * ITEMS_PER_THREAD;
        var sum = 0u;
        for (var k = 0u; k < ITEMS_PER_THREAD; k = k + 1u) {
            sum = sum + load(first + k);
        }
        let inclusive = workgroup_inclusive_scan(lid, sum);
        if lid == WORKGROUP_SIZE - 1u {
            tile_sums[tile] = inclusive;
        }
        // partials is rewritten by the next tile.
        workgroupBarrier();
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn scan_tiles(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    for (var tile = workgroup.x; tile < params.num_tiles; tile = tile + workgroups.x) {
        let first = tile * TILE + lid * ITEMS_PER_THREAD;
        var values: array<u32, ITEMS_PER_THREAD>;
        var sum = 0u;
        for (var k = 0u; k < ITEMS_PER_THREAD; k = k + 1u) {
            values[k] = load(first + k);
            sum = sum + values[k];
        }
        let inclusive = workgroup_inclusive_scan(lid, sum);
        let tile_offset = tile_sums[tile];
        var running = tile_offset + inclusive - sum;
        for (var k = 0u; k < ITEMS_PER_THREAD; k = k + 1u) {
            let i = first + k;
            if i < params.n {
                output[i] = running;
            }
            running = running + values[k];
        }
        if tile == params.num_tiles - 1u && lid == WORKGROUP_SIZE - 1u {
            output[params.n] = tile_offset + inclusive;
        }
        workgroupBarrier();
    }
}
