// Stable LSD radix sort of u32 keys carrying a u32 payload (the permutation), RADIX_BITS bits
// per pass. One pass (driven by runtime/src/gpu/sort.rs):
//   1. histogram: per tile, how many keys have each digit; stored digit-major,
//      tile_counts[digit * num_tiles + tile], so that
//   2. an exclusive scan of tile_counts (scan.wgsl) gives every (digit, tile) its first
//      output position: all smaller digits first, then the same digit in earlier tiles;
//   3. scatter: each key goes to its (digit, tile) offset plus its rank among the keys of the
//      same digit before it in the tile. Ranks follow input order, so the pass is stable,
//      and so the whole sort is.
// Workgroups loop over tiles (grid-stride). On the first pass (params.first_pass = 1) the
// payload is the input index itself, so the result is the sorting permutation.
//
// Template parameters: {{WORKGROUP_SIZE}}, {{ITEMS_PER_THREAD}}.

struct Params {
    n: u32,
    num_tiles: u32,
    shift: u32,
    first_pass: u32,
}

const WORKGROUP_SIZE: u32 = {{WORKGROUP_SIZE}}u;
const ITEMS_PER_THREAD: u32 = {{ITEMS_PER_THREAD}}u;
const TILE: u32 = WORKGROUP_SIZE * ITEMS_PER_THREAD;
const RADIX_BITS: u32 = 4u;
const RADIX: u32 = 16u;
// Per-invocation digit counts are packed two to a word, 16 bits each: a tile holds fewer
// than 65 536 keys, so a half never carries into the other.
const PACKED_WORDS: u32 = RADIX / 2u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> keys_in: array<u32>;
@group(0) @binding(2) var<storage, read> payload_in: array<u32>;
// histogram writes the per-tile digit counts; scatter reads their exclusive scan.
@group(0) @binding(3) var<storage, read_write> tile_counts: array<u32>;
@group(0) @binding(4) var<storage, read_write> keys_out: array<u32>;
@group(0) @binding(5) var<storage, read_write> payload_out: array<u32>;

var<workgroup> digit_counts: array<atomic<u32>, RADIX>;
var<workgroup> packed_prefix: array<array<u32, WORKGROUP_SIZE>, PACKED_WORDS>;

fn digit_of(key: u32) -> u32 {
    return (key >> params.shift) & (RADIX - 1u);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn histogram(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    for (var tile = workgroup.x; tile < params.num_tiles; tile = tile + workgroups.x) {
        if lid < RADIX {
            atomicStore(&digit_counts[lid], 0u);
        }
        workgroupBarrier();
        let first = tile * TILE + lid * ITEMS_PER_THREAD;
        for (var k = 0u; k < ITEMS_PER_THREAD; k = k + 1u) {
            let i = first + k;
            if i < params.n {
                atomicAdd(&digit_counts[digit_of(keys_in[i])], 1u);
            }
        }
        workgroupBarrier();
        if lid < RADIX {
            tile_counts[lid * params.num_tiles + tile] = atomicLoad(&digit_counts[lid]);
        }
        workgroupBarrier();
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn scatter(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    for (var tile = workgroup.x; tile < params.num_tiles; tile = tile + workgroups.x) {
        let first = tile * TILE + lid * ITEMS_PER_THREAD;
        // This invocation's digit counts, packed.
        var own: array<u32, PACKED_WORDS>;
        for (var k = 0u; k < ITEMS_PER_THREAD; k = k + 1u) {
            let i = first + k;
            if i < params.n {
                let digit = digit_of(keys_in[i]);
                own[digit / 2u] = own[digit / 2u] + (1u << (16u * (digit % 2u)));
            }
        }
        // Inclusive scan of the packed counts across the workgroup (Hillis-Steele).
        for (var w = 0u; w < PACKED_WORDS; w = w + 1u) {
            packed_prefix[w][lid] = own[w];
        }
        workgroupBarrier();
        for (var offset = 1u; offset < WORKGROUP_SIZE; offset = offset * 2u) {
            var addend: array<u32, PACKED_WORDS>;
            if lid >= offset {
                for (var w = 0u; w < PACKED_WORDS; w = w + 1u) {
                    addend[w] = packed_prefix[w][lid - offset];
                }
            }
            workgroupBarrier();
            for (var w = 0u; w < PACKED_WORDS; w = w + 1u) {
                packed_prefix[w][lid] = packed_prefix[w][lid] + addend[w];
            }
            workgroupBarrier();
        }
        // Exclusive prefix: keys of each digit in earlier invocations of this tile.
        var rank: array<u32, PACKED_WORDS>;
        for (var w = 0u; w < PACKED_WORDS; w = w + 1u) {
            rank[w] = packed_prefix[w][lid] - own[w];
        }
        for (var k = 0u; k < ITEMS_PER_THREAD; k = k + 1u) {
            let i = first + k;
            if i < params.n {
                let key = keys_in[i];
                let digit = digit_of(key);
                let half = 16u * (digit % 2u);
                let local_rank = (rank[digit / 2u] >> half) & 0xffffu;
                let destination = tile_counts[digit * params.num_tiles + tile] + local_rank;
                keys_out[destination] = key;
                payload_out[destination] = select(payload_in[i], i, params.first_pass != 0u);
                rank[digit / 2u] = rank[digit / 2u] + (1u << half);
            }
        }
        // packed_prefix is rewritten by the next tile.
        workgroupBarrier();
    }
}
