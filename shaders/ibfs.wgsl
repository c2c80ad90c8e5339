// IBFS: bit-parallel multi-source BFS for @shortest_path_length / @reachable.
//
// A batch runs up to ω = 32·W searches ("lanes") at once over a CSR graph. Every vertex has
// W u32 words in three status arrays: `seen` (lanes that have reached it), `frontier` (lanes
// that reached it at the previous level) and `next` (lanes reaching it at this level).
// One level is five dispatches, all but `control` indirect, so the host records many levels
// without reading anything back:
//
//   expand_top_down  (queue_len·W threads) OR the frontier bits of each queued vertex into its
//                    out-neighbours' `next` words (atomics), skipping neighbours whose `seen`
//                    word already holds every bit: it saves most atomics in later levels.
//   expand_bottom_up (n·W threads) each unseen (vertex, word) gathers the frontier bits of
//                    its in-neighbours, stopping once it holds every lane it lacks. Used when
//                    the frontier's out-edges exceed 1/BOTTOM_UP_SHARE of all edges.
//   identify         (n threads) keeps the new bits (next & ~seen) as the new frontier, marks
//                    them seen, clears `next`, and appends vertices with new bits to the
//                    joint frontier queue (one global atomic per workgroup).
//   settle           (target threads) records the level for each (destination, lane) whose
//                    bit just appeared in `seen`, and masks a lane out of `active` once all of
//                    its destinations are found: finished searches stop costing work.
//   control          (1 thread) moves the queue length, picks the direction of the next level
//                    from the frontier's edge count, and writes the indirect dispatch sizes;
//                    when the queue is empty or no destination is pending it writes zeros,
//                    so the levels recorded after the end cost nothing. The host reads the
//                    `done` flag only every few levels.
//
// One of the two expand kernels gets zero workgroups each level. `seed` starts a batch.
//
// A batch with no destinations at all runs until every lane's search has ended: `seen` then
// holds each lane's reach set (the hub reach sets of a reachability index's queries).
//
// On the condensed DAG of a reachability index (@reachable on @reach_index), `labels` holds
// the GRAIL labels and `lane_destinations` the one destination of each lane (or NONE when a
// lane has several): before `seed`, `exclude` marks a lane's bit as already seen at every
// vertex whose labels do not contain the lane's destination's (such a vertex cannot reach
// it), so the search never enters it: top-down levels do not offer it the bit, and
// bottom-up levels do not look for it there. Without this, a bottom-up level would scan
// every in-edge of every vertex for the bits of lanes that can never arrive. The
// destination itself is never excluded (its labels contain its own), so the answers are
// those of the unpruned search.
//
// Template parameters: {{WORKGROUP_SIZE}}.

struct Params {
    // Vertices n and edges m of the graph.
    n: u32,
    m: u32,
    // u32 words per vertex in the status arrays (ω = 32·W).
    words: u32,
    // Largest workgroup count of one dispatch dimension.
    max_workgroups: u32,
    // This batch: lanes (distinct sources) and their slice of `sources`.
    lane_count: u32,
    source_offset: u32,
    // This batch's slice of `targets` / `results`.
    target_count: u32,
    target_offset: u32,
    // 0: automatic direction, 1: always top-down, 2: always bottom-up.
    direction: u32,
    // A level goes bottom-up when frontier edges · share > m.
    bottom_up_share: u32,
    // GRAIL labels per vertex (0: no pruning) and the vertex count they are laid out by.
    label_count: u32,
    label_stride: u32,
}

// Slots of `control`.
const CUR_LEN: u32 = 0u;      // vertices in the queue the current level expands
const NEXT_LEN: u32 = 1u;     // vertices appended to the next queue so far
const NEXT_EDGES: u32 = 2u;   // out-edges of the vertices in the next queue
const LEVEL: u32 = 3u;        // the level being run (1 = the sources' neighbours)
const PENDING: u32 = 4u;      // destinations of this batch not found yet
const DONE: u32 = 5u;         // 1 once the batch has finished
const BOTTOM_UP_LEVELS: u32 = 6u; // levels that ran bottom-up (statistics)

