"""Engines with C cores hosted by Python, recorded as ``python3 script.py``: SQLite running
TPC-H-like queries, igraph's PageRank on an R-MAT graph. The inputs are generated before the
recording (unrecorded); the recorded script loads them and runs the queries / the algorithm,
so the trace holds the interpreter's start-up, the load and the work (the engines' C code runs
in that process)."""

from __future__ import annotations

import math
import os
import random
import sqlite3
import sys
from typing import Dict

import numpy as np

from . import Driver, Plan, register

# ---------------------------------------------------------------- sqlite-tpch

_NATIONS = ["ALGERIA", "ARGENTINA", "BRAZIL", "CANADA", "EGYPT", "ETHIOPIA", "FRANCE",
            "GERMANY", "INDIA", "INDONESIA", "IRAN", "IRAQ", "JAPAN", "JORDAN", "KENYA",
            "MOROCCO", "MOZAMBIQUE", "PERU", "CHINA", "ROMANIA", "SAUDI ARABIA", "VIETNAM",
            "RUSSIA", "UNITED KINGDOM", "UNITED STATES"]
_SEGMENTS = ["AUTOMOBILE", "BUILDING", "FURNITURE", "MACHINERY", "HOUSEHOLD"]


def make_tpch_db(path: str, sf: float, seed: int) -> Dict[str, int]:
    """customer, orders and lineitem with TPC-H's columns and value ranges (spec 4.2.3), at
    scale factor ``sf`` (1 = 150k customers, 1.5M orders, ~6M line items). Not dbgen's
    exact generator: uniform draws from the spec's ranges, no text comments."""
    rng = random.Random(seed)
    ncust = max(int(150_000 * sf), 10)
    nord = max(int(1_500_000 * sf), 10)
    if os.path.exists(path):
        os.unlink(path)
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE customer (c_custkey INTEGER PRIMARY KEY, c_name TEXT, c_nationkey INT,
            c_acctbal REAL, c_mktsegment TEXT);
        CREATE TABLE orders (o_orderkey INTEGER PRIMARY KEY, o_custkey INT, o_orderstatus TEXT,
            o_totalprice REAL, o_orderdate TEXT, o_orderpriority TEXT, o_shippriority INT);
        CREATE TABLE lineitem (l_orderkey INT, l_linenumber INT, l_partkey INT,
            l_quantity REAL, l_extendedprice REAL, l_discount REAL, l_tax REAL,
            l_returnflag TEXT, l_linestatus TEXT, l_shipdate TEXT, l_commitdate TEXT,
            l_receiptdate TEXT, l_shipmode TEXT);
    """)
    db.executemany("INSERT INTO customer VALUES (?,?,?,?,?)", (
        (c, f"Customer#{c:09d}", rng.randrange(25), round(rng.uniform(-999.99, 9999.99), 2),
         rng.choice(_SEGMENTS)) for c in range(1, ncust + 1)))
    d0 = 8035  # 1992-01-01 as days since 1970-01-01
    span = 2405  # to 1998-08-02, the last order date
    lines = 0

    def day(d: int) -> str:
        return str(np.datetime64(d, "D"))

    orders, items = [], []
    for o in range(1, nord + 1):
        od = d0 + rng.randrange(span - 151)
        total = 0.0
        for ln in range(1, rng.randint(1, 7) + 1):
            q = rng.randint(1, 50)
            price = q * rng.uniform(900.0, 2100.0)
            disc, tax = rng.randint(0, 10) / 100, rng.randint(0, 8) / 100
            sd = od + rng.randint(1, 121)
            rd = sd + rng.randint(1, 30)
            flag = ("R" if rng.random() < 0.5 else "A") if rd <= 9298 else "N"  # 1995-06-17
            status = "O" if sd > 9298 else "F"
            items.append((o, ln, rng.randrange(1, 200_000), q, round(price, 2), disc, tax,
                          flag, status, day(sd), day(od + rng.randint(30, 90)), day(rd),
                          rng.choice(["REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL",
                                      "FOB"])))
            total += price * (1 + tax) * (1 - disc)
            lines += 1
        orders.append((o, rng.randrange(1, ncust + 1), "F", round(total, 2), day(od),
                       rng.choice(["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED",
                                   "5-LOW"]), 0))
        if len(items) > 50_000:
            db.executemany("INSERT INTO lineitem VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", items)
            db.executemany("INSERT INTO orders VALUES (?,?,?,?,?,?,?)", orders)
            items, orders = [], []
    db.executemany("INSERT INTO lineitem VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", items)
    db.executemany("INSERT INTO orders VALUES (?,?,?,?,?,?,?)", orders)
    db.execute("CREATE INDEX l_ok ON lineitem (l_orderkey)")
    db.commit()
    db.close()
    return {"customers": ncust, "orders": nord, "lineitems": lines}


TPCH_QUERIES = {
    # Q1: pricing summary report (DELTA = 90 days).
    "q1": """SELECT l_returnflag, l_linestatus, sum(l_quantity), sum(l_extendedprice),
        sum(l_extendedprice * (1 - l_discount)),
        sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)), avg(l_quantity),
        avg(l_extendedprice), avg(l_discount), count(*)
        FROM lineitem WHERE l_shipdate <= date('1998-12-01', '-90 day')
        GROUP BY l_returnflag, l_linestatus ORDER BY l_returnflag, l_linestatus""",
    # Q3: shipping priority (SEGMENT = BUILDING, DATE = 1995-03-15).
    "q3": """SELECT l_orderkey, sum(l_extendedprice * (1 - l_discount)) AS revenue,
        o_orderdate, o_shippriority FROM customer, orders, lineitem
        WHERE c_mktsegment = 'BUILDING' AND c_custkey = o_custkey
          AND l_orderkey = o_orderkey AND o_orderdate < '1995-03-15'
          AND l_shipdate > '1995-03-15'
        GROUP BY l_orderkey, o_orderdate, o_shippriority
        ORDER BY revenue DESC, o_orderdate LIMIT 10""",
    # Q6: forecasting revenue change (DATE = 1994-01-01, DISCOUNT = 0.06, QUANTITY = 24).
    "q6": """SELECT sum(l_extendedprice * l_discount) AS revenue FROM lineitem
        WHERE l_shipdate >= '1994-01-01' AND l_shipdate < '1995-01-01'
          AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24""",
}

_SQL_SCRIPT = """\
import json, sqlite3, sys, time
db = sqlite3.connect(sys.argv[1])
db.execute("PRAGMA cache_size = -%d" % int(sys.argv[2]))
queries = json.loads(open(sys.argv[3]).read())
for name in sys.argv[4].split(","):
    t0 = time.perf_counter()
    rows = db.execute(queries[name]).fetchall()
    print(name, len(rows), round(time.perf_counter() - t0, 3), flush=True)
