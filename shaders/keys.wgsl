// Key words and small element-wise helpers of the library kernels (runtime/src/gpu/keys.rs,
// order.rs, group.rs, join.rs, library.rs).
//
// A *key matrix* holds, for `rows` rows, `words` u32 key words per row, word-major:
// word w of row r is at w * rows + r. Word 0 is the most significant. Each key column
// becomes one word (32-bit types) or two (64-bit types: high word first), in bits whose
// unsigned order is the value order and whose equality is value equality, exactly as the
// CPU builtins' keys (runtime/src/cpu/keys.rs): integers with the sign bit flipped, floats
// by the total-order trick (-0.0 as 0.0, every NaN as one NaN after +inf), bool/char/string
// codes as they are (string codes optionally re-coded into a merged dictionary).
//
// Entry points (bindings: params, src, aux, dst):
//   encode        dst[key words of row i] = key bits of element i of src (params.mode);
//                 32-bit integers may be encoded as the f64 they equal, to meet f64 keys
//   order_keys    dst[j] = (word of row aux[j]) - min, or max - word when descending
//   gather        dst[j] = src[aux[j]]
//   scatter_index dst[aux[j]] = j
//   boundaries    dst[j] = 1 if row aux[j] differs from row aux[j-1] in some word (j = 0: 1)
//   gather_rows   dst = the key matrix of rows aux[0..n] of the matrix src
//   widen         dst[2j] = src[j], dst[2j+1] = 0 (u32 to little-endian i64 words), at
//                 element offset params.a
//   pack_bools    dst byte j = (src[j] != params.a), four per word (bool vectors read back)
//   flags         dst[j] = 1 where src[j] != params.a, else 0 (bool vectors on the device)
//   fill          dst[i] = params.a
//   iota          dst[i] = i
//   clamp_to      dst[i] = min(src[i], params.a)
//   cell_ids      dst[params.b + i] = the cell of element i of a flat list whose params.a + 1
//                 offsets are src (the last cell c with src[c] <= i: binary search, so
//                 empty cells are skipped)
//   cell_positions dst[i] = i - src[aux[i]]: element i's position within its cell (src =
//                 the offsets, aux = the cell ids)
//   gather_or     dst[j] = src[aux[j]], or params.a where aux[j] is NONE (0xffffffff)
//   sorted_offsets dst[g] = the first j with src[j] >= g, for g in 0 ..= params.a, of
//                 params.n ascending values below params.a (the cell offsets of rows sorted
//                 by group rank; no atomics, each offset written once)
//
// Template parameters: {{WORKGROUP_SIZE}}.

struct Params {
    n: u32,
    mode: u32,
    a: u32,
    b: u32,
    c: u32,
    d: u32,
    e: u32,
    f: u32,
}

const WORKGROUP_SIZE: u32 = {{WORKGROUP_SIZE}}u;
const SIGN: u32 = 0x80000000u;

// Encodings of `encode` (params.mode); keep in sync with `Encoding` in keys.rs.
const MODE_U32: u32 = 0u;
const MODE_I32: u32 = 1u;
const MODE_I32_WIDE: u32 = 2u;
const MODE_U32_WIDE: u32 = 3u;
const MODE_I64: u32 = 4u;
const MODE_F64: u32 = 5u;
const MODE_F32: u32 = 6u;
const MODE_REMAP: u32 = 7u;
const MODE_I32_AS_F64: u32 = 8u;
const MODE_U32_AS_F64: u32 = 9u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read> aux: array<u32>;
@group(0) @binding(3) var<storage, read_write> dst: array<u32>;

// Order-preserving bits of an f64 given as (lo, hi) words; returns (lo, hi).
fn f64_key(lo_in: u32, hi_in: u32) -> vec2<u32> {
    var lo = lo_in;
    var hi = hi_in;
    let exponent_all_ones = (hi & 0x7ff00000u) == 0x7ff00000u;
    let mantissa = (hi & 0x000fffffu) | lo;
    if (hi & 0x7fffffffu) == 0u && lo == 0u {
        // -0.0 is 0.0.
        hi = 0u;
    } else if exponent_all_ones && mantissa != 0u {
        // Every NaN is f64::NAN (0x7ff8000000000000).
        hi = 0x7ff80000u;
        lo = 0u;
    }
    if (hi & SIGN) != 0u {
        return vec2<u32>(~lo, ~hi);
    }
    return vec2<u32>(lo, hi | SIGN);
}

