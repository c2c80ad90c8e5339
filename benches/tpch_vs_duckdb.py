#!/usr/bin/env python3
"""TPC-H side by side: horsec on the GPU against DuckDB on all CPU cores, same data.

1. `horsec gen-tpch --sf SF --out DIR` writes the `.tbl` files (kept and reused when DIR
   already holds them).
2. DuckDB (the Python package, all cores; in a process of its own, which exits before
   horsec runs) loads the `.tbl` files into in-memory tables with the TPC-H schema, then
   runs each of the 22 queries to warm up (at least once, and for `--warm-up` seconds) and
   RUNS times; the median counts.
3. `horsec bench --data DIR --runs RUNS --gpu-only` times the 22 HorseIR programs (warm GPU
   runs, columns resident, after `--warm-up` seconds of untimed runs of the query, as DuckDB
   gets: an idle GPU runs at low clocks); its `gpu` column (median) counts. It runs in
   `--horsec-processes` processes (default 3), and the median of their medians counts: the
   host's costs per run differ between processes. A pass of one run per query with no
   warm-up goes first; its geometric mean is printed too.
4. `horsec bench --bandwidth` measures the device's copy bandwidth (the faster of the queue's
   copy command and a copy kernel); q1's and q6's effective
   bandwidth is the bytes of the lineitem columns they read, each at its element's size (a
   column read coded, a byte a row, still counts 8 or 4), divided by their median time.

Prints per query the two medians and DuckDB/horsec (> 1: horsec is faster), the geometric
mean of those ratios, and the bandwidth lines. Needs no network: DuckDB from PYTHONPATH, the
horsec binary from --horsec or $HORSEC (default: target/release/horsec of this repository).

    cargo build --profile dist
    python3 benches/tpch_vs_duckdb.py --sf 1 --runs 5 --horsec target/dist/horsec

(`dist` is the release build with fat LTO: the build to measure, see the README.)
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

SCHEMA = {
    "region": [("r_regionkey", "INTEGER"), ("r_name", "VARCHAR"), ("r_comment", "VARCHAR")],
    "nation": [
        ("n_nationkey", "INTEGER"),
        ("n_name", "VARCHAR"),
        ("n_regionkey", "INTEGER"),
        ("n_comment", "VARCHAR"),
    ],
    "supplier": [
        ("s_suppkey", "INTEGER"),
        ("s_name", "VARCHAR"),
        ("s_address", "VARCHAR"),
        ("s_nationkey", "INTEGER"),
        ("s_phone", "VARCHAR"),
        ("s_acctbal", "DECIMAL(15,2)"),
        ("s_comment", "VARCHAR"),
    ],
    "customer": [
        ("c_custkey", "INTEGER"),
        ("c_name", "VARCHAR"),
        ("c_address", "VARCHAR"),
        ("c_nationkey", "INTEGER"),
        ("c_phone", "VARCHAR"),
        ("c_acctbal", "DECIMAL(15,2)"),
        ("c_mktsegment", "VARCHAR"),
        ("c_comment", "VARCHAR"),
    ],
    "part": [
        ("p_partkey", "INTEGER"),
        ("p_name", "VARCHAR"),
        ("p_mfgr", "VARCHAR"),
        ("p_brand", "VARCHAR"),
        ("p_type", "VARCHAR"),
        ("p_size", "INTEGER"),
        ("p_container", "VARCHAR"),
        ("p_retailprice", "DECIMAL(15,2)"),
        ("p_comment", "VARCHAR"),
    ],
    "partsupp": [
        ("ps_partkey", "INTEGER"),
        ("ps_suppkey", "INTEGER"),
        ("ps_availqty", "INTEGER"),
        ("ps_supplycost", "DECIMAL(15,2)"),
        ("ps_comment", "VARCHAR"),
    ],
    "orders": [
        ("o_orderkey", "BIGINT"),
        ("o_custkey", "INTEGER"),
        ("o_orderstatus", "VARCHAR"),
        ("o_totalprice", "DECIMAL(15,2)"),
        ("o_orderdate", "DATE"),
        ("o_orderpriority", "VARCHAR"),
        ("o_clerk", "VARCHAR"),
        ("o_shippriority", "INTEGER"),
        ("o_comment", "VARCHAR"),
    ],
    "lineitem": [
        ("l_orderkey", "BIGINT"),
        ("l_partkey", "INTEGER"),
        ("l_suppkey", "INTEGER"),
        ("l_linenumber", "INTEGER"),
        ("l_quantity", "DECIMAL(15,2)"),
        ("l_extendedprice", "DECIMAL(15,2)"),
        ("l_discount", "DECIMAL(15,2)"),
        ("l_tax", "DECIMAL(15,2)"),
        ("l_returnflag", "VARCHAR"),
        ("l_linestatus", "VARCHAR"),
        ("l_shipdate", "DATE"),
        ("l_commitdate", "DATE"),
        ("l_receiptdate", "DATE"),
        ("l_shipinstruct", "VARCHAR"),
        ("l_shipmode", "VARCHAR"),
        ("l_comment", "VARCHAR"),
    ],
}

# The 22 queries with the TPC-H validation parameters (the answers of the conformance suite).
QUERIES = {
    1: """select l_returnflag, l_linestatus, sum(l_quantity) as sum_qty,
  sum(l_extendedprice) as sum_base_price, sum(l_extendedprice * (1 - l_discount)) as sum_disc_price,
  sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge, avg(l_quantity) as avg_qty,
  avg(l_extendedprice) as avg_price, avg(l_discount) as avg_disc, count(*) as count_order
