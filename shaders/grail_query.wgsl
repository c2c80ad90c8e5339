// The filter of @reachable on a reachability index (runtime graph/grail_gpu): per pair, 1
// when it is settled reachable and 0 unreachable by its components and labels, 3 reachable
// and 4 unreachable by the hub reach sets, 2 when a search must decide.
// Also writes the pair's components, for that search over the condensed DAG.
//
// In this order, on the pair's components (a, b):
// - a = b: reachable (one strongly connected component);
// - some label of a does not contain b's: unreachable (exact, see graph/grail.rs);
// - hub reach sets (when `hub_words` > 0): for hubs h_j, `reached_by[x]` has bit j when h_j
//   reaches x, `reaches[x]` when x reaches h_j (each word-interleaved, `hub_words` per x).
//   a → h_j → b for some j proves a reaches b. h_j → a but not h_j → b, or b → h_j but not
//   a → h_j, proves it cannot (else h_j → a → b, or a → b → h_j).

struct Params {
    pairs: u32,
    c: u32,
    label_count: u32,
    hub_words: u32,
}

const WG: u32 = 256u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> component: array<u32>;
@group(0) @binding(2) var<storage, read_write> labels: array<u32>;
@group(0) @binding(3) var<storage, read_write> sources: array<u32>;
@group(0) @binding(4) var<storage, read_write> destinations: array<u32>;
@group(0) @binding(5) var<storage, read_write> verdict: array<u32>;
@group(0) @binding(6) var<storage, read_write> pair_components: array<u32>;
@group(0) @binding(7) var<storage, read_write> reached_by: array<u32>;
@group(0) @binding(8) var<storage, read_write> reaches: array<u32>;

fn hub_verdict(a: u32, b: u32) -> u32 {
    var answer = 2u;
    for (var w = 0u; w < params.hub_words; w = w + 1u) {
        let ia = a * params.hub_words + w;
        let ib = b * params.hub_words + w;
        if (reaches[ia] & reached_by[ib]) != 0u {
            return 3u;
        }
        if (reached_by[ia] & ~reached_by[ib]) != 0u || (reaches[ib] & ~reaches[ia]) != 0u {
            answer = 4u;
        }
    }
    return answer;
}

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
            if answer == 2u {
                answer = hub_verdict(source, destination);
            }
        }
        verdict[i] = answer;
    }
}