// The f64 bits (lo, hi) of a 32-bit integer of magnitude `magnitude`, negative when
// `negative`: exact (every 32-bit integer is an f64), in integer arithmetic so the module
// needs no f64 support.
fn integer_f64_bits(magnitude: u32, negative: bool) -> vec2<u32> {
    if magnitude == 0u {
        return vec2<u32>(0u, 0u);
    }
    let top = 31u - countLeadingZeros(magnitude);
    let rest = magnitude & ((1u << top) - 1u);
    var lo = 0u;
    var hi_mantissa = 0u;
    if top > 20u {
        lo = rest << (52u - top);
        hi_mantissa = rest >> (top - 20u);
    } else {
        hi_mantissa = rest << (20u - top);
    }
    let sign = select(0u, SIGN, negative);
    return vec2<u32>(lo, sign | ((1023u + top) << 20u) | hi_mantissa);
}

fn f32_key(x_in: u32) -> u32 {
    var x = x_in;
    if (x & 0x7fffffffu) == 0u {
        x = 0u;
    } else if (x & 0x7f800000u) == 0x7f800000u && (x & 0x007fffffu) != 0u {
        x = 0x7fc00000u;
    }
    if (x & SIGN) != 0u {
        return ~x;
    }
    return x | SIGN;
}

// encode: params.n rows; params.a = offset of the column's first (most significant) word in
// dst; params.b = rows of the matrix (the stride between words).
@compute @workgroup_size(WORKGROUP_SIZE)
fn encode(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    let first = params.a;
    let rows = params.b;
    for (var i = global.x; i < params.n; i = i + stride) {
        switch params.mode {
            case MODE_U32: {
                dst[first + i] = src[i];
            }
            case MODE_I32: {
                dst[first + i] = src[i] ^ SIGN;
            }
            case MODE_I32_WIDE: {
                let x = src[i];
                dst[first + i] = select(0u, 0xffffffffu, (x & SIGN) != 0u) ^ SIGN;
                dst[first + rows + i] = x;
            }
            case MODE_U32_WIDE: {
                dst[first + i] = 0u;
                dst[first + rows + i] = src[i];
            }
            case MODE_I64: {
                dst[first + i] = src[2u * i + 1u] ^ SIGN;
                dst[first + rows + i] = src[2u * i];
            }
            case MODE_F64: {
                let key = f64_key(src[2u * i], src[2u * i + 1u]);
                dst[first + i] = key.y;
                dst[first + rows + i] = key.x;
            }
            case MODE_F32: {
                dst[first + i] = f32_key(src[i]);
            }
            case MODE_REMAP: {
                dst[first + i] = aux[src[i]];
            }
            case MODE_I32_AS_F64: {
                let x = src[i];
                let negative = (x & SIGN) != 0u;
                let bits = integer_f64_bits(select(x, ~x + 1u, negative), negative);
                let key = f64_key(bits.x, bits.y);
                dst[first + i] = key.y;
                dst[first + rows + i] = key.x;
            }
            case MODE_U32_AS_F64: {
                let bits = integer_f64_bits(src[i], false);
                let key = f64_key(bits.x, bits.y);
                dst[first + i] = key.y;
                dst[first + rows + i] = key.x;
            }
            default: {}
        }
    }
}

