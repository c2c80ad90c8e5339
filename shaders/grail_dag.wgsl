// The condensed DAG for @reach_index (runtime graph/grail_gpu.rs): components renumbered
// 0..c (a component is named by a member vertex until then), then the DAG's out- and
// in-edges in CSR form by count, exclusive scan (grail_scan.wgsl) and fill. Edges inside a
// component are dropped; repeated edges between two components are kept (harmless).

struct Params {
    n: u32,
    c: u32,
    unused_0: u32,
    unused_1: u32,
}

const WG: u32 = 256u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> offsets: array<u32>;
@group(0) @binding(2) var<storage, read_write> targets: array<u32>;
@group(0) @binding(3) var<storage, read_write> comp: array<u32>;
@group(0) @binding(4) var<storage, read_write> new_id: array<u32>;
@group(0) @binding(5) var<storage, read_write> dag_offsets: array<atomic<u32>>;
@group(0) @binding(6) var<storage, read_write> dag_targets: array<u32>;
@group(0) @binding(7) var<storage, read_write> rdag_offsets: array<atomic<u32>>;
@group(0) @binding(8) var<storage, read_write> rdag_targets: array<u32>;
@group(0) @binding(9) var<storage, read_write> cursor: array<atomic<u32>>;
@group(0) @binding(10) var<storage, read_write> rcursor: array<atomic<u32>>;

// new_id[v] = 1 for the vertex naming each component; scanned, it numbers the components.
@compute @workgroup_size(256)
fn mark_representatives(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    for (var v = gid.x; v < params.n; v = v + nwg.x * WG) {
        new_id[v] = select(0u, 1u, comp[v] == v);
    }
}

@compute @workgroup_size(256)
fn renumber(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    for (var v = gid.x; v < params.n; v = v + nwg.x * WG) {
        comp[v] = new_id[comp[v]];
    }
}

@compute @workgroup_size(256)
fn dag_count(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    for (var v = gid.x; v < params.n; v = v + nwg.x * WG) {
        let a = comp[v];
        let end = offsets[v + 1u];
        for (var e = offsets[v]; e < end; e = e + 1u) {
            let b = comp[targets[e]];
            if a != b {
                atomicAdd(&dag_offsets[a], 1u);
                atomicAdd(&rdag_offsets[b], 1u);
            }
        }
    }
}

@compute @workgroup_size(256)
fn dag_fill(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    for (var v = gid.x; v < params.n; v = v + nwg.x * WG) {
        let a = comp[v];
        let end = offsets[v + 1u];
        for (var e = offsets[v]; e < end; e = e + 1u) {
            let b = comp[targets[e]];
            if a != b {
                let slot = atomicLoad(&dag_offsets[a]) + atomicAdd(&cursor[a], 1u);
                dag_targets[slot] = b;
                let rslot = atomicLoad(&rdag_offsets[b]) + atomicAdd(&rcursor[b], 1u);
                rdag_targets[rslot] = a;
            }
        }
    }
}
