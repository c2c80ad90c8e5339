#!/usr/bin/env python3
"""REACH, SG, CSPA and triangles: horsec (GPU and CPU backends, `horsec bench`) beside DuckDB's
recursive CTE (all cores) on generated inputs.

    python3 benches/datalog_vs_duckdb.py --horsec target/release/horsec [--out DIR]

Defaults (the issue's sizes; about 8 minutes on an H100 host):
  REACH: grid (road-like) graph, 10 000 vertices, all 39 600 grid links (closure 10^8 pairs)
  SG:    power-law graph, 50 000 vertices, 60 000 edges
  CSPA:  httpd's size: assign 360 000, dereference 1 100 000 over 300 000 variables
  TRI:   triangles.dl (one multiway join) on a power-law graph, 1 000 000 vertices,
         10 000 000 edges, beside DuckDB's three-way self-join of the symmetric edges
         (`horsec bench` also runs the binary-join plan there unless
         HORSEC_BENCH_NO_BINARY=1, which large graphs need: its paths outgrow memory)
Every size is an argument; DuckDB comes from the `duckdb` Python package (PYTHONPATH).
Prints each tool's median and the ratios.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time


def run(cmd):
    print("+", " ".join(cmd), file=sys.stderr, flush=True)
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return done.stdout


def horsec_bench(horsec, program, data_args, runs):
    out = run([horsec, "bench", program, "--runs", str(runs)] + data_args)
    match = re.search(r"gpu ([\d.]+) ms .* cpu ([\d.]+) ms, cpu/gpu ([\d.]+)x, iterations (\d+), result rows ([\d +]+) \(total (\d+)\)", out)
    if not match:
        raise SystemExit(f"unexpected horsec bench output:\n{out}")
    gpu, cpu, _, iterations, _, total = match.groups()
    return float(gpu), float(cpu), int(iterations), int(total)


REACH_SQL = """
WITH RECURSIVE reach(src, dst) AS (
  SELECT src, dst FROM edge
  UNION
  SELECT reach.src, edge.dst FROM reach JOIN edge ON reach.dst = edge.src
) SELECT count(*) FROM reach
"""

TRIANGLES_SQL = """
WITH link AS (
  SELECT src AS a, dst AS b FROM edge WHERE src <> dst
  UNION
  SELECT dst, src FROM edge WHERE src <> dst
) SELECT count(*) FROM link l1
  JOIN link l2 ON l2.a = l1.b
  JOIN link l3 ON l3.a = l1.a AND l3.b = l2.b
  WHERE l1.a < l1.b AND l2.a < l2.b
"""

SG_SQL = """
WITH RECURSIVE sg(x, y) AS (
  SELECT e1.dst, e2.dst FROM edge e1 JOIN edge e2 ON e1.src = e2.src WHERE e1.dst <> e2.dst
  UNION
  SELECT e1.dst, e2.dst FROM sg JOIN edge e1 ON e1.src = sg.x JOIN edge e2 ON e2.src = sg.y
) SELECT count(*) FROM sg
"""


def duckdb_median(csv, sql, runs):
    import duckdb

    con = duckdb.connect()
    con.execute(f"SET threads TO {os.cpu_count()}")
    con.execute(f"CREATE TABLE edge AS SELECT * FROM read_csv_auto('{csv}')")
    times, count = [], None
    for _ in range(runs):
        start = time.perf_counter()
        count = con.execute(sql).fetchone()[0]
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times), count


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--horsec", default=os.environ.get("HORSEC", "target/release/horsec"))
    p.add_argument("--out", default="/tmp/horsec-datalog-bench")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--reach-vertices", type=int, default=10_000)
    p.add_argument("--reach-edges", type=int, default=39_600)
    p.add_argument("--sg-vertices", type=int, default=50_000)
    p.add_argument("--sg-edges", type=int, default=60_000)
    p.add_argument("--cspa-variables", type=int, default=300_000)
    p.add_argument("--cspa-assign", type=int, default=360_000)
    p.add_argument("--cspa-dereference", type=int, default=1_100_000)
    p.add_argument("--tri-vertices", type=int, default=1_000_000)
    p.add_argument("--tri-edges", type=int, default=10_000_000)
    p.add_argument("--skip", default="", help="comma-separated: reach,sg,cspa,triangles,duckdb")
    args = p.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.makedirs(args.out, exist_ok=True)
    rows = []
    for name, kind, vertices, edges, sql in [
        ("reach", "grid", args.reach_vertices, args.reach_edges, REACH_SQL),
        ("sg", "power-law", args.sg_vertices, args.sg_edges, SG_SQL),
        ("triangles", "power-law", args.tri_vertices, args.tri_edges, TRIANGLES_SQL),
    ]:
        if name in skip:
            continue
        csv = os.path.join(args.out, f"{name}.csv")
        run([args.horsec, "gen-graph", "--kind", kind, "--vertices", str(vertices), "--edges", str(edges), "--out", csv])
        program = os.path.join(root, "queries", "datalog", f"{name}.dl")
        gpu, cpu, iterations, total = horsec_bench(args.horsec, program, ["--table", f"edge={csv}"], args.runs)
        duck, count = (None, None) if "duckdb" in skip else duckdb_median(csv, sql, args.runs)
        if count is not None and count != total:
            print(f"WARNING: {name}: DuckDB counted {count} tuples, horsec {total}", file=sys.stderr)
        rows.append((name, total, iterations, gpu, cpu, duck))
    if "cspa" not in skip:
        directory = os.path.join(args.out, "cspa")
        run([args.horsec, "gen-graph", "--kind", "cspa", "--vertices", str(args.cspa_variables),
             "--assign", str(args.cspa_assign), "--dereference", str(args.cspa_dereference), "--out", directory])
        program = os.path.join(root, "queries", "datalog", "cspa.dl")
        gpu, cpu, iterations, total = horsec_bench(args.horsec, program, ["--data", directory], args.runs)
        rows.append(("cspa", total, iterations, gpu, cpu, None))
    print(f"{'query':<9} {'tuples':>12} {'iters':>6} {'gpu ms':>10} {'cpu ms':>10} {'duckdb ms':>10} {'cpu/gpu':>8} {'duck/gpu':>9}")
    for name, total, iterations, gpu, cpu, duck in rows:
        duck_text = f"{duck:10.1f}" if duck is not None else f"{'-':>10}"
        ratio = f"{duck / gpu:9.2f}" if duck is not None else f"{'-':>9}"
        print(f"{name:<9} {total:>12} {iterations:>6} {gpu:10.1f} {cpu:10.1f} {duck_text} {cpu / gpu:8.2f} {ratio}")


if __name__ == "__main__":
    main()
