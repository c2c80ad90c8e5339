#!/usr/bin/env python3
"""REACH, SG and CSPA: horsec's GPU backend beside horsec's CPU backend (all cores) and
DuckDB's recursive CTE (all cores) on generated inputs, within one time budget.

    python3 benches/datalog_vs_duckdb.py --horsec target/release/horsec [--out DIR]

Defaults (the issue's sizes; meant to finish within 6 minutes on the H100 host):
  REACH: grid (road-like) graph, 10 000 vertices, all 39 600 grid links: the closure is
         10^8 pairs (the grid is strongly connected), about 200 iterations
  SG:    grid graph, 14 884 vertices (122 x 122), all 59 048 links: on a grid, SG pairs every
         two distinct vertices of one colour of the checkerboard, 1.1e8 pairs
  CSPA:  httpd's size: assign 360 000, dereference 1 100 000 over 1 000 000 variables
         (`gen-graph --kind cspa`: facts with function locality), about 2e7 tuples.
         DuckDB: the three relations tagged in one recursive CTE `USING KEY (t, a, b)`
         (DuckDB >= 1.3), each rule semi-naive: the working table (last iteration's new
         tuples) joined with `recurring.r` (all tuples so far, the working table's
         included), new tuples kept by an anti-join with `recurring.r`. A plain `UNION`
         CTE sees only the working table, so a non-linear rule (ValueFlow's transitivity)
         would miss delta-with-older pairs; `USING KEY` without a payload column is set
         semantics.

Each measurement is its own process with its own time limit (horsec GPU, horsec CPU via
HORSEC_BENCH_BACKENDS, DuckDB), cut to what is left of --budget-s; one that runs out prints
`>N s` and the ratio becomes a lower bound. horsec's GPU and CPU results are checked equal to
each other by count, and DuckDB's count against horsec's.
DuckDB comes from the `duckdb` Python package (PYTHONPATH). Prints one table at the end.
"""
import argparse
import os
import re
import sys

from budget import FAILED, TIMEOUT, Budget, log, run


BENCH = re.compile(
    r"gpu (?P<gpu>[\d.]+ ms|skipped) \(cold (?P<cold>[\d.]+ ms|skipped)\), "
    r"cpu (?P<cpu>[\d.]+ ms|skipped), cpu/gpu \S+, iterations (?P<iterations>\d+), "
    r"result rows [\d +]+ \(total (?P<total>\d+)\)"
)


def horsec_bench(horsec, program, data_args, runs, backend, limit):
    """(median ms or None on timeout, cold ms, iterations, total rows) of one backend."""
    env = dict(os.environ, HORSEC_BENCH_BACKENDS=backend, HORSEC_BENCH_NO_BINARY="1")
    out, err = run([horsec, "bench", program, "--runs", str(runs)] + data_args, limit, env)
    if err == FAILED:
        return "failed", None, None, None
    if err == TIMEOUT:
        return None, None, None, None
    for line in out.strip().splitlines():
        log(f"  {line}")
    match = BENCH.search(out)
    if not match:
        raise SystemExit(f"unexpected horsec bench output:\n{out}")
    ms = lambda text: None if text == "skipped" else float(text.split()[0])
    return (ms(match["gpu"] if backend == "gpu" else match["cpu"]), ms(match["cold"]),
            int(match["iterations"]), int(match["total"]))


REACH_SQL = """
WITH RECURSIVE reach(src, dst) AS (
  SELECT src, dst FROM edge
  UNION
  SELECT reach.src, edge.dst FROM reach JOIN edge ON reach.dst = edge.src
) SELECT count(*) FROM reach
"""

