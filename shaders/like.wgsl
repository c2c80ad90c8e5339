// `@like` on a column's dictionary (runtime/src/gpu/library.rs): one invocation per distinct
// string decides whether it matches the pattern; a gather by the column's codes (keys.wgsl)
// then gives the per-row result.
//   matched[e] = 1 if dictionary string e matches, else 0
// Strings are UTF-8 bytes packed four to a u32 word, little-endian: string e is the bytes
// offsets[e] .. offsets[e+1] of `bytes`; the pattern is pattern_bytes[0 .. params.pattern_len].
// `%` matches any run of characters, `_` exactly one character (a whole UTF-8 sequence),
// every other byte itself; no escapes. The matcher is the CPU builtin's greedy one with a
// single resume point (runtime/src/cpu/strings.rs), over bytes: resuming always moves to the
// next character boundary, so results equal the CPU's character-wise matching.
//
// Template parameters: {{WORKGROUP_SIZE}}.

struct Params {
    n: u32,
    pattern_len: u32,
    unused_0: u32,
    unused_1: u32,
}

const WORKGROUP_SIZE: u32 = {{WORKGROUP_SIZE}}u;
const PERCENT: u32 = 37u;
const UNDERSCORE: u32 = 95u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> bytes: array<u32>;
@group(0) @binding(2) var<storage, read> offsets: array<u32>;
@group(0) @binding(3) var<storage, read> pattern_bytes: array<u32>;
@group(0) @binding(4) var<storage, read_write> matched: array<u32>;

fn text_byte(at: u32) -> u32 {
    return (bytes[at >> 2u] >> (8u * (at & 3u))) & 0xffu;
}

fn pattern_byte(at: u32) -> u32 {
    return (pattern_bytes[at >> 2u] >> (8u * (at & 3u))) & 0xffu;
}

// The position after the character that starts at `at` (skips UTF-8 continuation bytes).
fn next_char(at: u32, end: u32) -> u32 {
    var t = at + 1u;
    while t < end && (text_byte(t) & 0xc0u) == 0x80u {
        t = t + 1u;
    }
    return t;
}

fn like_match(start: u32, end: u32) -> bool {
    let plen = params.pattern_len;
    var t = start;
    var p = 0u;
    var resumable = false;
    var resume_p = 0u;
    var resume_t = 0u;
    while t < end {
        let pc = select(0x100u, pattern_byte(p), p < plen);
        if pc == PERCENT {
            resumable = true;
            resume_p = p + 1u;
            resume_t = t;
            p = p + 1u;
        } else if pc == UNDERSCORE {
            t = next_char(t, end);
            p = p + 1u;
        } else if pc == text_byte(t) {
            t = t + 1u;
            p = p + 1u;
        } else if resumable {
            resume_t = next_char(resume_t, end);
            p = resume_p;
            t = resume_t;
        } else {
            return false;
        }
    }
    while p < plen && pattern_byte(p) == PERCENT {
        p = p + 1u;
    }
    return p == plen;
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn like_entries(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var e = global.x; e < params.n; e = e + stride) {
        matched[e] = u32(like_match(offsets[e], offsets[e + 1u]));
    }
}
