"""Joins of table files against a nested-loop reference, by every method."""

import collections

import numpy as np
import pytest

import lidx

SORTED_METHODS = ["auto", "merge", "hash", "grace", "inlj:pgm", "inlj:sampled-pgm", "inlj:rs", "inlj:rmi", "inlj:btree", "inlj:binary", "inlj:alex"]
UNSORTED_METHODS = ["partition", "btree-inserts", "sort-merge", "hash", "grace"]


def reference(outer_keys, outer_values, inner_keys, inner_values):
    """The join as a multiset of (key, outer value, inner value): every pair of equal keys."""
    by_key = collections.defaultdict(list)
    for k, v in zip(inner_keys.tolist(), inner_values.tolist()):
        by_key[k].append(v)
    return collections.Counter((k, ov, iv) for k, ov in zip(outer_keys.tolist(), outer_values.tolist()) for iv in by_key.get(k, ()))


def as_counter(result):
    return collections.Counter(zip(result.keys.tolist(), result.outer_values.tolist(), result.inner_values.tolist()))


@pytest.fixture(scope="module")
def sorted_tables(tmp_path_factory):
    d = tmp_path_factory.mktemp("sorted")
    inner = lidx.generate("lognormal", 60_000, seed=1, duplicates=0.2)
    outer = np.sort(np.concatenate([lidx.sample(inner, ratio=10, seed=2), np.array([0, 2**64 - 1], dtype=np.uint64)]))
    lidx.build_table(d / "inner.tbl", inner)
    lidx.build_table(d / "outer.tbl", outer, outer * np.uint64(3))
    want = reference(outer, outer * np.uint64(3), inner, np.arange(len(inner), dtype=np.uint64))
    return d, want


@pytest.mark.parametrize("method", SORTED_METHODS)
def test_sorted_join_matches_nested_loops(sorted_tables, method):
    d, want = sorted_tables
    r = lidx.join(d / "outer.tbl", d / "inner.tbl", method)
    assert as_counter(r) == want
    assert r.output_tuples == sum(want.values())
    assert r.record["outer_tuples"] > 0 and r.record["join_s"] >= 0
    if method != "auto":
        assert r.method == method


@pytest.mark.parametrize("method", UNSORTED_METHODS)
def test_unsorted_join_matches_nested_loops(tmp_path, method):
    inner = lidx.generate("normal", 40_000, seed=3, shuffle=True)
    outer = lidx.shuffle(lidx.sample(np.sort(inner), ratio=4, seed=4), seed=5)
    lidx.build_table(tmp_path / "inner.tbl", inner)
    lidx.build_table(tmp_path / "outer.tbl", outer)
    r = lidx.join(tmp_path / "outer.tbl", tmp_path / "inner.tbl", method, memory_budget=8 << 20)
    want = reference(outer, np.arange(len(outer), dtype=np.uint64), inner, np.arange(len(inner), dtype=np.uint64))
    assert as_counter(r) == want


def test_count_only_and_out(sorted_tables, tmp_path):
    d, want = sorted_tables
    counted = lidx.join(d / "outer.tbl", d / "inner.tbl", "merge", count_only=True)
    assert counted.keys is None and counted.output_tuples == sum(want.values())
    out = tmp_path / "o.tbl"
    written = lidx.join(d / "outer.tbl", d / "inner.tbl", "hash", out=out)
    assert lidx.Table.open(out).is_join_output and as_counter(written) == want
    with pytest.raises(ValueError, match="not both"):
        lidx.join(d / "outer.tbl", d / "inner.tbl", "merge", out=out, count_only=True)


def test_a_saved_index_is_used_and_checked(sorted_tables, tmp_path):
    d, want = sorted_tables
    lidx.Index.build_from_table(d / "inner.tbl", "pgm").save(tmp_path / "i.idx")
    r = lidx.join(d / "outer.tbl", d / "inner.tbl", "inlj:pgm", index=tmp_path / "i.idx")
    assert as_counter(r) == want
    lidx.Index.build(np.arange(10, dtype=np.uint64), "pgm").save(tmp_path / "other.idx")
    with pytest.raises(lidx.LidxError, match="other.idx"):
        lidx.join(d / "outer.tbl", d / "inner.tbl", "inlj:pgm", index=tmp_path / "other.idx")


def test_bad_joins_raise_and_write_nothing(sorted_tables, tmp_path):
    d, _ = sorted_tables
    out = tmp_path / "o.tbl"
    with pytest.raises(lidx.LidxError, match="method"):
        lidx.join(d / "outer.tbl", d / "inner.tbl", "nested-loops", out=out)
    with pytest.raises(lidx.LidxError, match="missing.tbl"):
        lidx.join(d / "outer.tbl", tmp_path / "missing.tbl", "merge", out=out)
    lidx.build_table(tmp_path / "u.tbl", [3, 1, 2])
    with pytest.raises(lidx.LidxError, match="u.tbl"):
        lidx.join(d / "outer.tbl", tmp_path / "u.tbl", "merge", out=out)
    assert not out.exists()
    with pytest.raises(ValueError, match="threads"):
        lidx.join(d / "outer.tbl", d / "inner.tbl", "merge", threads=0)
