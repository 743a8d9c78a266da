"""Tables: written from arrays, read back, and refused when broken."""

import numpy as np
import pytest

import lidx


def test_round_trip(tmp_path):
    keys = lidx.generate("lognormal", 30_000, seed=1)
    values = np.arange(len(keys), dtype=np.uint64)[::-1].copy()
    t = lidx.build_table(tmp_path / "t.tbl", keys, values)
    assert len(t) == len(keys) and t.sorted and not t.is_join_output
    assert t.key_range == (int(keys[0]), int(keys[-1]))
    k, v = lidx.Table.open(tmp_path / "t.tbl").columns()
    assert np.array_equal(k, keys) and np.array_equal(v, values)
    assert np.array_equal(t.keys(), keys)
    assert t.verify() == len(keys)


def test_default_values_are_row_numbers_and_order_is_kept(tmp_path):
    keys = lidx.shuffle(np.arange(5000, dtype=np.uint64) * np.uint64(7))
    t = lidx.build_table(tmp_path / "u.tbl", keys)
    assert not t.sorted
    k, v = t.columns()
    assert np.array_equal(k, keys) and np.array_equal(v, np.arange(5000))


def test_empty_table(tmp_path):
    t = lidx.build_table(tmp_path / "e.tbl", [])
    assert len(t) == 0 and t.key_range is None and len(t.keys()) == 0


def test_mismatched_values_leave_no_file(tmp_path):
    with pytest.raises(ValueError, match="3 keys but 2 values"):
        lidx.build_table(tmp_path / "t.tbl", [1, 2, 3], [1, 2])
    assert not (tmp_path / "t.tbl").exists()


def test_corrupt_tables_raise_naming_the_file(tmp_path):
    keys = np.arange(2000, dtype=np.uint64)
    lidx.build_table(tmp_path / "t.tbl", keys)
    data = bytearray((tmp_path / "t.tbl").read_bytes())
    data[4096 + 100] ^= 1  # a data block
    (tmp_path / "bad.tbl").write_bytes(bytes(data))
    with pytest.raises(lidx.LidxError, match="bad.tbl"):
        lidx.Table.open(tmp_path / "bad.tbl").keys()
    (tmp_path / "head.tbl").write_bytes(b"not a table at all")
    with pytest.raises(lidx.LidxError, match="head.tbl"):
        lidx.Table.open(tmp_path / "head.tbl")


def test_output_columns_of_a_pair_table_raise(tmp_path):
    t = lidx.build_table(tmp_path / "t.tbl", [1, 2, 3])
    with pytest.raises(lidx.LidxError, match="join output"):
        t.output_columns()
