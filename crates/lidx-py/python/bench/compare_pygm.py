"""lidx's PGM from Python beside PyGM (the PGM-index's own Python binding) and numpy, on the
same keys in one run: build time, and the time to find the lower bound of every query.

    pip install . pygm            # lidx from this repository, PyGM from PyPI
    python crates/lidx-py/python/bench/compare_pygm.py --n 10M --queries 1M --out pygm.csv

PyGM answers one key per call (``SortedList.bisect_left``), so its lookups run in a Python
loop; lidx and numpy take the whole array in one call. PyGM builds from the same numpy
array (through its buffer, as uint64), with its defaults: ε = 64, ε of the upper levels 4.
All give the same positions (checked). Each figure is the median of ``--repeat`` runs; the
CSV has one row per run.
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import statistics
import sys
import time

import numpy as np

import lidx


def count(text: str) -> int:
    """``10M``, ``1e6``, ``250000``."""
    t = text.strip().upper()
    scale = {"K": 10**3, "M": 10**6, "G": 10**9}.get(t[-1:], 1)
    value = float(t[:-1] if scale > 1 else t) * scale
    if not (1 <= value <= 2**40) or value != int(value):
        raise argparse.ArgumentTypeError(f"{text}: not a count from 1 to 2^40")
    return int(value)


def timed(run):
    started = time.perf_counter()
    out = run()
    return time.perf_counter() - started, out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=count, default=count("10M"), help="keys (default 10M)")
    p.add_argument("--queries", type=count, default=count("1M"), help="lookups (default 1M)")
    p.add_argument("--dist", default="lognormal", choices=lidx.DISTRIBUTIONS)
    p.add_argument("--epsilon", type=int, default=64, choices=range(1, 1 << 20), metavar="EPSILON",
                   help="PGM error bound (default 64, PyGM's)")
    p.add_argument("--repeat", type=int, default=3, choices=range(1, 101), metavar="1..100")
    p.add_argument("--out", help="CSV file, one row per measurement")
    a = p.parse_args()
    try:
        import pygm
    except ImportError:
        print("compare_pygm: PyGM is not installed; `pip install pygm` first", file=sys.stderr)
        return 1

    keys = lidx.generate(a.dist, a.n, seed=42)
    queries = lidx.sample(keys, fraction=min(1.0, a.queries / a.n), seed=7)
    queries = lidx.shuffle(queries, seed=8)[: a.queries]
    query_list = queries.tolist()
    threads = os.cpu_count() or 1
    machine = f"{platform.processor() or platform.machine()}, {threads} cores, Python {platform.python_version()}"
    systems = {
        "lidx pgm, 1 thread": (
            lambda: lidx.Index.build(keys, "pgm", epsilon=a.epsilon, threads=1),
            lambda index: index.lower_bound(keys, queries, threads=1),
            lambda index: index.size_in_bytes,
        ),
        f"lidx pgm, {threads} threads": (
            lambda: lidx.Index.build(keys, "pgm", epsilon=a.epsilon, threads=threads),
            lambda index: index.lower_bound(keys, queries, threads=threads),
            lambda index: index.size_in_bytes,
        ),
        "numpy searchsorted": (
            lambda: keys,  # nothing to build
            lambda k: np.searchsorted(k, queries, side="left"),
            lambda k: 0,
        ),
        "pygm SortedList": (
            lambda: pygm.SortedList(keys, epsilon=a.epsilon),
            lambda sl: [sl.bisect_left(q) for q in query_list],
            lambda sl: sl.stats()["index size"],
        ),
    }
    truth = np.searchsorted(keys, queries, side="left")
    rows = []
    for name, (build, lookup, index_bytes) in systems.items():
        for run in range(a.repeat):
            build_s, built = timed(build)
            lookup_s, found = timed(lambda: lookup(built))
            if not np.array_equal(np.asarray(found, dtype=np.uint64), truth):
                print(f"compare_pygm: {name} answered wrong positions", file=sys.stderr)
                return 1
            rows.append(
                dict(system=name, run=run, dist=a.dist, n=a.n, queries=len(queries), epsilon=a.epsilon,
                     build_s=build_s, lookup_s=lookup_s, index_bytes=index_bytes(built), ns_per_lookup=1e9 * lookup_s / len(queries), machine=machine)
            )
    print(f"{a.n} {a.dist} keys, {len(queries)} lookups, epsilon {a.epsilon}; medians of {a.repeat}; {machine}")
    print(f"{'system':<24} {'build s':>9} {'index bytes':>12} {'ns/lookup':>10} {'lookups vs pygm':>16}")
    pygm_ns = statistics.median(r["ns_per_lookup"] for r in rows if r["system"] == "pygm SortedList")
    for name in systems:
        mine = [r for r in rows if r["system"] == name]
        b = statistics.median(r["build_s"] for r in mine)
        ns = statistics.median(r["ns_per_lookup"] for r in mine)
        size = mine[0]["index_bytes"]
        print(f"{name:<24} {b:>9.3f} {size:>12} {ns:>10.1f} {pygm_ns / ns:>15.1f}x")
    if a.out:
        tmp = a.out + ".tmp"
        with open(tmp, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        os.replace(tmp, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
