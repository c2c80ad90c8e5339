// Gathers ranges of words of several buffers into one, back to back: a read-back of many
// small values (a query's result columns, counts, status words) copies that one buffer to
// the host instead of each range, each copy command bringing its own pipeline barrier
// (see runtime/src/gpu/gather.rs).
//
// Placeholders: WORKGROUP_SIZE; RANGES, how many ranges; SOURCES, one read-only binding
// `source{k}` per range from binding 2 on; COPIES, one loop per range copying its words.

struct Range {
    // First word of the range in its source, its words, its first word in `gathered`.
    source: u32,
    words: u32,
    at: u32,
    unused: u32,
}

@group(0) @binding(0) var<uniform> ranges: array<Range, {{RANGES}}>;
@group(0) @binding(1) var<storage, read_write> gathered: array<u32>;
{{SOURCES}}

@compute @workgroup_size({{WORKGROUP_SIZE}})
fn gather(
    @builtin(global_invocation_id) global_id: vec3<u32>,
    @builtin(num_workgroups) num_workgroups: vec3<u32>,
) {
    let stride = num_workgroups.x * {{WORKGROUP_SIZE}}u;
{{COPIES}}
}
