// `@where`: the positions of the true flags, in increasing order.
//
//   output[offsets[i]] = i   for every i with flags[i] != 0
//
// where offsets is the exclusive scan of (flags[i] != 0) (runtime/src/gpu/compact.rs runs
// it first). Invocations loop grid-stride over the flags.
//
// Template parameters: {{WORKGROUP_SIZE}}.

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
@group(0) @binding(3) var<storage, read_write> output: array<u32>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn where_true(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var i = global.x; i < params.n; i = i + stride) {
        if flags[i] != 0u {
            output[offsets[i]] = i;
        }
    }
}
