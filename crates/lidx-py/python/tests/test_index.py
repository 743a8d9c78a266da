"""Static indexes against numpy's searchsorted, on adversarial keys, and their files."""

import numpy as np
import pytest

import lidx
from conftest import KEY_SETS, queries_for

KINDS = sorted(lidx.INDEX_KINDS)


@pytest.mark.parametrize("kind", KINDS)
def test_windows_hold_the_lower_bound(kind, key_set):
    name, keys = key_set
    index = lidx.Index.build(keys, kind)
    assert len(index) == len(keys) and index.kind == kind
    q = queries_for(keys)
    lo, hi = index.search(q)
    truth = np.searchsorted(keys, q, side="left")
    assert ((lo <= truth) & (truth <= hi) & (hi <= len(keys))).all(), name
    assert ((hi - lo) <= index.max_width).all()
    assert np.array_equal(index.lower_bound(keys, q), truth)


@pytest.mark.parametrize("kind", KINDS)
def test_threads_change_nothing(kind):
    keys = KEY_SETS["lognormal"]
    index = lidx.Index.build(keys, kind)
    q = np.tile(queries_for(keys), 3)  # enough queries to split across threads
    one = index.search(q, threads=1)
    many = index.search(q, threads=4)
    assert np.array_equal(one[0], many[0]) and np.array_equal(one[1], many[1])


def test_parameters_set_the_width():
    keys = KEY_SETS["lognormal"]
    narrow = lidx.Index.build(keys, "pgm", epsilon=8)
    wide = lidx.Index.build(keys, "pgm", epsilon=512)
    assert narrow.max_width < wide.max_width and narrow.size_in_bytes > wide.size_in_bytes
    assert "eps=8" in narrow.params
    assert lidx.Index.build(keys, "btree", every=64).max_width <= 64
    rmi = lidx.Index.build(keys, "rmi", root="cubic", branching=1024)
    assert "cubic" in rmi.params


def test_bad_parameters_raise_before_building():
    keys = KEY_SETS["dense"]
    with pytest.raises(ValueError, match="btree takes no epsilon; it takes every"):
        lidx.Index.build(keys, "btree", epsilon=3)
    with pytest.raises(ValueError, match="unknown index kind"):
        lidx.Index.build(keys, "art")
    with pytest.raises(ValueError, match="epsilon"):
        lidx.Index.build(keys, "pgm", epsilon=-1)
    with pytest.raises(lidx.LidxError, match="epsilon"):
        lidx.Index.build(keys, "pgm", epsilon=0)
    with pytest.raises(lidx.LidxError, match="root"):
        lidx.Index.build(keys, "rmi", root="quartic")
    with pytest.raises(ValueError, match="threads"):
        lidx.Index.build(keys, "pgm", threads=0)


def test_unsorted_keys_raise():
    with pytest.raises(lidx.LidxError, match="sorted"):
        lidx.Index.build(np.array([1, 3, 2], dtype=np.uint64), "pgm")


def test_lower_bound_refuses_other_keys():
    keys = KEY_SETS["dense"]
    index = lidx.Index.build(keys, "pgm")
    with pytest.raises(ValueError, match="not on these"):
        index.lower_bound(keys[:-1], keys)


@pytest.mark.parametrize("kind", KINDS)
def test_save_and_load(tmp_path, kind):
    keys = KEY_SETS["clustered"]
    index = lidx.Index.build(keys, kind)
    path = tmp_path / f"{kind}.idx"
    index.save(path)
    loaded = lidx.Index.load(path)
    q = queries_for(keys)
    a, b = index.search(q), loaded.search(q)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert (loaded.kind, loaded.params, loaded.size_in_bytes) == (index.kind, index.params, index.size_in_bytes)


def test_index_of_a_table_file(tmp_path):
    keys = KEY_SETS["normal"]
    lidx.build_table(tmp_path / "s.tbl", keys)
    index = lidx.Index.build_from_table(tmp_path / "s.tbl", "sampled-pgm")
    lo, hi = index.search(keys)
    truth = np.arange(len(keys))
    assert ((lo <= truth) & (truth <= hi)).all()
    lidx.build_table(tmp_path / "u.tbl", lidx.shuffle(keys))
    with pytest.raises(lidx.LidxError, match="u.tbl: the table is not sorted"):
        lidx.Index.build_from_table(tmp_path / "u.tbl", "pgm")


def test_corrupt_index_files_raise_naming_the_file(tmp_path):
    keys = KEY_SETS["dense"]
    path = tmp_path / "x.idx"
    lidx.Index.build(keys, "pgm").save(path)
    data = bytearray(path.read_bytes())
    for where in (0, len(data) // 2, len(data) - 1):
        bad = bytearray(data)
        bad[where] ^= 0x40
        broken = tmp_path / f"broken{where}.idx"
        broken.write_bytes(bytes(bad))
        with pytest.raises(lidx.LidxError, match=f"broken{where}.idx"):
            lidx.Index.load(broken)
    cut = tmp_path / "cut.idx"
    cut.write_bytes(bytes(data[: len(data) // 3]))
    with pytest.raises(lidx.LidxError, match="cut.idx"):
        lidx.Index.load(cut)


def test_python_threads_share_an_index():
    """Searches from several Python threads at once (each releases the GIL) answer as one
    thread does."""
    from concurrent.futures import ThreadPoolExecutor

    keys = KEY_SETS["lognormal-duplicates-extremes"]
    index = lidx.Index.build(keys, "sampled-pgm")
    q = np.tile(queries_for(keys), 4)
    want = index.lower_bound(keys, q, threads=1)
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda _: index.lower_bound(keys, q, threads=2), range(8)))
    assert all(np.array_equal(g, want) for g in got)
