// One batch of a join's pairs (runtime/src/gpu/relation/join_unique.rs): the pairs are
// numbered probe row by probe row (offsets = the exclusive scan of each probe row's number of
// matches, params.rows + 1 cells; first = each probe row's first matching build row), and a
// batch is the params.n pairs from params.start on, wherever they start and end within a
// probe row's matches.
//
// Entry point:
//   batch_rows   pair start + k (k < n): its probe row i (the last i with offsets[i] <=
//                start + k, by binary search: one invocation per pair, however the matches
//                are spread over the probe rows) in probe_rows[k], its build row
//                first[i] + start + k - offsets[i] in build_rows[k].
//
// Template parameters: {{WORKGROUP_SIZE}}.

struct Params {
    n: u32,
    rows: u32,
    start: u32,
    pad: u32,
}

const WORKGROUP_SIZE: u32 = {{WORKGROUP_SIZE}}u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> offsets: array<u32>;
@group(0) @binding(2) var<storage, read> first: array<u32>;
@group(0) @binding(3) var<storage, read_write> probe_rows: array<u32>;
@group(0) @binding(4) var<storage, read_write> build_rows: array<u32>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn batch_rows(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var k = global.x; k < params.n; k = k + stride) {
        let pair = params.start + k;
        var lo = 0u;
        var hi = params.rows;
        while lo < hi {
            let mid = lo + (hi - lo) / 2u;
            if offsets[mid] <= pair {
                lo = mid + 1u;
            } else {
                hi = mid;
            }
        }
        let i = lo - 1u;
        probe_rows[k] = i;
        build_rows[k] = first[i] + (pair - offsets[i]);
    }
}
