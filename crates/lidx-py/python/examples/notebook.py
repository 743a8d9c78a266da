# %% [markdown]
# # lidx in a notebook
#
# Build a learned index over a million keys, join two tables on disk through it, run one of
# the papers' studies and plot its rows. Run it as a script (`python notebook.py`), or open
# it as a notebook: VS Code runs its `# %%` cells, and `jupytext --to notebook notebook.py`
# makes a Jupyter notebook of it. Everything it writes goes to one temporary directory.
#
# Needs the package (`pip install .` from a clone, which installs the `lidx` command the
# study runs too) and matplotlib.

# %%
import os
import tempfile

import matplotlib

matplotlib.use("Agg")  # files, not windows; a notebook shows them inline anyway
import matplotlib.pyplot as plt
import numpy as np

import lidx

work = tempfile.mkdtemp(prefix="lidx-notebook-")
print("writing to", work)

# %% [markdown]
# ## A learned index over a million keys
#
# Every index answers a window of positions that holds each query's lower bound; one call
# searches every query, on all cores.

# %%
keys = lidx.generate("lognormal", 1_000_000, seed=42)
index = lidx.Index.build(keys, "pgm", epsilon=64)
queries = lidx.sample(keys, ratio=100, seed=1)
lo, hi = index.search(queries)
positions = index.lower_bound(keys, queries)
assert (positions == np.searchsorted(keys, queries)).all()
print(index)
print(f"{len(queries)} queries, mean window {np.mean(hi - lo):.1f} positions")

# %% [markdown]
# ## A join of two tables on disk
#
# The same files `lidx join` reads: an index nested loop join through the saved index,
# beside a sort-merge join; both outputs come back as arrays, with every figure of the run.

# %%
inner, outer, saved = (os.path.join(work, f) for f in ("s.tbl", "r.tbl", "s.idx"))
lidx.build_table(inner, keys)
lidx.build_table(outer, queries)
index.save(saved)
through_index = lidx.join(outer, inner, "inlj:pgm", index=saved)
merged = lidx.join(outer, inner, "merge")
assert through_index.output_tuples == merged.output_tuples == len(queries)
assert (np.sort(through_index.keys) == np.sort(merged.keys)).all()
for r in (through_index, merged):
    print(f"{r.method:>10}: {r.output_tuples} tuples, {r.record['inner_blocks']} inner blocks read")

# %% [markdown]
# ## One of the papers' studies, its rows plotted
#
# Paper 3's updatable indexes at a small size: `lidx.experiment` runs the study as the
# command line does and returns its CSV's rows (and `.frame()` with pandas).

# %%
study = lidx.experiment(
    "updatable",
    out_dir=os.path.join(work, "updatable"),
    n="50K",
    ops="5K",
    local=[4, 64],
    global_=[1],
    sets=["lognormal"],
    kinds=["alex", "lipp", "btree"],
    repeat=1,
)
rows = [r for r in study.rows if r["part"] == "heatmap" and r["workload"] == "read-only"]
sets = sorted({r["set"] for r in rows})
kinds = sorted({r["kind"] for r in rows})
fig, ax = plt.subplots(figsize=(7, 4))
width = 0.8 / len(kinds)
for i, kind in enumerate(kinds):
    speeds = [next(r["ops_per_s"] for r in rows if r["set"] == s and r["kind"] == kind) / 1e6 for s in sets]
    ax.bar(np.arange(len(sets)) + i * width, speeds, width, label=kind)
ax.set_xticks(np.arange(len(sets)) + width * (len(kinds) - 1) / 2, sets)
ax.set_ylabel("million lookups / s")
ax.set_title("read-only throughput (paper 3, 50K keys)")
ax.legend()
plot = os.path.join(work, "read-only.png")
fig.savefig(plot, dpi=100)
print(f"{len(study.rows)} rows; plotted {len(rows)} to {plot}")
