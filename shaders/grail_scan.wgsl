// Exclusive prefix sum of u32 in place, in blocks of 256 (reduce-then-scan, portable: no
// inter-workgroup waiting). `scan_blocks` scans each block and writes its total to `sums`;
// the host scans `sums` the same way (recursively) and `add_sums` adds them back.

struct Params {
    len: u32,
    unused_0: u32,
    unused_1: u32,
    unused_2: u32,
}

const WG: u32 = 256u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> data: array<u32>;
@group(0) @binding(2) var<storage, read_write> sums: array<u32>;

var<workgroup> tile: array<u32, 256>;

@compute @workgroup_size(256)
fn scan_blocks(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let blocks = (params.len + WG - 1u) / WG;
    for (var b = wid.x; b < blocks; b = b + nwg.x) {
        let i = b * WG + lid;
        var x = 0u;
        if i < params.len {
            x = data[i];
        }
        tile[lid] = x;
        workgroupBarrier();
        for (var offset = 1u; offset < WG; offset = offset * 2u) {
            var t = 0u;
            if lid >= offset {
                t = tile[lid - offset];
            }
            workgroupBarrier();
            tile[lid] = tile[lid] + t;
            workgroupBarrier();
        }
        let inclusive = tile[lid];
        if i < params.len {
            data[i] = inclusive - x;
        }
        if lid == WG - 1u {
            sums[b] = inclusive;
        }
        workgroupBarrier();
    }
}

@compute @workgroup_size(256)
fn add_sums(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    for (var i = gid.x; i < params.len; i = i + nwg.x * WG) {
        data[i] = data[i] + sums[i / WG];
    }
}