from lineitem where l_shipdate <= date '1998-12-01' - interval '90' day
group by l_returnflag, l_linestatus order by l_returnflag, l_linestatus""",
    2: """select s_acctbal, s_name, n_name, p_partkey, p_mfgr, s_address, s_phone, s_comment
from part, supplier, partsupp, nation, region
where p_partkey = ps_partkey and s_suppkey = ps_suppkey and p_size = 15 and p_type like '%BRASS'
  and s_nationkey = n_nationkey and n_regionkey = r_regionkey and r_name = 'EUROPE'
  and ps_supplycost = (select min(ps_supplycost) from partsupp, supplier, nation, region
    where p_partkey = ps_partkey and s_suppkey = ps_suppkey and s_nationkey = n_nationkey
      and n_regionkey = r_regionkey and r_name = 'EUROPE')
order by s_acctbal desc, n_name, s_name, p_partkey limit 100""",
    3: """select l_orderkey, sum(l_extendedprice * (1 - l_discount)) as revenue, o_orderdate, o_shippriority
from customer, orders, lineitem
where c_mktsegment = 'BUILDING' and c_custkey = o_custkey and l_orderkey = o_orderkey
  and o_orderdate < date '1995-03-15' and l_shipdate > date '1995-03-15'
group by l_orderkey, o_orderdate, o_shippriority order by revenue desc, o_orderdate limit 10""",
    4: """select o_orderpriority, count(*) as order_count from orders
where o_orderdate >= date '1993-07-01' and o_orderdate < date '1993-07-01' + interval '3' month
  and exists (select * from lineitem where l_orderkey = o_orderkey and l_commitdate < l_receiptdate)
group by o_orderpriority order by o_orderpriority""",
    5: """select n_name, sum(l_extendedprice * (1 - l_discount)) as revenue
from customer, orders, lineitem, supplier, nation, region
where c_custkey = o_custkey and l_orderkey = o_orderkey and l_suppkey = s_suppkey
  and c_nationkey = s_nationkey and s_nationkey = n_nationkey and n_regionkey = r_regionkey
  and r_name = 'ASIA' and o_orderdate >= date '1994-01-01'
  and o_orderdate < date '1994-01-01' + interval '1' year
group by n_name order by revenue desc""",
    6: """select sum(l_extendedprice * l_discount) as revenue from lineitem
where l_shipdate >= date '1994-01-01' and l_shipdate < date '1994-01-01' + interval '1' year
  and l_discount between 0.06 - 0.01 and 0.06 + 0.01 and l_quantity < 24""",
    7: """select supp_nation, cust_nation, l_year, sum(volume) as revenue from (
  select n1.n_name as supp_nation, n2.n_name as cust_nation, extract(year from l_shipdate) as l_year,
    l_extendedprice * (1 - l_discount) as volume
  from supplier, lineitem, orders, customer, nation n1, nation n2
  where s_suppkey = l_suppkey and o_orderkey = l_orderkey and c_custkey = o_custkey
    and s_nationkey = n1.n_nationkey and c_nationkey = n2.n_nationkey
    and ((n1.n_name = 'FRANCE' and n2.n_name = 'GERMANY') or (n1.n_name = 'GERMANY' and n2.n_name = 'FRANCE'))
    and l_shipdate between date '1995-01-01' and date '1996-12-31') as shipping
