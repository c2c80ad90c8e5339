// `@index_a(x, i, v)`: a copy of x with x[i[j]] = v[j] (or v[0] when v has one element)
// (runtime/src/gpu/library.rs). When several j name one position, the largest j wins, as in
// the CPU builtin's sequential loop (last writer wins):
//   claim   winner[i[j]] = max(j + 1); an index outside 0..len(x) records
//           error[0] = max(u32::MAX - j), so the first bad j can be reported
//   write   out[i[j]] = v[j] where winner[i[j]] == j + 1 (out starts as a copy of x)
// Elements are params.elem_words u32 words (1 or 2); indices are i32 or i64
// (params.wide_index = 1: two words each, little-endian).
//
// Template parameters: {{WORKGROUP_SIZE}}.

struct Params {
    n: u32,
    len_x: u32,
    elem_words: u32,
    wide_index: u32,
    single_value: u32,
    unused_0: u32,
    unused_1: u32,
    unused_2: u32,
}

const WORKGROUP_SIZE: u32 = {{WORKGROUP_SIZE}}u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> index: array<u32>;
@group(0) @binding(2) var<storage, read> values: array<u32>;
@group(0) @binding(3) var<storage, read_write> winner: array<atomic<u32>>;
@group(0) @binding(4) var<storage, read_write> out: array<u32>;
@group(0) @binding(5) var<storage, read_write> error: array<atomic<u32>>;

// The position index j names, or len_x when it is out of range.
fn position(j: u32) -> u32 {
    if params.wide_index != 0u {
        let lo = index[2u * j];
        let hi = index[2u * j + 1u];
        if hi != 0u || lo >= params.len_x {
            return params.len_x;
        }
        return lo;
    }
    let x = index[j];
    // Negative i32 values are huge as u32: out of range too.
    return select(params.len_x, x, x < params.len_x);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn claim(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var j = global.x; j < params.n; j = j + stride) {
        let p = position(j);
        if p == params.len_x {
            atomicMax(&error[0], 0xffffffffu - j);
        } else {
            atomicMax(&winner[p], j + 1u);
        }
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn write(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var j = global.x; j < params.n; j = j + stride) {
        let p = position(j);
        if p != params.len_x && atomicLoad(&winner[p]) == j + 1u {
            let at = select(j, 0u, params.single_value != 0u) * params.elem_words;
            for (var w = 0u; w < params.elem_words; w = w + 1u) {
                out[p * params.elem_words + w] = values[at + w];
            }
        }
    }
}
