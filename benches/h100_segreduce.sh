#!/usr/bin/env bash
# Per-cell reductions and @group on a real GPU: TPC-H SF 1, warm GPU medians of q1 q3 q13 q18
# q21, then one `--time` run each of q1 and q21 (where their time goes), once with the
# strategy the engine picks and once with each strategy forced (HORSEC_CELL_STRATEGY).
#
# Run from the repository root with the release binary at .dev/horsec, after the loader setup:
#   bash benches/h100_segreduce.sh
# Lavapipe timings say nothing about GPU speed: run this on the GPU that matters.
set -euo pipefail

horsec=${HORSEC:-.dev/horsec}
queries=${QUERIES:-.dev/conformance/tpch/queries}
data=${DATA:-/tmp/sf1}

if [ ! -f "$data/lineitem.tbl" ]; then
    "$horsec" gen-tpch --sf 1 --out "$data"
fi

echo "== horsec bench, SF 1, warm GPU runs (strategy chosen from the geometry)"
"$horsec" bench --data "$data" --runs 5 --gpu-only \
    "$queries/q1.hir" "$queries/q3.hir" "$queries/q13.hir" "$queries/q18.hir" "$queries/q21.hir"

for q in q1 q21; do
    echo "== horsec run $q --time (strategy chosen from the geometry)"
    "$horsec" run "$queries/$q.hir" --data "$data" --time >/dev/null
done

# Each strategy forced, to confirm the choice: q1 (4 cells of ~1.5 M rows) and q21 (~1.5 M
# cells of a few rows) on the per-cell kernels of every strategy.
for strategy in thread workgroup split; do
    echo "== HORSEC_CELL_STRATEGY=$strategy horsec bench q1 q21"
    HORSEC_CELL_STRATEGY=$strategy "$horsec" bench --data "$data" --runs 5 --gpu-only \
        "$queries/q1.hir" "$queries/q21.hir"
done
