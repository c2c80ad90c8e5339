#!/usr/bin/env python3
"""Loading TPC-H lineitem: horsec beside DuckDB's `read_csv`, same files, same machine.

1. `horsec gen-tpch --sf SF --out DIR/tbl` and `--format parquet --out DIR/parquet` write the
   tables (kept and reused when DIR already holds them).
2. `horsec bench --load lineitem --data DIR/tbl --runs RUNS` times loading lineitem.tbl into
   horsec's columns (every column, all cores, best of RUNS); the same for DIR/parquet.
3. DuckDB (the Python package, all cores) times `CREATE TABLE … AS SELECT * FROM
   read_csv('lineitem.tbl', delim='|', columns=…)` with the TPC-H column types, and the same
   from `read_parquet`, best of RUNS each.
4. The README's first command, `horsec run queries/tpch/q6.hir`, cold (a fresh cache
   directory: it generates and caches SF 0.01) and warm (the next run), wall time.

    python3 benches/load_vs_duckdb.py --sf 1 --runs 3 --horsec target/release/horsec

Prints one line per measurement and the DuckDB/horsec ratios (> 1: horsec is faster), and
under each horsec load the wall time of its phases (reading the file, parsing or decoding,
converting, joining the pieces built on each core).
DuckDB comes from PYTHONPATH; no network is needed.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

LINEITEM_COLUMNS = {
    "l_orderkey": "INTEGER",
    "l_partkey": "INTEGER",
    "l_suppkey": "INTEGER",
    "l_linenumber": "INTEGER",
    "l_quantity": "DECIMAL(15,2)",
    "l_extendedprice": "DECIMAL(15,2)",
    "l_discount": "DECIMAL(15,2)",
    "l_tax": "DECIMAL(15,2)",
    "l_returnflag": "VARCHAR",
    "l_linestatus": "VARCHAR",
    "l_shipdate": "DATE",
    "l_commitdate": "DATE",
    "l_receiptdate": "DATE",
    "l_shipinstruct": "VARCHAR",
    "l_shipmode": "VARCHAR",
    "l_comment": "VARCHAR",
}


def run(cmd, env=None):
    print("+", " ".join(cmd), file=sys.stderr, flush=True)
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return done.stdout


def generate(horsec, sf, directory, fmt):
    marker = os.path.join(directory, f"lineitem.{fmt}")
    if os.path.exists(marker):
        return
    run([horsec, "gen-tpch", "--sf", str(sf), "--out", directory, "--format", fmt])


def horsec_load(horsec, directory, runs):
    out = run([horsec, "bench", "--load", "lineitem", "--data", directory, "--runs", str(runs)])
    match = re.search(r"best ([\d.]+) s of \d+ \((\d+) rows\)", out)
    if not match:
        raise SystemExit(f"unexpected horsec bench output:\n{out}")
    phases = re.search(r"phases: (.*)", out)
    return float(match.group(1)), int(match.group(2)), phases.group(1) if phases else ""


def duckdb_load(sql, runs):
    import duckdb

    best = float("inf")
    rows = 0
    for _ in range(runs):
        con = duckdb.connect()
        start = time.perf_counter()
        con.execute(sql)
        best = min(best, time.perf_counter() - start)
        rows = con.execute("SELECT count(*) FROM lineitem").fetchone()[0]
        con.close()
    return best, rows


def first_command(horsec, repo):
    """Wall time of `horsec run queries/tpch/q6.hir`, cold (empty cache) then warm."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, HORSEC_CACHE_DIR=cache)
        times = []
        for _ in range(2):
            start = time.perf_counter()
            done = subprocess.run(
                [horsec, "run", os.path.join(repo, "queries/tpch/q6.hir")],
                capture_output=True,
                text=True,
                env=env,
            )
            times.append(time.perf_counter() - start)
            if done.returncode != 0:
                sys.stderr.write(done.stderr)
                raise SystemExit("horsec run queries/tpch/q6.hir failed")
        return times


def main():
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", default=None, help="data directory (default: /tmp/horsec-load-sfSF)")
    parser.add_argument(
        "--horsec",
        default=os.environ.get("HORSEC", os.path.join(repo, "target/release/horsec")),
    )
    args = parser.parse_args()
    out = args.out or f"/tmp/horsec-load-sf{args.sf:g}"
    tbl_dir = os.path.join(out, "tbl")
    parquet_dir = os.path.join(out, "parquet")
    generate(args.horsec, args.sf, tbl_dir, "tbl")
    generate(args.horsec, args.sf, parquet_dir, "parquet")

    columns = ", ".join(f"'{name}': '{ty}'" for name, ty in LINEITEM_COLUMNS.items())
    tbl = os.path.join(tbl_dir, "lineitem.tbl")
    parquet = os.path.join(parquet_dir, "lineitem.parquet")
    duck_csv_sql = (
        f"CREATE TABLE lineitem AS SELECT * FROM read_csv('{tbl}', delim='|', header=false, "
        f"columns={{{columns}}})"
    )
    duck_parquet_sql = f"CREATE TABLE lineitem AS SELECT * FROM read_parquet('{parquet}')"

    results = []
    h_tbl, rows, tbl_phases = horsec_load(args.horsec, tbl_dir, args.runs)
    d_csv, d_rows = duckdb_load(duck_csv_sql, args.runs)
    if rows != d_rows:
        raise SystemExit(f"row counts differ: horsec {rows}, DuckDB {d_rows}")
    results.append(("lineitem .tbl", h_tbl, "DuckDB read_csv", d_csv, tbl_phases))
    h_parquet, rows, parquet_phases = horsec_load(args.horsec, parquet_dir, args.runs)
    d_parquet, _ = duckdb_load(duck_parquet_sql, args.runs)
    results.append(
        ("lineitem .parquet", h_parquet, "DuckDB read_parquet", d_parquet, parquet_phases)
    )

    print(f"SF {args.sf:g} lineitem, {rows} rows, best of {args.runs}:")
    for what, horsec_s, duck_what, duck_s, phases in results:
        print(
            f"  horsec {what:<18} {horsec_s:8.3f} s   {duck_what:<20} {duck_s:8.3f} s   "
            f"DuckDB/horsec {duck_s / horsec_s:5.2f}x"
        )
        if phases:
            print(f"    horsec phases: {phases}")
    cold, warm = first_command(args.horsec, repo)
    print(f"horsec run queries/tpch/q6.hir: cold {cold:.2f} s, warm {warm:.2f} s (wall)")


if __name__ == "__main__":
    main()