CSPA_SQL = """
WITH RECURSIVE r(t, a, b) USING KEY (t, a, b) AS (
  SELECT 0, a, b FROM assign
  UNION SELECT 0, a, a FROM assign
  UNION SELECT 0, b, b FROM assign
  UNION SELECT 1, a, a FROM assign
  UNION SELECT 1, b, b FROM assign
  UNION (
    -- t: 0 ValueFlow, 1 MemoryAlias, 2 ValueAlias; w = last iteration's new tuples,
    -- f = every tuple so far (w's included).
    WITH w AS (SELECT * FROM r), f AS (SELECT * FROM recurring.r),
    wvf AS (SELECT a, b FROM w WHERE t = 0), wma AS (SELECT a, b FROM w WHERE t = 1),
    wva AS (SELECT a, b FROM w WHERE t = 2),
    fvf AS (SELECT a, b FROM f WHERE t = 0), fma AS (SELECT a, b FROM f WHERE t = 1),
    derived AS (
      -- ValueFlow(x, y) :- assign(x, z), MemoryAlias(z, y).
      SELECT 0 AS t, s.a, m.b FROM assign s JOIN wma m ON s.b = m.a
      -- ValueFlow(x, y) :- ValueFlow(x, z), ValueFlow(z, y).
      UNION SELECT 0, d.a, v.b FROM wvf d JOIN fvf v ON d.b = v.a
      UNION SELECT 0, v.a, d.b FROM fvf v JOIN wvf d ON v.b = d.a
      -- MemoryAlias(x, w) :- dereference(y, x), ValueAlias(y, z), dereference(z, w).
      UNION SELECT 1, d1.b, d2.b FROM wva v JOIN dereference d1 ON d1.a = v.a
                                            JOIN dereference d2 ON d2.a = v.b
      -- ValueAlias(x, y) :- ValueFlow(z, x), ValueFlow(z, y).
      UNION SELECT 2, d.b, v.b FROM wvf d JOIN fvf v ON d.a = v.a
      UNION SELECT 2, v.b, d.b FROM fvf v JOIN wvf d ON d.a = v.a
      -- ValueAlias(x, y) :- ValueFlow(z, x), MemoryAlias(z, w), ValueFlow(w, y).
      UNION SELECT 2, v1.b, v2.b FROM wvf v1 JOIN fma m ON m.a = v1.a JOIN fvf v2 ON v2.a = m.b
      UNION SELECT 2, v1.b, v2.b FROM fvf v1 JOIN wma m ON m.a = v1.a JOIN fvf v2 ON v2.a = m.b
      UNION SELECT 2, v1.b, v2.b FROM fvf v1 JOIN fma m ON m.a = v1.a JOIN wvf v2 ON v2.a = m.b
    )
    SELECT t, a, b FROM derived ANTI JOIN f USING (t, a, b)
  )
) SELECT count(*) FROM r
"""

SG_SQL = """
WITH RECURSIVE sg(x, y) AS (
  SELECT e1.dst, e2.dst FROM edge e1 JOIN edge e2 ON e1.src = e2.src WHERE e1.dst <> e2.dst
  UNION
  SELECT e1.dst, e2.dst FROM sg JOIN edge e1 ON e1.src = sg.x JOIN edge e2 ON e2.src = sg.y
) SELECT count(*) FROM sg
"""

DUCKDB_SCRIPT = """
import os, statistics, sys, time
import duckdb
runs, tables, sql = int(sys.argv[1]), sys.argv[2:], sys.stdin.read()
con = duckdb.connect()
con.execute(f"SET threads TO {os.cpu_count()}")
# The progress bar writes to stdout on queries past 2 s; only the result line goes there.
con.execute("SET enable_progress_bar = false")
# Tables NAME=PATH: CSV with a header, or tab-separated `.facts` of two numbers (a, b).
for table in tables:
    name, path = table.split("=", 1)
    if path.endswith(".facts"):
        source = f"read_csv('{path}', delim='\\t', header=false, columns={{'a': 'BIGINT', 'b': 'BIGINT'}})"
    else:
        source = f"read_csv_auto('{path}')"
    con.execute(f"CREATE TABLE {name} AS SELECT * FROM {source}")
times = []
for _ in range(runs):
    start = time.perf_counter()
    count = con.execute(sql).fetchone()[0]
    times.append((time.perf_counter() - start) * 1e3)
print(statistics.median(times), count)
"""


