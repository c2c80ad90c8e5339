// The minimum and maximum of src[params.a .. params.a + params.n] (one word of a key
// matrix): result[params.at] = min, result[params.at + 1] = max; the caller initialises them
// to (u32::MAX, 0). One dispatch per word, all into one result buffer read back once.
// `@order` reads them back to skip words whose values are all equal and to subtract the
// minimum, so the radix sort only passes over the bits that differ.
//
// Invocations reduce grid-stride, the workgroup combines in workgroup atomics, and one
// invocation per workgroup updates the result: min and max are order-independent, so the
// result is deterministic.
//
// Template parameters: {{WORKGROUP_SIZE}}.

struct Params {
    n: u32,
    a: u32,
    at: u32,
    unused_1: u32,
}

const WORKGROUP_SIZE: u32 = {{WORKGROUP_SIZE}}u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> result: array<atomic<u32>>;

var<workgroup> lowest: atomic<u32>;
var<workgroup> highest: atomic<u32>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn min_max(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    if lid == 0u {
        atomicStore(&lowest, 0xffffffffu);
        atomicStore(&highest, 0u);
    }
    workgroupBarrier();
    let stride = workgroups.x * WORKGROUP_SIZE;
    var lo = 0xffffffffu;
    var hi = 0u;
    for (var i = global.x; i < params.n; i = i + stride) {
        let x = src[params.a + i];
        lo = min(lo, x);
        hi = max(hi, x);
    }
    atomicMin(&lowest, lo);
    atomicMax(&highest, hi);
    workgroupBarrier();
    if lid == 0u {
        atomicMin(&result[params.at], atomicLoad(&lowest));
        atomicMax(&result[params.at + 1u], atomicLoad(&highest));
    }
}
