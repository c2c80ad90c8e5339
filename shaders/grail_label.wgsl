// GRAIL interval labels of a DAG for @reach_index (runtime graph/grail_gpu.rs), by four
// level-synchronous passes instead of a depth-first traversal (after Quer & Calabrese). The
// DAG's vertices are in `order`, level after level (level = longest path from a source, so
// every edge goes to a higher level); one dispatch handles one level, named by the
// dynamic-offset uniform `lvl`.
//
// 1. `tree_parent` (all vertices at once): each vertex keeps as its spanning-tree parent a
//    predecessor one level up (one always exists), the one with the smallest seeded hash.
// 2. `tree_sizes` (bottom-up, level by level): subtree sizes.
// 3. `root_sizes` + scan + `tree_ranks` (top-down): the roots' subtrees take consecutive
//    rank ranges; each vertex hands its children (in a seeded rotation of its edge list)
//    consecutive sub-ranges; post-order rank = start + size, so a subtree's ranks are
//    contiguous and end at its root.
// 4. `low_high` (bottom-up): low = min and high = max of the ranks of all descendants, over
//    every DAG edge, not only tree edges.
// Taking `high` as the largest descendant rank (rather than the own rank, which is the same
// for a depth-first post-order) makes the labels exact for any spanning tree: if x reaches
// y, y's descendants are x's, so [low_y, high_y] ⊆ [low_x, high_x].

struct Level {
    level: u32,
    start: u32,
    end: u32,
    unused: u32,
}

struct Label {
    c: u32,
    k: u32,
    seed: u32,
    unused: u32,
}

const NONE: u32 = 0xffffffffu;
const WG: u32 = 256u;

@group(0) @binding(0) var<uniform> lvl: Level;
@group(0) @binding(1) var<uniform> label: Label;
@group(0) @binding(2) var<storage, read_write> dag_offsets: array<u32>;
@group(0) @binding(3) var<storage, read_write> dag_targets: array<u32>;
@group(0) @binding(4) var<storage, read_write> rdag_offsets: array<u32>;
@group(0) @binding(5) var<storage, read_write> rdag_targets: array<u32>;
@group(0) @binding(6) var<storage, read_write> level: array<u32>;
@group(0) @binding(7) var<storage, read_write> order: array<u32>;
@group(0) @binding(8) var<storage, read_write> parent: array<u32>;
@group(0) @binding(9) var<storage, read_write> size: array<atomic<u32>>;
@group(0) @binding(10) var<storage, read_write> start: array<u32>;
@group(0) @binding(11) var<storage, read_write> labels: array<u32>;

// lowbias32, as `graph::grail::mix` on the host.
fn mix(v: u32) -> u32 {
    var x = v;
    x = x ^ (x >> 16u);
    x = x * 0x7feb352du;
    x = x ^ (x >> 15u);
    x = x * 0x846ca68bu;
    x = x ^ (x >> 16u);
    return x;
}

@compute @workgroup_size(256)
fn tree_parent(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    for (var x = gid.x; x < label.c; x = x + nwg.x * WG) {
        var best = NONE;
        var best_key = NONE;
        let lx = level[x];
        if lx > 0u {
            let salt = mix(label.seed ^ x);
            let end = rdag_offsets[x + 1u];
            for (var e = rdag_offsets[x]; e < end; e = e + 1u) {
                let p = rdag_targets[e];
                if level[p] + 1u == lx {
                    let key = mix(salt ^ p);
                    if key < best_key || (key == best_key && p < best) {
                        best = p;
                        best_key = key;
                    }
                }
            }
        }
        parent[x] = best;
        atomicStore(&size[x], 1u);
    }
}

@compute @workgroup_size(256)
fn tree_sizes(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    for (var i = lvl.start + gid.x; i < lvl.end; i = i + nwg.x * WG) {
        let x = order[i];
        let p = parent[x];
        if p != NONE {
            atomicAdd(&size[p], atomicLoad(&size[x]));
        }
    }
}

// start[x] = subtree size of each root, 0 elsewhere; an exclusive scan turns it into the
// roots' first ranks (minus one).
@compute @workgroup_size(256)
fn root_sizes(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    for (var x = gid.x; x <= label.c; x = x + nwg.x * WG) {
        var s = 0u;
        if x < label.c && level[x] == 0u {
            s = atomicLoad(&size[x]);
        }
        start[x] = s;
    }
}

@compute @workgroup_size(256)
fn tree_ranks(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    for (var i = lvl.start + gid.x; i < lvl.end; i = i + nwg.x * WG) {
        let x = order[i];
        let first = dag_offsets[x];
        let degree = dag_offsets[x + 1u] - first;
        var run = start[x];
        if degree != 0u {
            let rotation = mix(label.seed ^ mix(x)) % degree;
            for (var j = 0u; j < degree; j = j + 1u) {
                var slot = rotation + j;
                if slot >= degree {
                    slot = slot - degree;
                }
                let w = dag_targets[first + slot];
                // Only x writes parent[w] here (x is w's only parent): clearing it skips a
                // repeated edge x -> w.
                if parent[w] == x {
                    parent[w] = NONE;
                    start[w] = run;
                    run = run + atomicLoad(&size[w]);
                }
            }
        }
        let post = start[x] + atomicLoad(&size[x]);
        let at = 2u * (label.k * label.c + x);
        labels[at] = post;
        labels[at + 1u] = post;
    }
}

@compute @workgroup_size(256)
fn low_high(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let base = 2u * label.k * label.c;
    for (var i = lvl.start + gid.x; i < lvl.end; i = i + nwg.x * WG) {
        let x = order[i];
        let at = base + 2u * x;
        var low = labels[at];
        var high = labels[at + 1u];
        let end = dag_offsets[x + 1u];
        for (var e = dag_offsets[x]; e < end; e = e + 1u) {
            let w = base + 2u * dag_targets[e];
            low = min(low, labels[w]);
            high = max(high, labels[w + 1u]);
        }
        labels[at] = low;
        labels[at + 1u] = high;
    }
}