def duckdb_median(tables, sql, runs, limit):
    """(median ms, count), (None, None) on timeout, or ("failed", None); tables: NAME=PATH."""
    out, err = run([sys.executable, "-c", DUCKDB_SCRIPT, str(runs)] + tables, limit, input=sql,
                   shown=["duckdb"] + tables)
    if err:
        return (None, None) if err == TIMEOUT else ("failed", None)
    lines = out.strip().splitlines()
    fields = lines[-1].split() if lines else []
    if len(fields) != 2:
        log(f"  unexpected DuckDB output: {out[-400:]!r}")
        return "failed", None
    log(f"  duckdb: {fields[0]} ms, {fields[1]} tuples")
    return float(fields[0]), int(fields[1])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--horsec", default=os.environ.get("HORSEC", "target/release/horsec"))
    p.add_argument("--out", default="/tmp/horsec-datalog-bench")
    p.add_argument("--runs", type=int, default=1, help="timed runs per tool (after one cold GPU run)")
    p.add_argument("--budget-s", type=float, default=330, help="the whole script's time limit")
    p.add_argument("--gpu-limit-s", type=float, default=60)
    p.add_argument("--cpu-limit-s", type=float, default=50)
    p.add_argument("--duckdb-limit-s", type=float, default=40)
    p.add_argument("--reach-kind", default="grid")
    p.add_argument("--reach-vertices", type=int, default=10_000)
    p.add_argument("--reach-edges", type=int, default=39_600)
    p.add_argument("--sg-kind", default="grid")
    p.add_argument("--sg-vertices", type=int, default=14_884)
    p.add_argument("--sg-edges", type=int, default=59_048)
    p.add_argument("--cspa-variables", type=int, default=1_000_000)
    p.add_argument("--cspa-assign", type=int, default=360_000)
    p.add_argument("--cspa-dereference", type=int, default=1_100_000)
    p.add_argument("--skip", default="", help="comma-separated: reach,sg,cspa,cpu,duckdb")
    args = p.parse_args()
    budget = Budget(args.budget_s)
    left = budget.left
    skip = set(filter(None, args.skip.split(",")))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.makedirs(args.out, exist_ok=True)
    rows = []
    jobs = []
    for name, kind, vertices, edges, sql in [
        ("reach", args.reach_kind, args.reach_vertices, args.reach_edges, REACH_SQL),
        ("sg", args.sg_kind, args.sg_vertices, args.sg_edges, SG_SQL),
    ]:
        if name in skip:
            continue
        csv = os.path.join(args.out, f"{name}.csv")
        gen = [args.horsec, "gen-graph", "--kind", kind, "--vertices", str(vertices), "--edges", str(edges), "--out", csv]
        jobs.append((name, gen, ["--table", f"edge={csv}"], ([f"edge={csv}"], sql)))
    if "cspa" not in skip:
        directory = os.path.join(args.out, "cspa")
        gen = [args.horsec, "gen-graph", "--kind", "cspa", "--vertices", str(args.cspa_variables),
               "--assign", str(args.cspa_assign), "--dereference", str(args.cspa_dereference), "--out", directory]
        facts = [f"{rel}={os.path.join(directory, rel + '.facts')}" for rel in ("assign", "dereference")]
        jobs.append(("cspa", gen, ["--data", directory], (facts, CSPA_SQL)))
    for name, gen, data_args, duck in jobs:
        _, err = run(gen, left())
        if err:
            log(f"  {name}: generating its input {err}; skipped")
            continue
        program = os.path.join(root, "queries", "datalog", f"{name}.dl")
        gpu, cold, iterations, total = horsec_bench(args.horsec, program, data_args, args.runs, "gpu",
                                                    min(args.gpu_limit_s, left()))
        cpu, cpu_total = None, None
        if "cpu" not in skip:
            cpu, _, cpu_iterations, cpu_total = horsec_bench(args.horsec, program, data_args, args.runs, "cpu",
                                                             min(args.cpu_limit_s, left()))
            if total is None:
                iterations, total = cpu_iterations, cpu_total
            elif cpu_total is not None and total is not None and cpu_total != total:
                log(f"WARNING: {name}: GPU {total} tuples, CPU {cpu_total}")
        duck_ms, count = None, None
        if duck is not None and "duckdb" not in skip:
            duck_ms, count = duckdb_median(duck[0], duck[1], args.runs, min(args.duckdb_limit_s, left()))
            if isinstance(count, int) and total is not None and count != total:
                log(f"WARNING: {name}: DuckDB counted {count} tuples, horsec {total}")
        limits = {"gpu": args.gpu_limit_s, "cpu": args.cpu_limit_s, "duckdb": args.duckdb_limit_s}
        rows.append((name, total, iterations, gpu, cold, cpu, duck_ms, duck is not None and "duckdb" not in skip,
                     "cpu" not in skip, limits))
    def shown(ms, ran, limit):
        if not ran:
            return f"{'-':>10}"
        if ms == "failed":
            return f"{'failed':>10}"
        return f"{ms:10.1f}" if ms is not None else f"{'>' + str(int(limit * 1000)):>10}"

    def ratio(slow, fast, ran, limit):
        if not ran or fast is None or "failed" in (slow, fast):
            return f"{'-':>9}"
        if slow is None:
            return f"{'>' + format(limit * 1000 / fast, '.1f'):>9}"
        return f"{slow / fast:9.2f}"

    print(f"{'query':<6} {'tuples':>12} {'iters':>6} {'gpu ms':>10} {'cold ms':>10} {'cpu ms':>10} {'duckdb ms':>10} {'cpu/gpu':>9} {'duck/gpu':>9}")
    for name, total, iterations, gpu, cold, cpu, duck, duck_ran, cpu_ran, limits in rows:
        print(f"{name:<6} {total if total is not None else '-':>12} {iterations if iterations is not None else '-':>6} "
              f"{shown(gpu, True, limits['gpu'])} {shown(cold, True, limits['gpu'])} "
              f"{shown(cpu, cpu_ran, limits['cpu'])} {shown(duck, duck_ran, limits['duckdb'])} "
              f"{ratio(cpu, gpu, cpu_ran, limits['cpu'])} {ratio(duck, gpu, duck_ran, limits['duckdb'])}")
    print("(failed: see the error above the table; >N: ran past its limit of N ms, cut to what the budget had left; a ratio >R is a lower bound)")


if __name__ == "__main__":
    main()
