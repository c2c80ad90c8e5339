#!/usr/bin/env python3
"""Triangle counting on generated power-law graphs: horsec's GPU backend (breadth-first
multiway join, counted without a triangle list) beside horsec's CPU backend (Leapfrog
Triejoin on every core) and DuckDB's SQL self-join (every core), within one time budget.

    python3 benches/lftj_vs_duckdb.py --horsec target/release/horsec [--out DIR]

The program is queries/datalog/triangles_count.dl: `link` is the undirected, deduplicated,
loop-free edge set, `triangle(x, y, z)` with x < y < z is one multiway join, and its count is
an `@multiway_count` (the plan says `multiway count`). DuckDB runs, over the same `e` (built
before the timed query, so DuckDB's time excludes what horsec's includes):

    SELECT count(*) FROM e e1 JOIN e e2 ON e1.b = e2.a JOIN e e3 ON e2.b = e3.b AND e1.a = e3.a
    WHERE e1.a < e1.b AND e2.a < e2.b

Graphs: `horsec gen-graph --kind power-law --vertices M/10 --edges M` for each M of --edges
(10^6, 10^7, 10^8 by default). The largest graph is generated in the background while the
smaller ones run. Each measurement is its own process with its own time limit, cut to what is
left of --budget-s; one that runs out prints `>N` and its ratio becomes a bound. horsec's
times are `horsec bench` medians (query only: the loaded input uploaded, `link` built, tries
built, the join counted); the counts of the three are checked equal.
"""
import argparse
import os
import re
import subprocess
import sys

from budget import Budget, log, run


BENCH = re.compile(
    r"gpu (?P<gpu>[\d.]+ ms|skipped) \(cold (?P<cold>[\d.]+ ms|skipped)\), "
    r"cpu (?P<cpu>[\d.]+ ms|skipped), .*?value (?P<value>\d+)"
)


def horsec_bench(horsec, program, csv, runs, backend, limit):
    """(ms or 'timeout'/'failed', count or None)."""
    env = dict(os.environ, HORSEC_BENCH_BACKENDS=backend, HORSEC_BENCH_NO_BINARY="1")
    out, err = run([horsec, "bench", program, "--runs", str(runs), "--table", f"edge={csv}"], limit, env)
    if err:
        return err, None
    for line in out.strip().splitlines():
        log(f"  {line}")
    match = BENCH.search(out)
    if not match:
        log("  unexpected horsec bench output")
        return "failed", None
    text = match["gpu"] if backend == "gpu" else match["cpu"]
    return float(text.split()[0]), int(match["value"])


DUCKDB_SCRIPT = """
import os, statistics, sys, time
import duckdb
csv, runs = sys.argv[1], int(sys.argv[2])
con = duckdb.connect()
con.execute(f"SET threads TO {os.cpu_count()}")
con.execute("SET enable_progress_bar = false")
con.execute(f"CREATE TABLE edge AS SELECT * FROM read_csv_auto('{csv}')")
con.execute(\"\"\"CREATE TABLE e AS SELECT DISTINCT a, b FROM (
    SELECT src AS a, dst AS b FROM edge UNION ALL SELECT dst AS a, src AS b FROM edge
) WHERE a <> b\"\"\")
sql = \"\"\"SELECT count(*) FROM e e1 JOIN e e2 ON e1.b = e2.a
    JOIN e e3 ON e2.b = e3.b AND e1.a = e3.a WHERE e1.a < e1.b AND e2.a < e2.b\"\"\"
times = []
for _ in range(runs):
    start = time.perf_counter()
    count = con.execute(sql).fetchone()[0]
    times.append((time.perf_counter() - start) * 1e3)
print(statistics.median(times), count)
"""


