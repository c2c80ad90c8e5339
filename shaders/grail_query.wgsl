// The label filter of @reachable on a reachability index (runtime graph/grail_gpu.rs): per
// pair, 1 when source and destination share a component, 0 when some label of the source's
// component does not contain the destination's (exact: unreachable), 2 when a search must
// decide. Also writes the pair's components, for that search over the condensed DAG.

struct Params {
    pairs: u32,
    c: u32,
    label_count: u32,
    unused: u32,
}

const WG: u32 = 256u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> component: array<u32>;
@group(0) @binding(2) var<storage, read_write> labels: array<u32>;
@group(0) @binding(3) var<storage, read_write> sources: array<u32>;
@group(0) @binding(4) var<storage, read_write> destinations: array<u32>;
@group(0) @binding(5) var<storage, read_write> verdict: array<u32>;
@group(0) @binding(6) var<storage, read_write> pair_components: array<u32>;

@compute @workgroup_size(256)
fn label_filter(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    for (var i = gid.x; i < params.pairs; i = i + nwg.x * WG) {
        let source = component[sources[i]];
        let destination = component[destinations[i]];
        pair_components[2u * i] = source;
        pair_components[2u * i + 1u] = destination;
        var answer = 2u;
        if source == destination {
            answer = 1u;
        } else {
            for (var k = 0u; k < params.label_count; k = k + 1u) {
                let a = 2u * (k * params.c + source);
                let b = 2u * (k * params.c + destination);
                if labels[b] < labels[a] || labels[a + 1u] < labels[b + 1u] {
                    answer = 0u;
                    break;
                }
            }
        }
        verdict[i] = answer;
    }
}