group by supp_nation, cust_nation, l_year order by supp_nation, cust_nation, l_year""",
    8: """select o_year, sum(case when nation = 'BRAZIL' then volume else 0 end) / sum(volume) as mkt_share
from (select extract(year from o_orderdate) as o_year, l_extendedprice * (1 - l_discount) as volume,
    n2.n_name as nation
  from part, supplier, lineitem, orders, customer, nation n1, nation n2, region
  where p_partkey = l_partkey and s_suppkey = l_suppkey and l_orderkey = o_orderkey
    and o_custkey = c_custkey and c_nationkey = n1.n_nationkey and n1.n_regionkey = r_regionkey
    and r_name = 'AMERICA' and s_nationkey = n2.n_nationkey
    and o_orderdate between date '1995-01-01' and date '1996-12-31'
    and p_type = 'ECONOMY ANODIZED STEEL') as all_nations
group by o_year order by o_year""",
    9: """select nation, o_year, sum(amount) as sum_profit from (
  select n_name as nation, extract(year from o_orderdate) as o_year,
    l_extendedprice * (1 - l_discount) - ps_supplycost * l_quantity as amount
  from part, supplier, lineitem, partsupp, orders, nation
  where s_suppkey = l_suppkey and ps_suppkey = l_suppkey and ps_partkey = l_partkey
    and p_partkey = l_partkey and o_orderkey = l_orderkey and s_nationkey = n_nationkey
    and p_name like '%green%') as profit
group by nation, o_year order by nation, o_year desc""",
    10: """select c_custkey, c_name, sum(l_extendedprice * (1 - l_discount)) as revenue, c_acctbal, n_name,
  c_address, c_phone, c_comment
from customer, orders, lineitem, nation
where c_custkey = o_custkey and l_orderkey = o_orderkey and o_orderdate >= date '1993-10-01'
  and o_orderdate < date '1993-10-01' + interval '3' month and l_returnflag = 'R'
  and c_nationkey = n_nationkey
group by c_custkey, c_name, c_acctbal, c_phone, n_name, c_address, c_comment
order by revenue desc limit 20""",
    11: """select ps_partkey, sum(ps_supplycost * ps_availqty) as value
from partsupp, supplier, nation
where ps_suppkey = s_suppkey and s_nationkey = n_nationkey and n_name = 'GERMANY'
group by ps_partkey having sum(ps_supplycost * ps_availqty) > (
  select sum(ps_supplycost * ps_availqty) * {q11_fraction} from partsupp, supplier, nation
  where ps_suppkey = s_suppkey and s_nationkey = n_nationkey and n_name = 'GERMANY')
order by value desc""",
    12: """select l_shipmode,
  sum(case when o_orderpriority = '1-URGENT' or o_orderpriority = '2-HIGH' then 1 else 0 end) as high_line_count,
  sum(case when o_orderpriority <> '1-URGENT' and o_orderpriority <> '2-HIGH' then 1 else 0 end) as low_line_count
from orders, lineitem
where o_orderkey = l_orderkey and l_shipmode in ('MAIL', 'SHIP') and l_commitdate < l_receiptdate
  and l_shipdate < l_commitdate and l_receiptdate >= date '1994-01-01'
  and l_receiptdate < date '1994-01-01' + interval '1' year
group by l_shipmode order by l_shipmode""",
    13: """select c_count, count(*) as custdist from (
  select c_custkey, count(o_orderkey) as c_count
  from customer left outer join orders on c_custkey = o_custkey and o_comment not like '%special%requests%'
  group by c_custkey) as c_orders
group by c_count order by custdist desc, c_count desc""",
    14: """select 100.00 * sum(case when p_type like 'PROMO%' then l_extendedprice * (1 - l_discount) else 0 end)
  / sum(l_extendedprice * (1 - l_discount)) as promo_revenue
from lineitem, part
where l_partkey = p_partkey and l_shipdate >= date '1995-09-01'
  and l_shipdate < date '1995-09-01' + interval '1' month""",
    15: """with revenue as (select l_suppkey as supplier_no, sum(l_extendedprice * (1 - l_discount)) as total_revenue
  from lineitem where l_shipdate >= date '1996-01-01' and l_shipdate < date '1996-01-01' + interval '3' month
  group by l_suppkey)
select s_suppkey, s_name, s_address, s_phone, total_revenue from supplier, revenue
where s_suppkey = supplier_no and total_revenue = (select max(total_revenue) from revenue)
order by s_suppkey""",
    16: """select p_brand, p_type, p_size, count(distinct ps_suppkey) as supplier_cnt
