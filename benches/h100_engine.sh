#!/usr/bin/env bash
# Where warm GPU time goes, per kind of work, on TPC-H SF 1 (issue 11's per-step overhead).
#
# Run from the repository root with the binary at .dev/horsec and the conformance queries at
# .dev/conformance/tpch/queries (the lead's device setup). Prints:
#   1. `horsec bench --time` rows for q2 q3 q9 q18 q21 (median of 5 warm runs), each followed
#      by its breakdown: kernel and library step times with their GPU time (timestamps),
#      host waits, buffers created, dispatches encoded, submissions, pipeline look-ups,
#      read-backs, and the library builtins by time;
#   2. the same rows without --time (the plain bench, no library timestamps), for comparison
#      with earlier figures;
#   3. `horsec run --time` of q9 (cold, one process), for the per-step read-backs.
set -euo pipefail
BIN=${BIN:-.dev/horsec}
QUERIES=${QUERIES:-.dev/conformance/tpch/queries}
DATA=${DATA:-/tmp/sf1}
RUNS=${RUNS:-5}
if [ ! -f "$DATA/lineitem.tbl" ]; then
  "$BIN" gen-tpch --sf 1 --out "$DATA"
fi
files=()
for q in q2 q3 q9 q18 q21; do files+=("$QUERIES/$q.hir"); done
echo "== bench --time (breakdown of the median warm run)"
"$BIN" bench --data "$DATA" --runs "$RUNS" --gpu-only --time "${files[@]}"
echo "== bench (plain)"
"$BIN" bench --data "$DATA" --runs "$RUNS" --gpu-only "${files[@]}"
echo "== run --time q9 (cold)"
"$BIN" run --data "$DATA" --time "$QUERIES/q9.hir" 2>&1 >/dev/null | tail -25
