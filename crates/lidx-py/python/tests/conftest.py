"""Shared fixtures: adversarial key sets every part is checked on."""

import numpy as np
import pytest

import lidx

U64_MAX = np.iinfo(np.uint64).max


def adversarial_key_sets():
    """Sorted key sets that break careless indexes: tiny, duplicate runs, the extremes of
    the key space, gaps, and the synthetic distributions."""
    rng = np.random.default_rng(7)
    sets = {
        "one": np.array([5], dtype=np.uint64),
        "two-extremes": np.array([0, U64_MAX], dtype=np.uint64),
        "all-equal": np.full(3000, 17, dtype=np.uint64),
        "runs": np.sort(rng.integers(0, 50, 5000, dtype=np.uint64)),
        "top-of-range": np.arange(U64_MAX - 4999, U64_MAX, dtype=np.uint64),
        "dense": np.arange(10_000, dtype=np.uint64),
        "gap": np.concatenate([np.arange(1000, dtype=np.uint64), np.arange(1 << 62, (1 << 62) + 1000, dtype=np.uint64)]),
    }
    for dist in lidx.DISTRIBUTIONS:
        sets[dist] = lidx.generate(dist, 20_000, seed=3)
    sets["lognormal-duplicates-extremes"] = lidx.generate("lognormal", 20_000, seed=4, duplicates=0.3, extremes=True)
    return sets


KEY_SETS = adversarial_key_sets()


def queries_for(keys):
    """Every key, its neighbours, the ends of the key space and random keys."""
    rng = np.random.default_rng(11)
    k = keys.astype(np.uint64)
    around = np.concatenate([k, k + np.uint64(1), k - np.uint64(1)])  # wraps at the ends on purpose
    ends = np.array([0, 1, U64_MAX - 1, U64_MAX], dtype=np.uint64)
    random = rng.integers(0, U64_MAX, 2000, dtype=np.uint64, endpoint=True)
    return np.concatenate([around, ends, random])


@pytest.fixture(params=sorted(KEY_SETS))
def key_set(request):
    return request.param, KEY_SETS[request.param]
