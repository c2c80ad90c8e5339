// The bitwise OR of all inputs: result[0] |= input[0] | input[1] | ... (result starts at 0).
// The radix sort uses it to skip the passes over key bits that no key has set.
//
// Each invocation ORs its elements (grid-stride), the workgroup combines them in workgroup
// memory, and one invocation per workgroup ORs that into the result: one global atomic per
// workgroup, not per element. OR is order-independent, so the result is deterministic.
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
@group(0) @binding(1) var<storage, read> input: array<u32>;
@group(0) @binding(2) var<storage, read_write> result: array<atomic<u32>>;

var<workgroup> workgroup_bits: atomic<u32>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn or_all(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    var bits = 0u;
    for (var i = global.x; i < params.n; i = i + stride) {
        bits = bits | input[i];
    }
    // Workgroup memory starts zeroed (wgpu zero-initialises it).
    atomicOr(&workgroup_bits, bits);
    workgroupBarrier();
    if lid == 0u {
        atomicOr(&result[0], atomicLoad(&workgroup_bits));
    }
}
