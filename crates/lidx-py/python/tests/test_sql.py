"""lidx.sql: joins through DataFusion give a nested loop's rows whichever join runs, the
cost model's choice shows in the plan, columns come back as numpy arrays, bad input raises."""

import numpy as np
import pytest

import lidx
from conftest import KEY_SETS


def nested_loop(outer, inner):
    out = []
    for i, a in enumerate(outer.tolist()):
        for j, b in enumerate(inner.tolist()):
            if a == b:
                out.append((a, 1_000_000 + i, 2_000_000 + j))
    return sorted(out)


def rows(result, names):
    return sorted(zip(*(result[n].tolist() for n in names)))


@pytest.mark.parametrize("name", ["runs", "two-extremes", "lognormal-duplicates-extremes", "gap"])
@pytest.mark.parametrize("mode", lidx.INDEX_JOIN_MODES)
def test_joins_give_the_nested_loop(tmp_path, name, mode):
    inner = KEY_SETS[name][:3000]
    outer = np.sort(np.concatenate([inner[::7], np.array([1, 2**63], dtype=np.uint64)]))
    lidx.build_table(tmp_path / "r.tbl", outer, np.arange(1_000_000, 1_000_000 + len(outer), dtype=np.uint64))
    lidx.build_table(tmp_path / "s.tbl", inner, np.arange(2_000_000, 2_000_000 + len(inner), dtype=np.uint64))
    result = lidx.sql(
        "SELECT r.key AS k, r.value AS rv, s.value AS sv FROM r JOIN s ON r.key = s.key",
        {"r": tmp_path / "r.tbl", "s": tmp_path / "s.tbl"},
        index_join=mode,
        threads=2,
    )
    assert rows(result, ["k", "rv", "sv"]) == nested_loop(outer, inner)
    assert result["k"].dtype == np.uint64
    if mode == "on":
        assert result.learned_join, result.plan
    if mode == "off":
        assert not result.learned_join, result.plan


def test_the_cost_model_looks_up_few_keys_and_counts_show(tmp_path):
    inner = np.arange(0, 1_400_000, 7, dtype=np.uint64)
    few = inner[::10_000]
    lidx.build_table(tmp_path / "s.tbl", inner)
    lidx.build_table(tmp_path / "r.tbl", few)
    index = lidx.Index.build(inner, "pgm")
    index.save(tmp_path / "s.idx")
    tables = {"r": tmp_path / "r.tbl", "s": tmp_path / "s.tbl"}
    query = "SELECT count(*) AS n FROM r JOIN s ON r.key = s.key"
    plan = lidx.sql(query, tables, indexes={"s": tmp_path / "s.idx"}, explain=True).plan
    assert "LearnedInlj" in plan and f"chosen for {len(few)} outer rows" in plan, plan
    done = lidx.sql(query, tables, indexes={"s": tmp_path / "s.idx"}, analyze=True)
    assert done["n"].tolist() == [len(few)]
    assert f"lookups={len(few)}" in done.plan, done.plan
    # Every key of the inner table against itself: the hash join stays.
    lidx.build_table(tmp_path / "all.tbl", inner)
    plan = lidx.sql(query, {"r": tmp_path / "all.tbl", "s": tmp_path / "s.tbl"}, explain=True).plan
    assert "LearnedInlj" not in plan and "HashJoinExec" in plan, plan


def test_columns_of_every_type_come_back(tmp_path):
    keys = np.arange(10, dtype=np.uint64)
    lidx.build_table(tmp_path / "t.tbl", keys)
    r = lidx.sql(
        "SELECT key, CAST(key AS DOUBLE) / 2 AS half, key > 4 AS big, CAST(key AS VARCHAR) AS text, "
        "CASE WHEN key > 7 THEN NULL ELSE key END AS maybe FROM t ORDER BY key",
        {"t": tmp_path / "t.tbl"},
    )
    assert len(r) == 10
    assert r["half"].tolist() == [k / 2 for k in range(10)]
    assert r["big"].dtype == np.bool_ and r["big"].tolist() == [k > 4 for k in range(10)]
    assert r["text"] == [str(k) for k in range(10)]
    assert r["maybe"] == [str(k) for k in range(8)] + [None, None]
    empty = lidx.sql("SELECT key FROM t WHERE key > 100", {"t": tmp_path / "t.tbl"})
    assert len(empty) == 0 and empty["key"].dtype == np.uint64


def test_bad_input_raises_naming_it(tmp_path):
    lidx.build_table(tmp_path / "t.tbl", np.arange(10, dtype=np.uint64))
    (tmp_path / "x.txt").write_text("not a table")
    t = {"t": tmp_path / "t.tbl"}
    with pytest.raises(lidx.LidxError, match="x.txt"):
        lidx.sql("SELECT * FROM x", {"x": tmp_path / "x.txt"})
    with pytest.raises(lidx.LidxError, match="missing.tbl"):
        lidx.sql("SELECT * FROM m", {"m": tmp_path / "missing.tbl"})
    with pytest.raises(lidx.LidxError, match="nope"):
        lidx.sql("SELECT nope FROM t", t)
    with pytest.raises(lidx.LidxError, match="not supported"):
        lidx.sql("COPY (SELECT * FROM t) TO 'x.csv'", t)
    with pytest.raises(ValueError, match="index_join"):
        lidx.sql("SELECT 1", t, index_join="maybe")
    with pytest.raises(ValueError, match="names no table"):
        lidx.sql("SELECT 1", t, indexes={"u": "u.idx"})
    with pytest.raises(ValueError, match="both"):
        lidx.sql("SELECT 1", t, indexes={"t": "t.idx"}, no_index=["t"])
    with pytest.raises(ValueError, match="io_depth"):
        lidx.sql("SELECT 1", t, io_depth=0)
    with pytest.raises(lidx.LidxError, match="t.tbl"):
        # An index of another table.
        lidx.Index.build(np.arange(11, dtype=np.uint64), "pgm").save(tmp_path / "other.idx")
        lidx.sql("SELECT * FROM t", t, indexes={"t": tmp_path / "other.idx"})