from partsupp, part
where p_partkey = ps_partkey and p_brand <> 'Brand#45' and p_type not like 'MEDIUM POLISHED%'
  and p_size in (49, 14, 23, 45, 19, 3, 36, 9)
  and ps_suppkey not in (select s_suppkey from supplier where s_comment like '%Customer%Complaints%')
group by p_brand, p_type, p_size order by supplier_cnt desc, p_brand, p_type, p_size""",
    17: """select sum(l_extendedprice) / 7.0 as avg_yearly from lineitem, part
where p_partkey = l_partkey and p_brand = 'Brand#23' and p_container = 'MED BOX'
  and l_quantity < (select 0.2 * avg(l_quantity) from lineitem where l_partkey = p_partkey)""",
    18: """select c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice, sum(l_quantity)
from customer, orders, lineitem
where o_orderkey in (select l_orderkey from lineitem group by l_orderkey having sum(l_quantity) > 300)
  and c_custkey = o_custkey and o_orderkey = l_orderkey
group by c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice
order by o_totalprice desc, o_orderdate limit 100""",
    19: """select sum(l_extendedprice * (1 - l_discount)) as revenue from lineitem, part
where (p_partkey = l_partkey and p_brand = 'Brand#12'
    and p_container in ('SM CASE', 'SM BOX', 'SM PACK', 'SM PKG') and l_quantity >= 1 and l_quantity <= 11
    and p_size between 1 and 5 and l_shipmode in ('AIR', 'AIR REG') and l_shipinstruct = 'DELIVER IN PERSON')
  or (p_partkey = l_partkey and p_brand = 'Brand#23'
    and p_container in ('MED BAG', 'MED BOX', 'MED PKG', 'MED PACK') and l_quantity >= 10 and l_quantity <= 20
    and p_size between 1 and 10 and l_shipmode in ('AIR', 'AIR REG') and l_shipinstruct = 'DELIVER IN PERSON')
  or (p_partkey = l_partkey and p_brand = 'Brand#34'
    and p_container in ('LG CASE', 'LG BOX', 'LG PACK', 'LG PKG') and l_quantity >= 20 and l_quantity <= 30
    and p_size between 1 and 15 and l_shipmode in ('AIR', 'AIR REG') and l_shipinstruct = 'DELIVER IN PERSON')""",
    20: """select s_name, s_address from supplier, nation
where s_suppkey in (select ps_suppkey from partsupp
    where ps_partkey in (select p_partkey from part where p_name like 'forest%')
      and ps_availqty > (select 0.5 * sum(l_quantity) from lineitem
        where l_partkey = ps_partkey and l_suppkey = ps_suppkey
          and l_shipdate >= date '1994-01-01' and l_shipdate < date '1994-01-01' + interval '1' year))
  and s_nationkey = n_nationkey and n_name = 'CANADA'
order by s_name""",
    21: """select s_name, count(*) as numwait from supplier, lineitem l1, orders, nation
where s_suppkey = l1.l_suppkey and o_orderkey = l1.l_orderkey and o_orderstatus = 'F'
  and l1.l_receiptdate > l1.l_commitdate
  and exists (select * from lineitem l2 where l2.l_orderkey = l1.l_orderkey and l2.l_suppkey <> l1.l_suppkey)
  and not exists (select * from lineitem l3 where l3.l_orderkey = l1.l_orderkey
    and l3.l_suppkey <> l1.l_suppkey and l3.l_receiptdate > l3.l_commitdate)
  and s_nationkey = n_nationkey and n_name = 'SAUDI ARABIA'
group by s_name order by numwait desc, s_name limit 100""",
    22: """select cntrycode, count(*) as numcust, sum(c_acctbal) as totacctbal from (
  select substring(c_phone from 1 for 2) as cntrycode, c_acctbal from customer
  where substring(c_phone from 1 for 2) in ('13', '31', '23', '29', '30', '18', '17')
    and c_acctbal > (select avg(c_acctbal) from customer where c_acctbal > 0.00
      and substring(c_phone from 1 for 2) in ('13', '31', '23', '29', '30', '18', '17'))
    and not exists (select * from orders where o_custkey = c_custkey)) as custsale
