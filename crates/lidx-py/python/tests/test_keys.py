"""Key sets: generators, SOSD files, samples, hardness, and refusals of bad input."""

import os

import numpy as np
import pytest

import lidx


@pytest.mark.parametrize("dist", lidx.DISTRIBUTIONS)
def test_generate_is_sorted_distinct_and_reproducible(dist):
    a = lidx.generate(dist, 50_000, seed=9)
    assert a.dtype == np.uint64 and a.shape == (50_000,)
    assert lidx.is_sorted(a)
    assert len(np.unique(a)) == len(a)
    assert np.array_equal(a, lidx.generate(dist, 50_000, seed=9))
    if dist != "udense":  # 0, 1, 2, ...: the one set no seed changes
        assert not np.array_equal(a, lidx.generate(dist, 50_000, seed=10))


def test_generate_options():
    a = lidx.generate("lognormal", 10_000, seed=1, duplicates=0.5, extremes=True)
    assert a[0] == 0 and a[-1] == np.iinfo(np.uint64).max
    assert lidx.is_sorted(a) and len(np.unique(a)) < len(a)
    s = lidx.generate("lognormal", 10_000, seed=1, shuffle=True)
    assert not lidx.is_sorted(s)
    assert np.array_equal(np.sort(s), lidx.generate("lognormal", 10_000, seed=1))


def test_generate_refuses_bad_arguments():
    with pytest.raises(lidx.LidxError, match="distribution"):
        lidx.generate("zipfian", 10)
    with pytest.raises(ValueError, match="n"):
        lidx.generate("lognormal", 0)
    with pytest.raises(ValueError):
        lidx.generate("lognormal", -5)
    with pytest.raises(TypeError):
        lidx.generate("lognormal", 10.5)
    with pytest.raises(lidx.LidxError, match="duplicate fraction"):
        lidx.generate("lognormal", 10, duplicates=1.5)


def test_sosd_round_trip(tmp_path):
    keys = lidx.generate("normal", 12_345, seed=2)
    path = tmp_path / "k.keys"
    lidx.write_keys(path, keys)
    assert os.path.getsize(path) == 8 + 8 * len(keys)
    with open(path, "rb") as f:
        assert int.from_bytes(f.read(8), "little") == len(keys)
    assert np.array_equal(lidx.read_keys(path), keys)
    # Plain Python ints, up to 2^64 - 1, are taken as they are.
    lidx.write_keys(path, [0, 3, 2**64 - 1])
    assert lidx.read_keys(path).tolist() == [0, 3, 2**64 - 1]


def test_bad_key_files_raise_naming_the_file(tmp_path):
    missing = tmp_path / "missing.keys"
    with pytest.raises(lidx.LidxError, match="missing.keys"):
        lidx.read_keys(missing)
    truncated = tmp_path / "truncated.keys"
    truncated.write_bytes((10).to_bytes(8, "little") + b"\0" * 20)
    with pytest.raises(lidx.LidxError, match="truncated.keys"):
        lidx.read_keys(truncated)
    short = tmp_path / "short.keys"
    short.write_bytes(b"\1\2\3")
    with pytest.raises(lidx.LidxError, match="short.keys"):
        lidx.read_keys(short)


def test_keys_are_checked_before_any_work(tmp_path):
    path = tmp_path / "k.keys"
    with pytest.raises(ValueError, match="0 ..= 2\\^64 - 1"):
        lidx.write_keys(path, np.array([1, -2, 3]))
    with pytest.raises(TypeError, match="float"):
        lidx.write_keys(path, np.array([1.5, 2.0]))
    with pytest.raises(ValueError, match="one-dimensional"):
        lidx.write_keys(path, np.zeros((2, 2), dtype=np.uint64))
    with pytest.raises(TypeError, match="str"):
        lidx.write_keys(path, [1, "2"])
    with pytest.raises(TypeError, match="bool"):
        lidx.write_keys(path, [True])
    with pytest.raises(ValueError):
        lidx.write_keys(path, [2**64])
    assert not path.exists()


def test_samples():
    keys = lidx.generate("lognormal", 100_000, seed=5)
    every = lidx.sample(keys, every=10)
    assert np.array_equal(every, keys[::10])
    r = lidx.sample(keys, ratio=100, seed=1)
    assert 500 < len(r) < 1500 and lidx.is_sorted(r) and np.isin(r, keys).all()
    assert np.array_equal(r, lidx.sample(keys, ratio=100, seed=1))
    f = lidx.sample(keys, fraction=0.5, seed=1)
    assert 45_000 < len(f) < 55_000
    with pytest.raises(ValueError, match="exactly one"):
        lidx.sample(keys, every=2, ratio=3)
    with pytest.raises(ValueError, match="ratio"):
        lidx.sample(keys, ratio=0.5)
    with pytest.raises(ValueError, match="every"):
        lidx.sample(keys, every=0)
    with pytest.raises(lidx.LidxError, match="fraction"):
        lidx.sample(keys, fraction=1.5)


def test_shuffle_is_a_seeded_permutation():
    keys = np.arange(10_000, dtype=np.uint64)
    s = lidx.shuffle(keys, seed=3)
    assert not np.array_equal(s, keys) and np.array_equal(np.sort(s), keys)
    assert np.array_equal(s, lidx.shuffle(keys, seed=3))
    assert np.array_equal(keys, np.arange(10_000, dtype=np.uint64)), "the input is left alone"


def test_hardness_orders_easy_below_hard():
    easy = np.arange(100_000, dtype=np.uint64) * np.uint64(3)
    hard = lidx.generate_hard(1_000_000, local=1000, global_=4, seed=1)
    h_easy = lidx.hardness(easy)
    h_hard = lidx.hardness(hard)
    assert h_easy["segments"] == {32: 1, 4096: 1}
    assert 500 <= h_hard["segments"][32] <= 2000 and 2 <= h_hard["segments"][4096] <= 8
    assert h_easy["linear_mse"] < 1e-6 < h_hard["linear_mse"]
    with pytest.raises(lidx.LidxError, match="sorted"):
        lidx.hardness(np.array([3, 1, 2], dtype=np.uint64))
