// {{NAME}}: the first position in [lo_in, hi_in) where `{{BEFORE}}` is false, for a
// condition on `mid` that holds on a prefix of the range and fails after it; hi_in when it
// holds everywhere. Lower and upper bounds, the load-balancing search over a scan and the
// merge path's diagonal are all this loop: a kernel module lists its searches (name, extra
// parameters, condition) and runtime/src/gpu/template.rs::partition_points renders one copy
// of this function per search into the module's SEARCHES placeholder.
fn {{NAME}}(lo_in: u32, hi_in: u32{{PARAMS}}) -> u32 {
    var lo = lo_in;
    var hi = hi_in;
    while lo < hi {
        let mid = lo + (hi - lo) / 2u;
        if {{BEFORE}} {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    return lo;
}
