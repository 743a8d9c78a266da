"""Updatable indexes as mappings, against a dict, through every kind."""

import numpy as np
import pytest

import lidx

U64_MAX = 2**64 - 1


@pytest.mark.parametrize("kind", lidx.UPDATABLE_KINDS)
def test_a_random_history_answers_as_a_dict(kind):
    rng = np.random.default_rng(5)
    keys = rng.integers(0, 1 << 40, 3000, dtype=np.uint64)
    index = lidx.UpdatableIndex(kind, keys, keys * np.uint64(2))
    model = {int(k): int(k) * 2 for k in keys}
    assert len(index) == len(model) and index.kind == kind
    for step in range(4000):
        key = int(rng.integers(0, 1 << 40)) if step % 4 else int(keys[step % len(keys)])
        op = step % 5
        if op in (0, 1):
            index[key] = step
            model[key] = step
        elif op == 2:
            if key in model:
                del index[key]
                del model[key]
            else:
                with pytest.raises(KeyError):
                    del index[key]
        else:
            assert index.get(key) == model.get(key)
    assert len(index) == len(model)
    assert list(index) == sorted(model)
    assert dict(index.items()) == model
    index.check_structure()
    assert index.size_in_bytes > 0 and set(index.counters()) >= {"nodes_traversed", "keys_shifted"}


@pytest.mark.parametrize("kind", lidx.UPDATABLE_KINDS)
def test_bulk_operations_on_arrays(kind):
    index = lidx.UpdatableIndex(kind, [5, 1, 5, U64_MAX], [50, 10, 55, 7])  # the last 5 wins
    assert len(index) == 3 and index[5] == 55 and index[U64_MAX] == 7
    new = np.arange(100, 200, dtype=np.uint64)
    index.insert_many(new, new + np.uint64(1))
    payloads, found = index.get_many(np.array([1, 2, 150, U64_MAX], dtype=np.uint64))
    assert found.tolist() == [True, False, True, True] and payloads.tolist() == [10, 0, 151, 7]
    assert index.remove_many(np.array([1, 2, 3, 150], dtype=np.uint64)) == 2
    assert len(index) == 3 + 100 - 2
    k, p = index.scan(100, 3)
    assert k.tolist() == [100, 101, 102] and p.tolist() == [101, 102, 103]
    assert index.scan(U64_MAX, 5)[0].tolist() == [U64_MAX]
    assert list(index)[-1] == U64_MAX


def test_empty_and_bad_input():
    index = lidx.UpdatableIndex("lipp")
    assert len(index) == 0 and list(index) == [] and 3 not in index
    index[3] = 4
    assert index[3] == 4 and -1 not in index and "x" not in index
    with pytest.raises(ValueError):
        index[-1] = 3
    with pytest.raises(ValueError):
        index[2**64] = 3
    with pytest.raises(ValueError, match="unknown updatable kind"):
        lidx.UpdatableIndex("skiplist")
    with pytest.raises(ValueError, match="3 keys but 2 payloads"):
        lidx.UpdatableIndex("alex", [1, 2, 3], [1, 2])
