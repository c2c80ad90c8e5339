// Strongly connected components for @reach_index (runtime graph/grail_gpu.rs).
//
// 1. Trimming by Kahn's algorithm, level by level: `kahn_degrees` counts each live vertex's
//    in-edges from live vertices (self-loops do not count), `kahn_seed` queues the vertices
//    with none, and each `kahn_level` removes the queued level, queueing the vertices whose
//    last in-edge it removed. Every vertex it reaches is a component of its own. Run on the
//    graph, then on its reverse (out-edges), it leaves only vertices that lie on a cycle or
//    between cycles. On a DAG the first run trims everything, and its levels (longest path
//    from a source) are the DAG's levels.
// 2. The rest by colouring (Orzan): every live vertex takes the largest vertex id that
//    reaches it (`color_propagate` until nothing changes); a vertex whose colour is its own
//    id is a root, and the vertices of its colour that reach it (`backward_sweep` over the
//    reverse graph) are its component. Repeated until no vertex is live.
//
// The host reads `state` between levels and rounds; `params` changes per submission.

struct Params {
    n: u32,
    start: u32,
    end: u32,
    level: u32,
}

const TAIL: u32 = 0u;        // queued vertices so far (`order` length)
const CHANGED: u32 = 1u;     // a colouring pass changed something
const LIVE: u32 = 2u;        // vertices left live after a colouring round
const WG: u32 = 256u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> offsets: array<u32>;
@group(0) @binding(2) var<storage, read_write> targets: array<u32>;
@group(0) @binding(3) var<storage, read_write> rev_offsets: array<u32>;
@group(0) @binding(4) var<storage, read_write> rev_targets: array<u32>;
@group(0) @binding(5) var<storage, read_write> live: array<u32>;
@group(0) @binding(6) var<storage, read_write> degree: array<atomic<u32>>;
@group(0) @binding(7) var<storage, read_write> order: array<u32>;
@group(0) @binding(8) var<storage, read_write> state: array<atomic<u32>>;
@group(0) @binding(9) var<storage, read_write> color: array<atomic<u32>>;
@group(0) @binding(10) var<storage, read_write> visited: array<u32>;
@group(0) @binding(11) var<storage, read_write> comp: array<u32>;
@group(0) @binding(12) var<storage, read_write> level: array<u32>;

@compute @workgroup_size(256)
fn kahn_degrees(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    for (var v = gid.x; v < params.n; v = v + nwg.x * WG) {
        if live[v] == 0u {
            continue;
        }
        let end = offsets[v + 1u];
        for (var e = offsets[v]; e < end; e = e + 1u) {
            let w = targets[e];
            if w != v && live[w] != 0u {
                atomicAdd(&degree[w], 1u);
            }
        }
    }
}

@compute @workgroup_size(256)
fn kahn_seed(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    for (var v = gid.x; v < params.n; v = v + nwg.x * WG) {
        if live[v] != 0u && atomicLoad(&degree[v]) == 0u {
            order[atomicAdd(&state[TAIL], 1u)] = v;
            level[v] = 0u;
        }
    }
}

// Removes order[start..end] (level `params.level`).
@compute @workgroup_size(256)
fn kahn_level(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    for (var i = params.start + gid.x; i < params.end; i = i + nwg.x * WG) {
        let v = order[i];
        let end = offsets[v + 1u];
        for (var e = offsets[v]; e < end; e = e + 1u) {
            let w = targets[e];
            if w != v && live[w] != 0u {
                if atomicSub(&degree[w], 1u) == 1u {
                    order[atomicAdd(&state[TAIL], 1u)] = w;
                    level[w] = params.level + 1u;
                }
            }
        }
    }
}

// The trimmed vertices order[0..end] become components of their own.
@compute @workgroup_size(256)
fn kahn_remove(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    for (var i = gid.x; i < params.end; i = i + nwg.x * WG) {
        let v = order[i];
        live[v] = 0u;
        comp[v] = v;
    }
}

@compute @workgroup_size(256)
fn color_init(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    for (var v = gid.x; v < params.n; v = v + nwg.x * WG) {
        if live[v] != 0u {
            atomicStore(&color[v], v);
            visited[v] = 0u;
        }
    }
}

@compute @workgroup_size(256)
fn color_propagate(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    for (var v = gid.x; v < params.n; v = v + nwg.x * WG) {
        if live[v] == 0u {
            continue;
        }
        let c = atomicLoad(&color[v]);
        let end = offsets[v + 1u];
        for (var e = offsets[v]; e < end; e = e + 1u) {
            let w = targets[e];
            if live[w] != 0u && atomicLoad(&color[w]) < c {
                atomicMax(&color[w], c);
                atomicStore(&state[CHANGED], 1u);
            }
        }
    }
}

@compute @workgroup_size(256)
fn root_init(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    for (var v = gid.x; v < params.n; v = v + nwg.x * WG) {
        if live[v] != 0u && atomicLoad(&color[v]) == v {
            visited[v] = 1u;
        }
    }
}

// visited: 0 not reached, 1 reached and not yet swept, 2 swept.
@compute @workgroup_size(256)
fn backward_sweep(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    for (var v = gid.x; v < params.n; v = v + nwg.x * WG) {
        if live[v] == 0u || visited[v] != 1u {
            continue;
        }
        visited[v] = 2u;
        let c = atomicLoad(&color[v]);
        let end = rev_offsets[v + 1u];
        for (var e = rev_offsets[v]; e < end; e = e + 1u) {
            let u = rev_targets[e];
            if live[u] != 0u && visited[u] == 0u && atomicLoad(&color[u]) == c {
                visited[u] = 1u;
                atomicStore(&state[CHANGED], 1u);
            }
        }
    }
}

@compute @workgroup_size(256)
fn color_finish(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    for (var v = gid.x; v < params.n; v = v + nwg.x * WG) {
        if live[v] == 0u {
            continue;
        }
        if visited[v] != 0u {
            comp[v] = atomicLoad(&color[v]);
            live[v] = 0u;
        } else {
            atomicAdd(&state[LIVE], 1u);
        }
    }
}