def duckdb_count(csv, runs, limit):
    out, err = run([sys.executable, "-c", DUCKDB_SCRIPT, csv, str(runs)], limit,
                   shown=["duckdb", csv])
    if err:
        return err, None
    fields = out.strip().splitlines()[-1].split() if out.strip() else []
    if len(fields) != 2:
        return "failed", None
    log(f"  duckdb: {fields[0]} ms, {fields[1]} triangles")
    return float(fields[0]), int(fields[1])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--horsec", default=os.environ.get("HORSEC", "target/release/horsec"))
    p.add_argument("--out", default="/tmp/horsec-lftj-bench")
    p.add_argument("--edges", default="1000000,10000000,100000000")
    p.add_argument("--vertices-per-edge", type=float, default=0.1)
    p.add_argument("--runs", type=int, default=1, help="timed runs per tool (after one cold GPU run)")
    p.add_argument("--budget-s", type=float, default=235, help="the whole script's time limit")
    p.add_argument("--gpu-limit-s", type=float, default=90)
    p.add_argument("--cpu-limit-s", type=float, default=60)
    p.add_argument("--duckdb-limit-s", type=float, default=40)
    p.add_argument("--skip", default="", help="comma-separated: cpu,duckdb")
    p.add_argument("--largest-gpu-only", action="store_true",
                   help="the largest graph on the GPU alone (the others past their limits there)")
    args = p.parse_args()
    budget = Budget(args.budget_s)
    left = budget.left
    skip = set(filter(None, args.skip.split(",")))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    program = os.path.join(root, "queries", "datalog", "triangles_count.dl")
    os.makedirs(args.out, exist_ok=True)
    sizes = [int(float(m)) for m in args.edges.split(",")]

    def graph(m):
        csv = os.path.join(args.out, f"power_law_{m}.csv")
        vertices = max(2, int(m * args.vertices_per_edge))
        cmd = [args.horsec, "gen-graph", "--kind", "power-law", "--vertices", str(vertices),
               "--edges", str(m), "--out", csv + ".part"]
        return csv, cmd

    # The largest graph is generated in the background (one core) while the others run.
    background = None
    if len(sizes) > 1:
        csv, cmd = graph(sizes[-1])
        if not os.path.exists(csv):
            log("+ (background) " + " ".join(cmd))
            background = (subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE), csv)
    rows = []
    for m in sizes:
        csv, cmd = graph(m)
        if background and background[1] == csv:
            proc = background[0]
            try:
                proc.wait(timeout=left())
            except subprocess.TimeoutExpired:
                proc.kill()
                log(f"  generating {m} edges ran past the budget")
                rows.append((m, None, "timeout", "-", "-"))
                continue
            if proc.returncode != 0:
                log(proc.stderr.read().decode(errors="replace"))
                rows.append((m, None, "failed", "-", "-"))
                continue
            os.replace(csv + ".part", csv)
        elif not os.path.exists(csv):
            _, err = run(cmd, left())
            if err:
                rows.append((m, None, err, "-", "-"))
                continue
            os.replace(csv + ".part", csv)
        gpu, count = horsec_bench(args.horsec, program, csv, args.runs, "gpu", min(args.gpu_limit_s, left()))
        alone = args.largest_gpu_only and m == sizes[-1] and len(sizes) > 1
        cpu = "-"
        if "cpu" not in skip and not alone:
            cpu, cpu_count = horsec_bench(args.horsec, program, csv, args.runs, "cpu", min(args.cpu_limit_s, left()))
            if count is None:
                count = cpu_count
            elif cpu_count is not None and cpu_count != count:
                log(f"WARNING: {m} edges: GPU counted {count} triangles, CPU {cpu_count}")
        duck = "-"
        if "duckdb" not in skip and not alone:
            duck, duck_count = duckdb_count(csv, args.runs, min(args.duckdb_limit_s, left()))
            if count is None:
                count = duck_count
            elif duck_count is not None and duck_count != count:
                log(f"WARNING: {m} edges: DuckDB counted {duck_count} triangles, horsec {count}")
        rows.append((m, count, gpu, cpu, duck))
    if background and background[0].poll() is None:
        background[0].kill()

    def shown(v):
        return f"{v:10.1f}" if isinstance(v, float) else f"{v:>10}"

    def ratio(slow, fast):
        if not isinstance(fast, float):
            return f"{'-':>9}"
        if isinstance(slow, float):
            return f"{slow / fast:9.2f}"
        return f"{'>' + 'limit':>9}" if slow == "timeout" else f"{'-':>9}"

    print(f"{'edges':>11} {'triangles':>14} {'gpu ms':>10} {'cpu ms':>10} {'duckdb ms':>10} {'cpu/gpu':>9} {'duck/gpu':>9}")
    for m, count, gpu, cpu, duck in rows:
        print(f"{m:>11} {count if count is not None else '-':>14} {shown(gpu)} {shown(cpu)} {shown(duck)} "
              f"{ratio(cpu, gpu)} {ratio(duck, gpu)}")
    print("(timeout: ran past its limit, cut to what the budget had left; -: not run; horsec: "
          "`horsec bench` median of the query on loaded data; DuckDB: the join query on a prepared `e`)")


if __name__ == "__main__":
    main()