group by cntrycode order by cntrycode""",
}

# Bytes per lineitem row of the columns q1 and q6 read, as horsec stores them on the device:
# f64 8 bytes, date 4, sym codes 4 (the element sizes, also for columns read coded).
Q1_BYTES_PER_ROW = 4 * 8 + 4 + 4 + 4  # quantity, price, discount, tax; shipdate; flag, status
Q6_BYTES_PER_ROW = 3 * 8 + 4  # quantity, price, discount; shipdate


def median_ms(samples):
    return statistics.median(samples) * 1e3


def generate(horsec, sf, data):
    if all((data / f"{t}.tbl").is_file() for t in SCHEMA):
        print(f"data: reusing {data}", file=sys.stderr)
        return
    data.mkdir(parents=True, exist_ok=True)
    subprocess.run([horsec, "gen-tpch", "--sf", str(sf), "--out", str(data)], check=True)


def duckdb_medians(data, sf, runs, threads, warm_up):
    import duckdb

    con = duckdb.connect(":memory:")
    con.execute(f"SET threads = {threads}")
    start = time.perf_counter()
    for table, columns in SCHEMA.items():
        spec = ", ".join(f"'{name}': '{ty}'" for name, ty in columns)
        # dbgen rows end in `|`: one more, empty column, dropped.
        con.execute(
            f"CREATE TABLE {table} AS SELECT * EXCLUDE (unused) FROM read_csv("
            f"'{data / (table + '.tbl')}', delim = '|', header = false, quote = '', escape = '', "
            f"columns = {{{spec}, 'unused': 'VARCHAR'}})"
        )
    load = time.perf_counter() - start
    lineitems = con.execute("SELECT count(*) FROM lineitem").fetchone()[0]
    medians = {}
    for q, sql in QUERIES.items():
        sql = sql.replace("{q11_fraction}", repr(0.0001 / sf))
        # Warm-up: at least one run, and runs until `warm_up` seconds have passed (the same
        # time horsec's runs of the query get).
        warm_until = time.perf_counter() + warm_up
        con.execute(sql).fetchall()
        while time.perf_counter() < warm_until:
            con.execute(sql).fetchall()
        samples = []
        for _ in range(runs):
            start = time.perf_counter()
            con.execute(sql).fetchall()
            samples.append(time.perf_counter() - start)
        medians[q] = median_ms(samples)
        print(f"duckdb q{q}: {medians[q]:.2f} ms", file=sys.stderr)
    return medians, load, lineitems, duckdb.__version__


def horsec_medians(horsec, data, queries, runs, warm_up):
    files = [str(queries / f"q{q}.hir") for q in QUERIES]
    cmd = [horsec, "bench", "--data", str(data), "--runs", str(runs), "--gpu-only", f"--warm-up={warm_up}", *files]
    print("running: " + " ".join(cmd), file=sys.stderr)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    medians, device = {}, ""
    for line in out.splitlines():
        if line.startswith("device:"):
            device = line.split(":", 1)[1].strip()
        m = re.match(r"^q(\d+)\s+(\S+)\s+(\S+)\s+(\S+)", line)
        if m:
            # Columns: query, compile, gpu cold, gpu (the warm median).
            medians[int(m.group(1))] = float(m.group(4))
    missing = [q for q in QUERIES if q not in medians]
    if missing:
        sys.exit(f"horsec bench printed no row for q{missing}:\n{out}")
    return medians, device


def copy_bandwidth(horsec):
    out = subprocess.run([horsec, "bench", "--bandwidth"], check=True, capture_output=True, text=True).stdout
    m = re.search(r"device copy bandwidth: ([0-9.]+) GB/s", out)
    if not m:
        sys.exit(f"horsec bench --bandwidth printed no bandwidth:\n{out}")
    return float(m.group(1))


def ms(value):
    """Milliseconds as `horsec bench` prints them: to the microsecond under 1 ms."""
    return f"{value:.3f}" if value < 1 else f"{value:.2f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sf", type=float, default=1.0, help="TPC-H scale factor (default 1)")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per query (median)")
    parser.add_argument(
        "--horsec",
        default=os.environ.get("HORSEC", str(REPO / "target/release/horsec")),
        help="the horsec binary (default $HORSEC, else target/release/horsec)",
    )
    parser.add_argument("--data", type=Path, help="directory of .tbl files (default /tmp/horsec-tpch-sfSF)")
    conformance = Path(os.environ.get("HORSEC_CONFORMANCE", REPO.parent / "shared/conformance"))
    default_queries = conformance / "tpch/queries"
    if not default_queries.is_dir():
        default_queries = REPO / "queries/tpch"
    parser.add_argument("--queries", type=Path, default=default_queries, help="directory of q1.hir … q22.hir")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="DuckDB threads (default: all cores)")
    parser.add_argument(
        "--warm-up",
        type=float,
        default=1.0,
        help="seconds of untimed runs of each query before its timed runs, on both (horsec bench --warm-up)",
    )
    parser.add_argument(
        "--horsec-processes",
        type=int,
        default=3,
        help="horsec bench processes, each timing every query; the median of their medians counts (default 3)",
    )
    args = parser.parse_args()

    data = args.data or Path(f"/tmp/horsec-tpch-sf{args.sf:g}")
    generate(args.horsec, args.sf, data)
    # DuckDB in a process of its own, gone (its tables, its threads) before horsec runs: with
    # DuckDB's memory and threads still in this process, horsec's first timed query ran slow
    # (q1 at SF 10 on an H100: 3.6-4.2 ms here, 1.5 ms in the same timed pass run alone).
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(1) as pool:
        duck, load, lineitems, version = pool.apply(
            duckdb_medians, (data, args.sf, args.runs, args.threads, args.warm_up)
        )
    # First a pass of one run per query with no warm-up: a GPU idle while DuckDB ran sits at
    # low clocks, and short queries do not bring them up within their own runs (on an H100,
    # q6 at SF 10 took 2.4 ms so and 0.6 ms after a busy spell). Its geometric mean is
    # printed too. The timed pass gives each query --warm-up seconds of untimed runs first,
    # as DuckDB gets a warm-up run per query.
    cold_clocks, _ = horsec_medians(args.horsec, data, args.queries, 1, 0)
    # Several horsec processes, each timing every query: the host's costs per run (the
    # interpreter, wgpu's encoding, submissions, waking from the wait) differ 1.5-2.5x between
    # processes on one machine (q1 at SF 1 on an H100: 0.21 to 0.34 ms), and one process
    # draws one speed for all 22 queries. The median of the processes' medians counts.
    per_process = []
    for _ in range(args.horsec_processes):
        medians, device = horsec_medians(args.horsec, data, args.queries, args.runs, args.warm_up)
        per_process.append(medians)
    ours = {q: statistics.median(p[q] for p in per_process) for q in QUERIES}
    bandwidth = copy_bandwidth(args.horsec)

    print(f"TPC-H SF {args.sf:g}, {lineitems} lineitems, queries from {args.queries}")
    print(
        f"horsec: {device}; warm GPU runs (columns resident), median of {args.runs} "
        f"after {args.warm_up:g} s of untimed runs per query, in each of "
        f"{args.horsec_processes} processes (the median of their medians counts; "
        f"'range' is the least and greatest of them)"
    )
    print(
        f"DuckDB {version}: {args.threads} threads, in-memory tables (loaded in {load:.1f} s), "
        f"median of {args.runs} after {args.warm_up:g} s of untimed runs per query"
    )
    print(f"{'query':<6} {'duckdb ms':>10} {'horsec ms':>10} {'duckdb/horsec':>14} {'horsec range ms':>16}")
    ratios = []
    for q in QUERIES:
        ratio = duck[q] / max(ours[q], 1e-6)
        ratios.append(ratio)
        spread = [p[q] for p in per_process]
        print(
            f"q{q:<5} {duck[q]:>10.2f} {ms(ours[q]):>10} {ratio:>14.2f} "
            f"{ms(min(spread)):>7} - {ms(max(spread)):<7}"
        )
    geomean = statistics.geometric_mean(ratios)
    print(f"geometric mean of duckdb/horsec: {geomean:.2f} (> 1: horsec is faster)")
    first = statistics.geometric_mean([duck[q] / max(cold_clocks[q], 1e-6) for q in QUERIES])
    print(f"(the pass before it, one warm run per query with no warm-up, the GPU's clocks as idle left them: {first:.2f})")
    slower = [f"q{q}" for q, r in zip(QUERIES, ratios) if r < 1]
    print("queries where horsec is slower: " + (", ".join(slower) if slower else "none"))
    print(f"device copy bandwidth: {bandwidth:.1f} GB/s (read + write)")
    for q, per_row in ((1, Q1_BYTES_PER_ROW), (6, Q6_BYTES_PER_ROW)):
        effective = lineitems * per_row / (ours[q] / 1e3) / 1e9
        print(
            f"q{q} effective bandwidth: {effective:.2f} GB/s "
            f"({lineitems * per_row / 1e6:.0f} MB of columns in {ms(ours[q])} ms), "
            f"{100 * effective / bandwidth:.1f} % of the copy bandwidth"
        )


if __name__ == "__main__":
    main()
