// Stream compaction (`@compress`): scatter the selected elements to the positions an
// exclusive scan of the flags gave them (runtime/src/gpu/compact.rs runs the scan first).
//
//   output[offsets[i]] = values[i]   for every i with flags[i] != 0
//
// Selected elements keep their order. Invocations loop grid-stride over the input, so any
// length fits under the 65 535-workgroup dispatch limit.
//
// Template parameters: {{WORKGROUP_SIZE}}, {{T}} (element type of `values` and `output`).

struct Params {
    n: u32,
    unused_0: u32,
    unused_1: u32,
    unused_2: u32,
}

const WORKGROUP_SIZE: u32 = {{WORKGROUP_SIZE}}u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> flags: array<u32>;
@group(0) @binding(2) var<storage, read> offsets: array<u32>;
@group(0) @binding(3) var<storage, read> values: array<{{T}}>;
@group(0) @binding(4) var<storage, read_write> output: array<{{T}}>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn compress(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var i = global.x; i < params.n; i = i + stride) {
        if flags[i] != 0u {
            output[offsets[i]] = values[i];
        }
    }
}
