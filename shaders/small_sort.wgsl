// `@order` without the radix sort (runtime/src/gpu/order.rs): the stable sorting permutation
// of a whole key matrix with nothing read back and few dispatches. The multi-pass radix sort
// costs a min/max read-back and some ten dispatches per key word, which on a small input (a
// query's result after filters and aggregation) is all overhead.
//
// sort_chunks: each workgroup sorts a chunk of CAPACITY rows (rows chunk * CAPACITY ..) in
// workgroup memory: a bitonic sort of the row indexes, padded with NONE to a power of two.
// At most CAPACITY rows take this one dispatch. Beside each index the workgroup keeps its
// row's first compared word (direction applied), which decides most comparisons without
// reading the key matrix.
// merge_runs: one pass merging sorted runs of `params.width` rows pairwise (`input` to
// `output`): each row finds its place by a binary search in the other run, so a pass is one
// dispatch; log2(rows / CAPACITY) passes sort everything.
//
// Rows compare by their key words column by column, most significant word first, a
// descending column's words inverted; equal keys compare by row index, so the order is
// total and the result is the stable order the CPU gives.
//
// params.rows: rows of the key matrix (its words are word-major: word w of row r at
// words[w * rows + r]); params.num_columns: key columns, described by
// columns[3c] = first word, columns[3c + 1] = words, columns[3c + 2] = 1 when descending.
//
// Template parameters: {{WORKGROUP_SIZE}}, {{CAPACITY}} (a power of two).

struct Params {
    rows: u32,
    num_columns: u32,
    // merge_runs: the length of the sorted runs merged pairwise.
    width: u32,
    unused_1: u32,
}

const WORKGROUP_SIZE: u32 = {{WORKGROUP_SIZE}}u;
const CAPACITY: u32 = {{CAPACITY}}u;
const NONE: u32 = 0xffffffffu;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> words: array<u32>;
@group(0) @binding(2) var<storage, read> columns: array<u32>;
@group(0) @binding(3) var<storage, read_write> output: array<u32>;
@group(0) @binding(4) var<storage, read> input: array<u32>;

var<workgroup> row_at: array<u32, CAPACITY>;
var<workgroup> lead_at: array<u32, CAPACITY>;

// Word `w` of row `r` as the sort compares it: inverted in a descending column.
fn ordered_word(w: u32, r: u32, descending: bool) -> u32 {
    let word = words[w * params.rows + r];
    return select(word, ~word, descending);
}

// Whether row x sorts strictly before row y, by all key words, then by row.
fn row_before(x: u32, y: u32) -> bool {
    for (var c = 0u; c < params.num_columns; c = c + 1u) {
        let first = columns[3u * c];
        let count = columns[3u * c + 1u];
        let descending = columns[3u * c + 2u] != 0u;
        for (var w = first; w < first + count; w = w + 1u) {
            let a = ordered_word(w, x, descending);
            let b = ordered_word(w, y, descending);
            if a != b {
                return a < b;
            }
        }
    }
    return x < y;
}

// [`row_before`] with the leading words at hand, NONE (the padding) after every row.
fn before(x: u32, lead_x: u32, y: u32, lead_y: u32) -> bool {
    if x == NONE {
        return false;
    }
    if y == NONE {
        return true;
    }
    if lead_x != lead_y {
        return lead_x < lead_y;
    }
    return row_before(x, y);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn sort_chunks(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    var lead_word = 0u;
    var lead_descending = false;
    var has_lead = false;
    if params.num_columns > 0u && columns[1u] > 0u {
        lead_word = columns[0u];
        lead_descending = columns[2u] != 0u;
        has_lead = true;
    }
    let chunks = (params.rows + CAPACITY - 1u) / CAPACITY;
    for (var chunk = workgroup.x; chunk < chunks; chunk = chunk + workgroups.x) {
        let base = chunk * CAPACITY;
        let count = min(CAPACITY, params.rows - base);
        var padded = 1u;
        while padded < count {
            padded = padded << 1u;
        }
        for (var i = lid; i < padded; i = i + WORKGROUP_SIZE) {
            if i < count {
                let row = base + i;
                row_at[i] = row;
                lead_at[i] = select(0u, ordered_word(lead_word, row, lead_descending), has_lead);
            } else {
                row_at[i] = NONE;
                lead_at[i] = NONE;
            }
        }
        workgroupBarrier();
        // Bitonic network: blocks of k, compare-exchange at distance j. The pair (i, i ^ j)
        // is handled by the invocation of its lower index only, so no two touch one slot.
        for (var k = 2u; k <= padded; k = k << 1u) {
            for (var j = k >> 1u; j > 0u; j = j >> 1u) {
                for (var i = lid; i < padded; i = i + WORKGROUP_SIZE) {
                    let l = i ^ j;
                    if l > i {
                        let x = row_at[i];
                        let y = row_at[l];
                        let lead_x = lead_at[i];
                        let lead_y = lead_at[l];
                        // Ascending blocks put the earlier row first, descending ones last.
                        let ascending = (i & k) == 0u;
                        let swap = select(
                            before(x, lead_x, y, lead_y),
                            before(y, lead_y, x, lead_x),
                            ascending,
                        );
                        if swap {
                            row_at[i] = y;
                            row_at[l] = x;
                            lead_at[i] = lead_y;
                            lead_at[l] = lead_x;
                        }
                    }
                }
                workgroupBarrier();
            }
        }
        for (var i = lid; i < count; i = i + WORKGROUP_SIZE) {
            output[base + i] = row_at[i];
        }
        // The next chunk reuses the workgroup's memory.
        workgroupBarrier();
    }
}

// How many rows of the sorted run input[start .. end] sort before row x (another run's
// row: no row of the run equals it, the order being total).
fn rank_in(start: u32, end: u32, x: u32) -> u32 {
    var lo = start;
    var hi = end;
    while lo < hi {
        let mid = lo + (hi - lo) / 2u;
        if row_before(input[mid], x) {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    return lo - start;
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn merge_runs(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    let width = params.width;
    for (var i = global.x; i < params.rows; i = i + stride) {
        let run = i / width;
        let left = (run & ~1u) * width;
        let middle = min(left + width, params.rows);
        let right_end = min(left + 2u * width, params.rows);
        let x = input[i];
        if i < middle {
            // A left row: after its own run's earlier rows and the right rows before it.
            output[i + rank_in(middle, right_end, x)] = x;
        } else {
            output[left + (i - middle) + rank_in(left, middle, x)] = x;
        }
    }
}
