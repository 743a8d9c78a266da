"""Key-value files: every layout against a dict, counted reads, and bad input."""

import numpy as np
import pytest

import lidx


def records(n=5000, seed=1):
    rng = np.random.default_rng(seed)
    keys = sorted({f"user{int(x):012d}".encode() for x in rng.integers(0, 10**12, n)})
    return {k: (b"v" + k[::-1]) * int(1 + rng.integers(0, 8)) for k in keys}


@pytest.mark.parametrize("layout", lidx.KV_LAYOUTS)
def test_every_layout_answers_as_a_dict(tmp_path, layout):
    recs = records()
    path = tmp_path / f"{layout}.kv"
    report = lidx.build_kv(path, list(recs.items())[::-1], layout, block_size=4096)  # any order
    assert report["records"] == len(recs)
    f = lidx.KvFile(path, cache_bytes=0)
    assert len(f) == len(recs) and f.layout == layout
    keys = sorted(recs)
    for k in keys[::97]:
        assert f[k] == recs[k]
    assert f.get(b"user" + b"9" * 13) is None and b"zzz" not in f
    with pytest.raises(KeyError):
        f[b"absent"]
    assert f.get_many([keys[0], b"nope", keys[-1]]) == [recs[keys[0]], None, recs[keys[-1]]]
    start = keys[100][:-1]  # not a key: the scan starts at the next one
    want = [(k, recs[k]) for k in keys if k >= start][:50]
    assert f.scan(start, 50) == want
    assert f.scan(b"\xff", 10) == [] and f.scan(b"", 0) == []
    s = f.stats()
    assert s["data_block_reads"] > 0 and s["io"]["reads"] > 0
    f.reset_stats()
    assert f.stats()["data_block_reads"] == 0
    assert f.verify()["records"] == len(recs)


def test_cached_reads_read_nothing_again(tmp_path):
    recs = records(2000)
    lidx.build_kv(tmp_path / "a.kv", recs, "sstable", block_size=4096)
    f = lidx.KvFile(tmp_path / "a.kv", cache_bytes=64 << 20)
    k = sorted(recs)[500]
    f.get(k)
    first = f.stats()["data_block_reads"]
    f.get(k)
    assert f.stats()["data_block_reads"] == first


def test_keys_of_every_type(tmp_path):
    lidx.build_kv(tmp_path / "i.kv", [(3, b"three"), (2**64 - 1, "max"), (0, b"zero")], "learned")
    f = lidx.KvFile(tmp_path / "i.kv")
    assert f[3] == b"three" and f[2**64 - 1] == b"max" and f[0] == b"zero"
    assert [k for k, _ in f.scan(0, 10)] == [(0).to_bytes(8, "big"), (3).to_bytes(8, "big"), b"\xff" * 8]


def test_a_tuned_file_under_a_profile(tmp_path):
    recs = records(3000)
    report = lidx.build_kv(tmp_path / "t.kv", recs, "tuned", block_size=4096, profile="nfs")
    assert report["tuned"] is not None
    f = lidx.KvFile(tmp_path / "t.kv", cache_bytes=0, profile="nfs")
    f.get(sorted(recs)[7])
    io = f.stats()["io"]
    assert io["reads"] > 0 and io["modelled_ns"] > 0
    plain = lidx.KvFile(tmp_path / "t.kv", cache_bytes=0)
    plain.get(sorted(recs)[7])
    assert plain.stats()["io"]["modelled_ns"] == 0


def test_bad_input_raises_and_writes_nothing(tmp_path):
    out = tmp_path / "x.kv"
    with pytest.raises(lidx.LidxError, match="more than once|duplicate|appears"):
        lidx.build_kv(out, [(b"a", b"1"), (b"a", b"2")])
    with pytest.raises(lidx.LidxError, match="profile"):
        lidx.build_kv(out, [(b"a", b"1")], "sstable", profile="nfs")
    with pytest.raises(lidx.LidxError, match="max block"):
        lidx.build_kv(out, [(b"a", b"1")], "btree", max_block=1 << 20)
    with pytest.raises(lidx.LidxError, match="block size"):
        lidx.build_kv(out, [(b"a", b"1")], block_size=10)
    with pytest.raises(ValueError, match="layout"):
        lidx.build_kv(out, [(b"a", b"1")], "lsm")
    with pytest.raises(TypeError, match="pairs"):
        lidx.build_kv(out, [b"abc"])
    with pytest.raises(TypeError):
        lidx.build_kv(out, [(1.5, b"x")])
    assert not out.exists()
    (tmp_path / "junk.kv").write_bytes(b"\0" * 100)
    with pytest.raises(lidx.LidxError, match="junk.kv"):
        lidx.KvFile(tmp_path / "junk.kv")


class Column(list):
    def tolist(self):
        return list(self)


class Frame:
    """What build_kv reads of a pandas frame (pandas is optional and not installed here)."""

    iloc = None

    def __init__(self, data):
        self.data = data
        self.columns = list(data)

    def __getitem__(self, column):
        return Column(self.data[column])


def test_frames(tmp_path):
    lidx.build_kv(tmp_path / "f.kv", Frame({"k": ["b", "a"], "v": ["2", "1"]}), "sstable")
    assert lidx.KvFile(tmp_path / "f.kv").scan(b"", 5) == [(b"a", b"1"), (b"b", b"2")]
    with pytest.raises(ValueError, match="2 columns|3 columns"):
        lidx.build_kv(tmp_path / "g.kv", Frame({"k": [1], "v": [2], "w": [3]}))


class ArrowColumn:
    def __init__(self, xs):
        self.xs = xs

    def to_pylist(self):
        return list(self.xs)


class ArrowTable:
    """What build_kv reads of a pyarrow table (pyarrow is optional and not installed here)."""

    def __init__(self, data):
        self.data = data
        self.column_names = list(data)
        self.num_columns = len(data)

    def to_pydict(self):
        return self.data

    def column(self, i):
        return ArrowColumn(self.data[self.column_names[i]])


def test_arrow_tables(tmp_path):
    lidx.build_kv(tmp_path / "a.kv", ArrowTable({"k": [b"y", b"x"], "v": [b"2", b"1"]}), "btree")
    assert lidx.KvFile(tmp_path / "a.kv").scan(b"", 5) == [(b"x", b"1"), (b"y", b"2")]