// order_keys: params.n rows; params.a = offset of the word in src; params.mode = 1 for
// descending; params.b = the word's minimum, params.c its maximum; params.d = 1 when aux is
// the identity (first pass: not read).
@compute @workgroup_size(WORKGROUP_SIZE)
fn order_keys(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var j = global.x; j < params.n; j = j + stride) {
        let row = select(aux[j], j, params.d != 0u);
        let word = src[params.a + row];
        dst[j] = select(word - params.b, params.c - word, params.mode != 0u);
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn gather(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var j = global.x; j < params.n; j = j + stride) {
        dst[j] = src[aux[j]];
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn scatter_index(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var j = global.x; j < params.n; j = j + stride) {
        dst[aux[j]] = j;
    }
}

// boundaries: params.n rows of the matrix src with params.a words; aux = the sorting
// permutation.
@compute @workgroup_size(WORKGROUP_SIZE)
fn boundaries(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    let rows = params.n;
    for (var j = global.x; j < rows; j = j + stride) {
        var differs = j == 0u;
        if !differs {
            let here = aux[j];
            let before = aux[j - 1u];
            for (var w = 0u; w < params.a; w = w + 1u) {
                if src[w * rows + here] != src[w * rows + before] {
                    differs = true;
                    break;
                }
            }
        }
        dst[j] = u32(differs);
    }
}

// gather_rows: params.n rows taken; params.a words; params.b rows of the source matrix.
@compute @workgroup_size(WORKGROUP_SIZE)
fn gather_rows(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var j = global.x; j < params.n; j = j + stride) {
        let row = aux[j];
        for (var w = 0u; w < params.a; w = w + 1u) {
            dst[w * params.n + j] = src[w * params.b + row];
        }
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn widen(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var j = global.x; j < params.n; j = j + stride) {
        dst[2u * (params.a + j)] = src[j];
        dst[2u * (params.a + j) + 1u] = 0u;
    }
}

// pack_bools: params.n flags in, one byte each out (0 or 1), little-endian in words.
@compute @workgroup_size(WORKGROUP_SIZE)
fn pack_bools(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    let words = (params.n + 3u) / 4u;
    for (var k = global.x; k < words; k = k + stride) {
        var packed = 0u;
        for (var b = 0u; b < 4u; b = b + 1u) {
            let j = 4u * k + b;
            if j < params.n && src[j] != params.a {
                packed = packed | (1u << (8u * b));
            }
        }
        dst[k] = packed;
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn flags(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var j = global.x; j < params.n; j = j + stride) {
        dst[j] = select(0u, 1u, src[j] != params.a);
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn fill(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var i = global.x; i < params.n; i = i + stride) {
        dst[i] = params.a;
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn iota(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var i = global.x; i < params.n; i = i + stride) {
        dst[i] = i;
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn clamp_to(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var i = global.x; i < params.n; i = i + stride) {
        dst[i] = min(src[i], params.a);
    }
}

// cell_ids: params.n elements; params.a cells (src holds params.a + 1 offsets, src[0] = 0,
// src[params.a] = params.n, never decreasing); params.b = where the ids start in dst.
@compute @workgroup_size(WORKGROUP_SIZE)
fn cell_ids(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var i = global.x; i < params.n; i = i + stride) {
        // Invariant: src[lo] <= i < src[hi]; the answer is the last c with src[c] <= i.
        var lo = 0u;
        var hi = params.a;
        loop {
            if hi - lo <= 1u {
                break;
            }
            let mid = lo + (hi - lo) / 2u;
            if src[mid] <= i {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        dst[params.b + i] = lo;
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn cell_positions(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var i = global.x; i < params.n; i = i + stride) {
        dst[i] = i - src[aux[i]];
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn gather_or(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var j = global.x; j < params.n; j = j + stride) {
        let k = aux[j];
        if k == 0xffffffffu {
            dst[j] = params.a;
        } else {
            dst[j] = src[k];
        }
    }
}

// sorted_offsets: params.n + 1 invocations; invocation j writes the offsets of the groups
// between the value before position j and the value at j (all groups up to params.a at
// j = params.n).
@compute @workgroup_size(WORKGROUP_SIZE)
fn sorted_offsets(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var j = global.x; j <= params.n; j = j + stride) {
        var first = 0u;
        if j > 0u {
            first = src[j - 1u] + 1u;
        }
        var last = params.a;
        if j < params.n {
            last = src[j];
        }
        for (var g = first; g <= last; g = g + 1u) {
            dst[g] = j;
        }
    }
}