"""


def _sqlite(work: str, scale: float, seed: int, opts: Dict[str, str]) -> Plan:
    import json

    sf = 0.01 * scale
    dbp = os.path.join(work, "tpch.db")
    sizes = make_tpch_db(dbp, sf, seed)
    qf = os.path.join(work, "queries.json")
    with open(qf, "w") as f:
        json.dump(TPCH_QUERIES, f)
    script = os.path.join(work, "tpch.py")
    with open(script, "w") as f:
        f.write(_SQL_SCRIPT)
    queries = opts["queries"]
    for q in queries.split(","):
        if q not in TPCH_QUERIES:
            raise ValueError(f"sqlite-tpch: unknown query '{q}' (known: "
                             f"{', '.join(TPCH_QUERIES)})")
    return Plan(command=[sys.executable, script, dbp, opts["cache_kib"], qf, queries],
                params=dict(sizes, scale_factor=sf, db_bytes=os.path.getsize(dbp),
                            sqlite=sqlite3.sqlite_version, queries=queries))


register(Driver(
    name="sqlite-tpch",
    help="SQLite (Python's sqlite3) running TPC-H-like Q1, Q3, Q6 on generated customer, "
    "orders and lineitem tables at scale factor 0.01 x scale",
    needs={}, modules={"sqlite3": "the Python standard library's sqlite3 (libsqlite3)"},
    prepare=_sqlite,
    versions={"python": [sys.executable, "--version"],
              "sqlite": [sys.executable, "-c", "import sqlite3; print(sqlite3.sqlite_version)"]},
    options={"queries": ("q1,q3,q6", "comma-separated queries"),
             "cache_kib": (8192, "SQLite page cache size in KiB (PRAGMA cache_size)")},
))


# ---------------------------------------------------------------- pagerank


def rmat_edges(log2_n: int, edges: int, seed: int, a: float = 0.57, b: float = 0.19,
               c: float = 0.19) -> np.ndarray:
    """R-MAT (Chakrabarti et al., SDM 2004) with Graph500's probabilities: each edge picks a
    quadrant of the adjacency matrix per bit of the vertex numbers. Returns (edges, 2)."""
    rng = np.random.default_rng(seed)
    src = np.zeros(edges, dtype=np.int64)
    dst = np.zeros(edges, dtype=np.int64)
    for bit in range(log2_n):
        r = rng.random(edges)
        down = r >= a + b  # quadrants c, d: source bit set
        right = ((r >= a) & (r < a + b)) | (r >= a + b + c)  # quadrants b, d
        src |= down.astype(np.int64) << bit
        dst |= right.astype(np.int64) << bit
    # Graph500 permutes vertex numbers so that degree does not follow the number.
    perm = rng.permutation(1 << log2_n)
    return np.stack([perm[src], perm[dst]], axis=1)


_PR_SCRIPT = """\
import sys, time
import igraph
t0 = time.perf_counter()
g = igraph.Graph.Read_Edgelist(sys.argv[1], directed=True)
t1 = time.perf_counter()
pr = g.pagerank(damping=0.85)
top = max(range(len(pr)), key=pr.__getitem__)
print("vertices", g.vcount(), "edges", g.ecount(), "load", round(t1 - t0, 3),
      "pagerank", round(time.perf_counter() - t1, 3), "top", top, flush=True)
"""


def _pagerank(work: str, scale: float, seed: int, opts: Dict[str, str]) -> Plan:
    log2_n = max(15 + int(round(math.log2(scale))), 6)
    ef = int(opts["edge_factor"])
    e = rmat_edges(log2_n, ef << log2_n, seed)
    path = os.path.join(work, "graph.txt")
    np.savetxt(path, e, fmt="%d")
    script = os.path.join(work, "pagerank.py")
    with open(script, "w") as f:
        f.write(_PR_SCRIPT)
    return Plan(command=[sys.executable, script, path],
                params={"graph": "R-MAT a=0.57 b=0.19 c=0.19 (Graph500), permuted",
                        "log2_vertices": log2_n, "edges": int(e.shape[0]),
                        "algorithm": "igraph Graph.pagerank (PRPACK), damping 0.85"})


register(Driver(
    name="pagerank",
    help="igraph's PageRank (C core, PRPACK) on a generated R-MAT graph, 2^15 x scale "
    "vertices, 16 edges per vertex",
    needs={}, modules={"igraph": "pip install igraph, or pip install 'vmemsim[drivers]'"},
    prepare=_pagerank,
    versions={"python": [sys.executable, "--version"],
              "igraph": [sys.executable, "-c", "import igraph; print(igraph.__version__)"]},
    options={"edge_factor": (16, "edges per vertex")},
))