// Indirect arguments (x, y, z) in `args`, in u32 slots.
const ARGS_TOP_DOWN: u32 = 0u;
const ARGS_BOTTOM_UP: u32 = 4u;
const ARGS_IDENTIFY: u32 = 8u;
const ARGS_SETTLE: u32 = 12u;

const WORKGROUP_SIZE: u32 = {{WORKGROUP_SIZE}}u;

struct Target {
    vertex: u32,
    lane: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> offsets: array<u32>;
@group(0) @binding(2) var<storage, read> neighbours: array<u32>;
@group(0) @binding(3) var<storage, read> reverse_offsets: array<u32>;
@group(0) @binding(4) var<storage, read> reverse_neighbours: array<u32>;
@group(0) @binding(5) var<storage, read_write> seen: array<u32>;
@group(0) @binding(6) var<storage, read_write> frontier: array<u32>;
@group(0) @binding(7) var<storage, read_write> next_bits: array<atomic<u32>>;
@group(0) @binding(8) var<storage, read> queue_in: array<u32>;
@group(0) @binding(9) var<storage, read_write> queue_out: array<u32>;
@group(0) @binding(10) var<storage, read_write> control: array<atomic<u32>>;
@group(0) @binding(11) var<storage, read> sources: array<u32>;
@group(0) @binding(12) var<storage, read> targets: array<Target>;
@group(0) @binding(13) var<storage, read_write> results: array<i32>;
@group(0) @binding(14) var<storage, read_write> lane_pending: array<atomic<u32>>;
@group(0) @binding(15) var<storage, read_write> active_lanes: array<atomic<u32>>;
@group(0) @binding(16) var<storage, read> labels: array<u32>;
@group(0) @binding(17) var<storage, read> lane_destinations: array<u32>;
// Only `control` binds the indirect arguments: a buffer cannot be a storage binding and the
// indirect buffer of the same dispatch.
@group(1) @binding(0) var<storage, read_write> args: array<u32>;

var<workgroup> group_count: atomic<u32>;
var<workgroup> group_edges: atomic<u32>;
var<workgroup> group_base: u32;

// Sets the sources' bits, queues the sources (into the queue level 1 expands), counts the
// destinations of every lane and activates the lanes. Status arrays, `active_lanes`,
// `lane_pending` and `control` are zero when it runs.
@compute @workgroup_size(WORKGROUP_SIZE)
fn seed(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    let total = max(params.lane_count, params.target_count);
    for (var i = global.x; i < total; i = i + stride) {
        if i < params.lane_count {
            let v = sources[params.source_offset + i];
            let bit = 1u << (i % 32u);
            // Lanes have distinct sources, so no two lanes write the same word.
            let word = v * params.words + i / 32u;
            seen[word] = seen[word] | bit;
            frontier[word] = frontier[word] | bit;
            atomicOr(&active_lanes[i / 32u], bit);
            queue_out[i] = v;
            atomicAdd(&control[NEXT_EDGES], offsets[v + 1u] - offsets[v]);
        }
        if i < params.target_count {
            let goal = targets[params.target_offset + i];
            atomicAdd(&lane_pending[goal.lane], 1u);
        }
    }
    if global.x == 0u {
        atomicStore(&control[NEXT_LEN], params.lane_count);
        atomicStore(&control[PENDING], params.target_count);
    }
}

const NO_DESTINATION: u32 = 0xffffffffu;

// Most GRAIL labels per vertex (graph::grail::MAX_LABELS).
const MAX_LABELS: u32 = 8u;

// Thread (vertex v, word w): the `seen` word of v for lanes 32·w … 32·w + 31 becomes the
// bits of the lanes whose destinations v cannot reach (some label of v does not contain the
// destination's). Runs before `seed` on a cleared `seen`, only with labels.
@compute @workgroup_size(WORKGROUP_SIZE)
fn exclude(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    let words = params.words;
    let total = params.n * words;
    let label_count = min(params.label_count, MAX_LABELS);
    for (var i = global.x; i < total; i = i + stride) {
        let w = i % words;
        let v = i / words;
        if 32u * w >= params.lane_count {
            continue;
        }
        var own: array<vec2<u32>, MAX_LABELS>;
        for (var k = 0u; k < label_count; k = k + 1u) {
            let a = 2u * (k * params.label_stride + v);
            own[k] = vec2<u32>(labels[a], labels[a + 1u]);
        }
        let lanes = min(32u, params.lane_count - 32u * w);
        var excluded = 0u;
        for (var b = 0u; b < lanes; b = b + 1u) {
            let t = lane_destinations[params.source_offset + 32u * w + b];
            if t == NO_DESTINATION {
                continue;
            }
            for (var k = 0u; k < label_count; k = k + 1u) {
                let at = 2u * (k * params.label_stride + t);
                if labels[at] < own[k].x || own[k].y < labels[at + 1u] {
                    excluded = excluded | (1u << b);
                    break;
                }
            }
        }
        seen[i] = excluded;
    }
}

fn workgroups_for(threads: u32) -> u32 {
    return min((threads + WORKGROUP_SIZE - 1u) / WORKGROUP_SIZE, params.max_workgroups);
}

fn set_args(slot: u32, x: u32) {
    args[slot] = x;
    args[slot + 1u] = 1u;
    args[slot + 2u] = 1u;
}

// Between levels: the queue just filled becomes the one to expand; decides the next level.
@compute @workgroup_size(1)
fn control_level() {
    let queued = atomicLoad(&control[NEXT_LEN]);
    let edges = atomicLoad(&control[NEXT_EDGES]);
    atomicStore(&control[CUR_LEN], queued);
    atomicStore(&control[NEXT_LEN], 0u);
    atomicStore(&control[NEXT_EDGES], 0u);
    // A batch without destinations (reach sets: every vertex each lane reaches) runs until
    // its frontier is empty.
    let finished = atomicLoad(&control[DONE]) != 0u || queued == 0u
        || (params.target_count != 0u && atomicLoad(&control[PENDING]) == 0u);
    if finished {
        atomicStore(&control[DONE], 1u);
        set_args(ARGS_TOP_DOWN, 0u);
        set_args(ARGS_BOTTOM_UP, 0u);
        set_args(ARGS_IDENTIFY, 0u);
        set_args(ARGS_SETTLE, 0u);
        return;
    }
    atomicAdd(&control[LEVEL], 1u);
    // edges > m / share rather than edges · share > m: no overflow (m < 2^31).
    var bottom_up = false;
    if params.direction == 2u {
        bottom_up = true;
    } else if params.direction == 0u {
        bottom_up = edges > params.m / params.bottom_up_share;
    }
    let status_threads = params.n * params.words;
    if bottom_up {
        atomicAdd(&control[BOTTOM_UP_LEVELS], 1u);
        set_args(ARGS_TOP_DOWN, 0u);
        set_args(ARGS_BOTTOM_UP, workgroups_for(status_threads));
    } else {
        set_args(ARGS_TOP_DOWN, workgroups_for(queued * params.words));
        set_args(ARGS_BOTTOM_UP, 0u);
    }
    set_args(ARGS_IDENTIFY, workgroups_for(params.n));
    set_args(ARGS_SETTLE, workgroups_for(params.target_count));
}

// Thread (queue entry e, word w): pushes the active_lanes bits of word w of the e-th queued vertex
// along its out-edges. Adjacent threads handle adjacent words of one vertex, so loads and
// atomics coalesce.
@compute @workgroup_size(WORKGROUP_SIZE)
fn expand_top_down(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    let words = params.words;
    let total = atomicLoad(&control[CUR_LEN]) * words;
    for (var i = global.x; i < total; i = i + stride) {
        let w = i % words;
        let v = queue_in[i / words];
        let bits = frontier[v * words + w] & atomicLoad(&active_lanes[w]);
        if bits == 0u {
            continue;
        }
        let end = offsets[v + 1u];
        for (var e = offsets[v]; e < end; e = e + 1u) {
            let word = neighbours[e] * words + w;
            if (bits & ~seen[word]) != 0u {
                atomicOr(&next_bits[word], bits);
            }
        }
    }
}

// Thread (vertex u, word w): gathers into `next_bits` the frontier bits of u's in-neighbours for
// the active_lanes lanes of word w that have not reached u yet.
@compute @workgroup_size(WORKGROUP_SIZE)
fn expand_bottom_up(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    let words = params.words;
    let total = params.n * words;
    for (var i = global.x; i < total; i = i + stride) {
        let w = i % words;
        let u = i / words;
        let missing = atomicLoad(&active_lanes[w]) & ~seen[i];
        if missing == 0u {
            continue;
        }
        var gathered = 0u;
        let end = reverse_offsets[u + 1u];
        for (var e = reverse_offsets[u]; e < end; e = e + 1u) {
            gathered = gathered | (frontier[reverse_neighbours[e] * words + w] & missing);
            if gathered == missing {
                break;
            }
        }
        if gathered != 0u {
            atomicOr(&next_bits[i], gathered);
        }
    }
}

// Thread per vertex: turns `next_bits` into the new frontier and queues the vertex if it got any
// new bit. The loop bound depends only on uniforms and workgroup ids, so the barriers are in
// uniform control flow.
@compute @workgroup_size(WORKGROUP_SIZE)
fn identify(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let words = params.words;
    for (var base = workgroup.x * WORKGROUP_SIZE; base < params.n;
         base = base + workgroups.x * WORKGROUP_SIZE) {
        if lid == 0u {
            atomicStore(&group_count, 0u);
            atomicStore(&group_edges, 0u);
        }
        workgroupBarrier();
        let v = base + lid;
        var gained = 0u;
        var slot = 0u;
        if v < params.n {
            for (var w = 0u; w < words; w = w + 1u) {
                let word = v * words + w;
                let reached = atomicLoad(&next_bits[word]);
                var fresh = 0u;
                if reached != 0u {
                    atomicStore(&next_bits[word], 0u);
                    fresh = reached & ~seen[word];
                    seen[word] = seen[word] | fresh;
                }
                // Write only changes: most words stay zero level after level.
                if frontier[word] != fresh {
                    frontier[word] = fresh;
                }
                gained = gained | fresh;
            }
            if gained != 0u {
                slot = atomicAdd(&group_count, 1u);
                atomicAdd(&group_edges, offsets[v + 1u] - offsets[v]);
            }
        }
        workgroupBarrier();
        if lid == 0u {
            let count = atomicLoad(&group_count);
            if count != 0u {
                group_base = atomicAdd(&control[NEXT_LEN], count);
                atomicAdd(&control[NEXT_EDGES], atomicLoad(&group_edges));
            }
        }
        workgroupBarrier();
        if gained != 0u {
            queue_out[group_base + slot] = v;
        }
    }
}

// Thread per destination of the batch: the first level its lane's bit is seen is its length.
@compute @workgroup_size(WORKGROUP_SIZE)
fn settle(
    @builtin(global_invocation_id) global: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    let stride = workgroups.x * WORKGROUP_SIZE;
    let level = i32(atomicLoad(&control[LEVEL]));
    for (var i = global.x; i < params.target_count; i = i + stride) {
        let t = params.target_offset + i;
        if results[t] >= 0 {
            continue;
        }
        let goal = targets[t];
        let bit = 1u << (goal.lane % 32u);
        if (seen[goal.vertex * params.words + goal.lane / 32u] & bit) == 0u {
            continue;
        }
        results[t] = level;
        atomicSub(&control[PENDING], 1u);
        if atomicSub(&lane_pending[goal.lane], 1u) == 1u {
            atomicAnd(&active_lanes[goal.lane / 32u], ~bit);
        }
    }
}
