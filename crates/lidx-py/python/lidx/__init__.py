"""lidx: learned indexes on data that lives on disk, from Python.

Key sets are numpy ``uint64`` arrays; indexes, tables and joins are lidx's own (the Rust
library, through the extension module ``lidx._lidx``), so a notebook gets the same files,
the same figures and the same error messages as the ``lidx`` command line.

>>> import lidx
>>> keys = lidx.generate("lognormal", 1_000_000, seed=42)
>>> index = lidx.Index.build(keys, "pgm", epsilon=64)
>>> lo, hi = index.search(keys[:5])
>>> bool(((lo <= [0, 1, 2, 3, 4]) & ([0, 1, 2, 3, 4] <= hi)).all())
True

Every error lidx reports raises :class:`LidxError` with the one-line message ``lidx``
prints (naming the file and the problem); arguments of the wrong type or out of range
raise ``TypeError`` or ``ValueError`` before any work starts.
"""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Optional, Sequence, Tuple, Union

import numpy as np

from . import _lidx
from ._lidx import LidxError, Table

__version__ = _lidx.__version__

__all__ = [
    "LidxError",
    "Index",
    "Table",
    "JoinResult",
    "DISTRIBUTIONS",
    "INDEX_KINDS",
    "generate",
    "generate_hard",
    "read_keys",
    "write_keys",
    "sample",
    "shuffle",
    "hardness",
    "is_sorted",
    "build_table",
    "join",
    "KV_LAYOUTS",
    "build_kv",
    "KvFile",
    "UPDATABLE_KINDS",
    "UpdatableIndex",
    "ExperimentResult",
    "experiment",
    "SqlResult",
    "sql",
]

PathLike = Union[str, "os.PathLike[str]"]

#: The synthetic distributions :func:`generate` draws from.
DISTRIBUTIONS = ("udense", "usparse", "normal", "lognormal", "clustered", "heavytail")

#: Every static index kind, with the parameters it takes.
INDEX_KINDS = dict(_lidx.kinds())

_U64_MAX = np.iinfo(np.uint64).max
#: The most threads a call may ask for.
MAX_THREADS = 1024


def _keys(array: Any, what: str = "keys") -> np.ndarray:
    """``array`` as a contiguous ``uint64`` array: itself where it already is one (no
    copy), else converted from integers that all fit; anything else raises."""
    if not isinstance(array, np.ndarray):
        # A list of Python ints: numpy would make floats of ints past 2^63, so each is
        # checked and converted as an int.
        items = list(array)
        for x in items:
            if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
                raise TypeError(f"{what}: expected integers, got {type(x).__name__}")
            if not 0 <= x <= _U64_MAX:
                raise ValueError(f"{what}: every key must be in 0 ..= 2^64 - 1, got {x}")
        return np.array(items, dtype=np.uint64)
    if array.ndim != 1:
        raise ValueError(f"{what}: expected a one-dimensional array, got {array.ndim} dimensions")
    if array.dtype == np.uint64:
        return np.ascontiguousarray(array)
    if array.dtype.kind not in "iu":
        raise TypeError(f"{what}: expected integers, got {array.dtype}")
    if array.size and array.dtype.kind == "i" and array.min() < 0:
        raise ValueError(f"{what}: every key must be in 0 ..= 2^64 - 1, got {array.min()}")
    return np.ascontiguousarray(array, dtype=np.uint64)


def _count(value: Any, what: str, low: int = 0, high: int = _U64_MAX) -> int:
    """``value`` as an int in ``low ..= high``, or a ValueError naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what}: expected an integer, got {type(value).__name__}")
    value = int(value)
    if not low <= value <= high:
        raise ValueError(f"{what}: {value} is not in {low} ..= {high}")
    return value


def _threads(threads: Optional[int]) -> int:
    if threads is None:
        return os.cpu_count() or 1
    return _count(threads, "threads", 1, MAX_THREADS)


def _path(path: PathLike) -> str:
    return os.fspath(path)


# ---------------------------------------------------------------------------------------
# Key sets


def generate(
    dist: str,
    n: int,
    seed: int = 42,
    *,
    duplicates: float = 0.0,
    extremes: bool = False,
    shuffle: bool = False,
) -> np.ndarray:
    """``n`` keys drawn from the distribution ``dist`` (one of :data:`DISTRIBUTIONS`),
    sorted, or in a random order with ``shuffle``. ``duplicates`` in ``[0, 1)`` makes that
    fraction of keys repeat their predecessor; ``extremes`` sets the smallest key to 0 and
    the largest to 2^64 - 1. The same arguments give the same keys on every machine."""
    return _lidx.generate(
        dist,
        _count(n, "n", 1, 1 << 40),
        _count(seed, "seed"),
        float(duplicates),
        bool(extremes),
        bool(shuffle),
    )


def generate_hard(n: int, local: int, global_: int, seed: int = 42) -> np.ndarray:
    """``n`` sorted keys about as hard to learn as asked (paper 3's generator): their
    optimal PLA has about ``local`` segments at ε = 32 and ``global_`` at ε = 4096."""
    return _lidx.generate_hard(
        _count(n, "n", 1, 1 << 40),
        _count(local, "local"),
        _count(global_, "global"),
        _count(seed, "seed"),
    )


def read_keys(path: PathLike) -> np.ndarray:
    """The keys of an SOSD key file (a ``u64`` count, then the keys little-endian)."""
    return _lidx.read_keys(_path(path))


def write_keys(path: PathLike, keys: Any) -> None:
    """Writes ``keys`` as an SOSD key file at ``path``, atomically."""
    _lidx.write_keys(_path(path), _keys(keys))


def sample(
    keys: Any,
    *,
    every: Optional[int] = None,
    fraction: Optional[float] = None,
    ratio: Optional[float] = None,
    seed: int = 42,
) -> np.ndarray:
    """A sample of ``keys`` in their order: every ``every``-th key, a random ``fraction``,
    or a random 1/``ratio`` of them (paper 1's outer tables); give exactly one."""
    given = [name for name, v in (("every", every), ("fraction", fraction), ("ratio", ratio)) if v is not None]
    if len(given) != 1:
        raise ValueError("give exactly one of every, fraction and ratio")
    keys = _keys(keys)
    if every is not None:
        return _lidx.sample_every(keys, _count(every, "every", 1))
    if ratio is not None:
        ratio = float(ratio)
        if not (ratio >= 1.0 and np.isfinite(ratio)):
            raise ValueError(f"ratio: {ratio} is not a number of at least 1")
        fraction = 1.0 / ratio
    return _lidx.sample_fraction(keys, float(fraction), _count(seed, "seed"))


def shuffle(keys: Any, seed: int = 42) -> np.ndarray:
    """The keys in a seeded random order, as a new array."""
    return _lidx.shuffled(_keys(keys), _count(seed, "seed"))


def hardness(keys: Any, epsilons: Sequence[int] = (32, 4096)) -> dict:
    """Paper 3's hardness of sorted ``keys``: the segments of their optimal PLA at each
    error bound (``{"segments": {32: ..., 4096: ...}, "linear_mse": ...}``), and the mean
    squared error in ranks² of one least-squares line through them."""
    keys = _keys(keys)
    epsilons = [_count(e, "epsilon", 1) for e in epsilons]
    segments = _lidx.segment_counts(keys, epsilons)
    return {"segments": dict(zip(epsilons, segments)), "linear_mse": _lidx.linear_mse(keys)}


def is_sorted(keys: Any) -> bool:
    """Whether ``keys`` are in ascending order (equal neighbours allowed)."""
    return _lidx.first_unsorted(_keys(keys)) is None


# ---------------------------------------------------------------------------------------
# Static indexes


def _params(kind: str, params: dict) -> list:
    if kind not in INDEX_KINDS:
        raise ValueError(f"unknown index kind {kind!r}; one of {', '.join(INDEX_KINDS)}")
    out = []
    for name, value in params.items():
        if name not in INDEX_KINDS[kind]:
            takes = ", ".join(INDEX_KINDS[kind]) or "none"
            raise ValueError(f"{kind} takes no {name}; it takes {takes}")
        if name != "root":
            _count(value, name)
        out.append((name, str(value)))
    return out


class Index:
    """A static index over sorted ``uint64`` keys: PGM, sampled PGM, RadixSpline, RMI, a
    B+tree or binary search (:data:`INDEX_KINDS`), behind one window contract: for a query
    ``q``, ``lo <= lower_bound(q) <= hi`` where ``lower_bound(q)`` is the first position
    whose key is at least ``q``. Indexes are immutable and safe to share between threads."""

    __slots__ = ("_index",)

    def __init__(self, native: "_lidx.Index"):
        self._index = native

    @classmethod
    def build(cls, keys: Any, kind: str = "pgm", *, threads: Optional[int] = None, **params: Any) -> "Index":
        """Builds an index of ``kind`` over the sorted array ``keys``; ``params`` are the
        kind's (``epsilon=64``, ``every=256``, ...; each defaults to the 256-position
        setting). Unsorted keys raise :class:`LidxError`."""
        return cls(_lidx.Index.build(_keys(keys), kind, _params(kind, params), _threads(threads)))

    @classmethod
    def build_from_table(
        cls, path: PathLike, kind: str = "pgm", *, threads: Optional[int] = None, **params: Any
    ) -> "Index":
        """Builds an index of ``kind`` over the keys of the sorted table file at ``path``."""
        return cls(_lidx.Index.build_table(_path(path), kind, _params(kind, params), _threads(threads)))

    @classmethod
    def load(cls, path: PathLike) -> "Index":
        """Loads an index file (written by :meth:`save` or ``lidx index build``)."""
        return cls(_lidx.Index.load(_path(path)))

    def save(self, path: PathLike) -> None:
        """Saves the index file at ``path``: ``lidx join --index`` and :meth:`load` read it."""
        self._index.save(_path(path))

    def search(self, queries: Any, *, threads: Optional[int] = None) -> Tuple[np.ndarray, np.ndarray]:
        """The windows of every query, as two arrays ``(lo, hi)`` of positions."""
        return self._index.search(_keys(queries, "queries"), _threads(threads))

    def lower_bound(self, keys: Any, queries: Any, *, threads: Optional[int] = None) -> np.ndarray:
        """The lower bound of every query in ``keys``, the array the index was built on:
        the first position whose key is at least the query (``len(keys)`` where none is)."""
        return self._index.lower_bound(_keys(keys), _keys(queries, "queries"), _threads(threads))

    @property
    def kind(self) -> str:
        """The kind's name."""
        return self._index.kind

    @property
    def params(self) -> str:
        """The parameters it was built with, as ``name=value`` pairs."""
        return self._index.params

    @property
    def size_in_bytes(self) -> int:
        """Its bytes in memory: every byte it keeps."""
        return self._index.size_in_bytes

    @property
    def max_width(self) -> int:
        """The widest window it returns, in positions."""
        return self._index.max_width

    def __len__(self) -> int:
        return len(self._index)

    def __repr__(self) -> str:
        return repr(self._index)


# ---------------------------------------------------------------------------------------
# Tables and joins


def build_table(path: PathLike, keys: Any, values: Any = None) -> Table:
    """Writes ``keys`` (and ``values``, by default each key's row number) as a table file at
    ``path``, in the order given, atomically: sorted keys make a sorted table (what INLJ and
    merge join need), others an unsorted one (learned partitioning's input)."""
    keys = _keys(keys)
    vals = None if values is None else _keys(values, "values")
    return Table.build(_path(path), keys, vals)


@dataclass(frozen=True)
class JoinResult:
    """What :func:`join` returns: the method that ran, every figure of the run (the fields
    of ``lidx join --json``), and the output's columns unless it was only counted."""

    method: str
    record: dict
    keys: Optional[np.ndarray]
    outer_values: Optional[np.ndarray]
    inner_values: Optional[np.ndarray]

    @property
    def output_tuples(self) -> int:
        """The number of output tuples: one per pair of equal keys."""
        return int(self.record["output_tuples"])


def join(
    outer: PathLike,
    inner: PathLike,
    method: str = "auto",
    *,
    out: Optional[PathLike] = None,
    count_only: bool = False,
    index: Optional[PathLike] = None,
    outer_index: Optional[PathLike] = None,
    threads: int = 1,
    direct: bool = False,
    io_depth: int = 1,
    read_size: int = 1 << 20,
    memory_budget: Optional[int] = None,
    entries: Optional[str] = None,
    cold: bool = False,
    profile: Optional[PathLike] = None,
) -> JoinResult:
    """Joins two table files on their keys by ``method``, as ``lidx join`` does: ``auto``
    (the cost model's pick), ``inlj:<kind>``, ``inlj:alex``, ``merge``, ``hash``,
    ``grace``, or over unsorted tables ``partition``, ``btree-inserts``, ``sort-merge``.

    The output is written to ``out`` when given, else to a temporary file that is read into
    the result's arrays and removed; ``count_only`` counts it without writing. ``index`` is
    a saved index of the inner table; ``memory_budget`` (bytes) bounds the join's memory;
    ``direct`` reads with O_DIRECT; ``cold`` drops the inputs from the page cache first."""
    if count_only and out is not None:
        raise ValueError("give out or count_only, not both")
    inputs = (
        _path(outer),
        _path(inner),
        None if method == "auto" else method,
        None if index is None else _path(index),
        None if outer_index is None else _path(outer_index),
    )
    settings = (
        _count(threads, "threads", 1, MAX_THREADS),
        bool(direct),
        _count(io_depth, "io_depth", 1, 4096),
        _count(read_size, "read_size", 4096, 1 << 30),
        None if memory_budget is None else _count(memory_budget, "memory_budget", 1),
        entries,
        bool(cold),
        None if profile is None else _path(profile),
    )

    def run(target: Optional[str]) -> JoinResult:
        ran, record = _lidx.join(*inputs, target, *settings)
        columns = (None, None, None) if target is None else Table.open(target).output_columns()
        return JoinResult(ran, record, *columns)

    if count_only:
        return run(None)
    if out is not None:
        return run(_path(out))
    with tempfile.TemporaryDirectory(prefix="lidx-join-") as scratch:
        return run(os.path.join(scratch, "out.tbl"))


# ---------------------------------------------------------------------------------------
# Key-value files

#: The layouts of a key-value file: paper 4's learned blocks, Bigtable's SSTable, paper
#: 2's layers tuned to the storage, and the disk B+tree under the same pages.
KV_LAYOUTS = ("learned", "sstable", "tuned", "btree")


def _as_bytes(x: Any, what: str) -> bytes:
    if isinstance(x, (bytes, bytearray, memoryview)):
        return bytes(x)
    if isinstance(x, str):
        return x.encode("utf-8")
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        return _count(x, what).to_bytes(8, "big")  # numeric order is byte order
    raise TypeError(f"{what}: expected bytes, str or an unsigned integer, got {type(x).__name__}")


def _records(records: Any) -> list:
    """(key, value) byte pairs from an iterable of pairs, a mapping, or a pandas or pyarrow
    frame of two columns (the first the keys)."""
    columns = None
    if hasattr(records, "to_pydict") and hasattr(records, "column_names"):  # pyarrow
        columns = [records.column(i).to_pylist() for i in range(records.num_columns)]
    elif hasattr(records, "columns") and hasattr(records, "iloc"):  # pandas
        columns = [records[c].tolist() for c in records.columns]
    if columns is not None:
        if len(columns) != 2:
            raise ValueError(f"records: a frame of a key and a value column, got {len(columns)} columns")
        pairs = zip(*columns)
    elif isinstance(records, dict):
        pairs = records.items()
    else:
        pairs = records
    out = []
    for pair in pairs:
        try:
            key, value = pair
        except (TypeError, ValueError):
            raise TypeError("records: expected (key, value) pairs") from None
        out.append((_as_bytes(key, "key"), _as_bytes(value, "value")))
    return out


def build_kv(
    path: PathLike,
    records: Any,
    layout: str = "learned",
    *,
    block_size: int = 32 * 1024,
    compression: str = "none",
    model: str = "auto",
    epsilon: Optional[int] = None,
    leaves: Optional[int] = None,
    max_block: Optional[int] = None,
    families: Optional[Sequence[str]] = None,
    profile: Optional[str] = None,
) -> dict:
    """Writes ``records`` as a key-value file at ``path``, atomically, as ``lidx kv build``
    does, and returns its build report. ``records``: (key, value) pairs in any order, each
    key once (bytes, str as UTF-8, or unsigned ints as 8 big-endian bytes), a dict, or a
    pandas or pyarrow frame of a key and a value column. ``layout``: one of
    :data:`KV_LAYOUTS`; ``profile`` (tuned only): ``ssd``, ``nfs``, ``hdd`` or a profile
    saved by ``lidx bench disk``."""
    if layout not in KV_LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}; one of {', '.join(KV_LAYOUTS)}")
    return _lidx.kv_build(
        _path(path),
        _records(records),
        layout,
        _count(block_size, "block_size"),
        compression,
        model,
        None if epsilon is None else _count(epsilon, "epsilon"),
        None if leaves is None else _count(leaves, "leaves", 1, 1 << 40),
        None if max_block is None else _count(max_block, "max_block"),
        None if families is None else list(families),
        profile,
        "bytes",
    )


class KvFile:
    """A key-value file open for reading, through a block cache of its own; every block it
    reads is counted (:meth:`stats`)."""

    __slots__ = ("_file",)

    def __init__(self, path: PathLike, *, cache_bytes: int = 8 << 20, direct: bool = False, profile: Optional[str] = None):
        """Opens the file at ``path`` with a block cache of ``cache_bytes``; ``direct`` reads
        with O_DIRECT; under ``profile`` every read takes as long as that storage's."""
        self._file = _lidx.KvFile(_path(path), _count(cache_bytes, "cache_bytes"), bool(direct), profile)

    def get(self, key: Any, default: Any = None) -> Any:
        """The value of ``key`` (bytes), or ``default``."""
        value = self._file.get(_as_bytes(key, "key"))
        return default if value is None else value

    def __getitem__(self, key: Any) -> bytes:
        value = self._file.get(_as_bytes(key, "key"))
        if value is None:
            raise KeyError(key)
        return value

    def __contains__(self, key: Any) -> bool:
        return self._file.get(_as_bytes(key, "key")) is not None

    def get_many(self, keys: Iterable[Any]) -> list:
        """The values of ``keys`` (``None`` where absent), in one call."""
        return self._file.get_many([_as_bytes(k, "key") for k in keys])

    def scan(self, start: Any = b"", rows: int = 100) -> list:
        """Up to ``rows`` (key, value) records in key order from the first key at least
        ``start``."""
        return self._file.scan(_as_bytes(start, "start"), _count(rows, "rows", 0, 1 << 40))

    def stats(self) -> dict:
        """What the reads so far did: data and index blocks read, read calls, bytes, cache
        hits and misses, and the modelled I/O time under a profile."""
        return self._file.stats()

    def reset_stats(self) -> None:
        """Sets the counters back to 0."""
        self._file.reset_stats()

    def verify(self) -> dict:
        """Reads the whole file, checking every block and the index."""
        return self._file.verify()

    @property
    def layout(self) -> str:
        """The layout's name."""
        return self._file.layout

    @property
    def index_memory_bytes(self) -> int:
        """Bytes of the index kept in memory while the file is open."""
        return self._file.index_memory_bytes

    def __len__(self) -> int:
        return len(self._file)


# ---------------------------------------------------------------------------------------
# Updatable indexes

#: The updatable kinds (paper 3): learned ones and their traditional baselines.
UPDATABLE_KINDS = ("dynamic-pgm", "alex", "lipp", "btree", "art", "btreemap")


class UpdatableIndex(MutableMapping):
    """An in-memory updatable index of ``uint64`` keys to ``uint64`` payloads (paper 3's
    kinds: :data:`UPDATABLE_KINDS`), as a ``MutableMapping[int, int]`` in key order, with
    bulk operations on arrays. Not safe to change from two threads at once."""

    __slots__ = ("_index",)

    def __init__(self, kind: str = "alex", keys: Any = None, payloads: Any = None):
        """Bulk-loads ``keys`` with ``payloads`` (any order; the last payload of a repeated
        key wins); both empty by default."""
        if kind not in UPDATABLE_KINDS:
            raise ValueError(f"unknown updatable kind {kind!r}; one of {', '.join(UPDATABLE_KINDS)}")
        keys = _keys([] if keys is None else keys)
        payloads = _keys([] if payloads is None else payloads, "payloads")
        self._index = _lidx.Updatable(kind, keys, payloads)

    def __getitem__(self, key: int) -> int:
        value = self._index.get(_count(key, "key"))
        if value is None:
            raise KeyError(key)
        return value

    def __setitem__(self, key: int, payload: int) -> None:
        self._index.insert(_count(key, "key"), _count(payload, "payload"))

    def __delitem__(self, key: int) -> None:
        if not self._index.remove(_count(key, "key")):
            raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        if isinstance(key, bool) or not isinstance(key, (int, np.integer)) or not 0 <= key <= _U64_MAX:
            return False
        return self._index.get(int(key)) is not None

    def __iter__(self) -> Iterator[int]:
        start = 0
        while True:
            keys, _ = self._index.scan(start, 4096)
            yield from (int(k) for k in keys)
            if len(keys) < 4096 or int(keys[-1]) == _U64_MAX:
                return
            start = int(keys[-1]) + 1

    def __len__(self) -> int:
        return len(self._index)

    def get_many(self, keys: Any) -> Tuple[np.ndarray, np.ndarray]:
        """The payloads of ``keys`` and a mask of those found (payload 0 where not)."""
        return self._index.get_many(_keys(keys))

    def insert_many(self, keys: Any, payloads: Any) -> None:
        """Sets each key to its payload, in order."""
        self._index.insert_many(_keys(keys), _keys(payloads, "payloads"))

    def remove_many(self, keys: Any) -> int:
        """Removes ``keys``; returns how many were there."""
        return self._index.remove_many(_keys(keys))

    def scan(self, start: int = 0, n: int = 100) -> Tuple[np.ndarray, np.ndarray]:
        """Up to ``n`` entries in key order from the first key at least ``start``, as arrays
        of keys and payloads."""
        return self._index.scan(_count(start, "start"), _count(n, "n", 0, 1 << 40))

    @property
    def kind(self) -> str:
        """The kind's name."""
        return self._index.kind

    @property
    def size_in_bytes(self) -> int:
        """Bytes of the whole structure in memory, payloads and spare room included."""
        return self._index.size_in_bytes

    def counters(self) -> dict:
        """Where the work went since the bulk load: nodes traversed, keys shifted, nodes
        created, structure modifications (paper 3's Fig. 3 and Table 3)."""
        return self._index.counters()

    def check_structure(self) -> None:
        """Checks the structure's invariants; raises :class:`LidxError` naming a broken one."""
        self._index.check_structure()

    def __repr__(self) -> str:
        return f"<lidx.UpdatableIndex {self.kind}, {len(self)} keys, {self.size_in_bytes} bytes>"


# ---------------------------------------------------------------------------------------
# Experiments


def _number(text: str) -> Any:
    """A CSV field as an int or float where it is one, else the text (empty: None)."""
    if text == "":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _read_csv(path: str) -> list:
    with open(path, newline="") as f:
        return [{k: _number(v) for k, v in row.items()} for row in csv.DictReader(f)]


@dataclass(frozen=True)
class ExperimentResult:
    """What :func:`experiment` returns: the rows of the study's main CSV (one per
    measurement, numbers as numbers), every CSV it wrote by file name, its summary
    (Markdown, the paper's statements first) and the paths of its plots."""

    name: str
    out_dir: str
    rows: list
    csvs: dict
    summary: str
    plots: list

    def frame(self):
        """The rows as a pandas DataFrame (pandas must be installed)."""
        import pandas

        return pandas.DataFrame(self.rows)


def _lidx_command() -> str:
    """The ``lidx`` command: ``LIDX_BIN``, else the one this package installed beside the
    interpreter, else one on PATH."""
    beside = os.path.join(os.path.dirname(sys.executable), "lidx")
    exe = os.environ.get("LIDX_BIN") or (beside if os.access(beside, os.X_OK) else shutil.which("lidx"))
    if not exe:
        raise LidxError(
            "lidx.experiment runs the lidx command line, which is neither beside this Python "
            "nor on PATH; reinstall the package (pip install . puts it beside the interpreter), "
            "or set LIDX_BIN to a lidx binary (cargo install --path crates/lidx-cli)"
        )
    return exe


def experiment(name: str, *, out_dir: Optional[PathLike] = None, **options: Any) -> ExperimentResult:
    """Runs ``lidx experiment NAME`` (one of the papers' studies: ``join-sorted``,
    ``indexes``, ``unsorted``, ``airindex``, ``updatable``, ``bigtable``, ``lsm-joins``,
    ...) with ``options`` as its flags (``ratios=[1, 100]`` is ``--ratios 1,100``,
    ``n="1M"`` is ``--n 1M``, ``True`` a bare flag, ``global_=`` for Python's keyword
    ``--global``) and returns its rows.

    The study runs as the ``lidx`` command line (``LIDX_BIN``, else ``lidx`` on PATH) in a
    process of its own, as its protocol wants (it starts more processes, drops caches, may
    run in cgroups). Its CSV, plots and summary go to ``out_dir`` (default: a new
    directory ``lidx-NAME-*`` under the current one), which is kept. A failed study raises
    :class:`LidxError` with the command line's message."""
    if not name or name.startswith("-"):
        raise ValueError(f"not an experiment name: {name!r}")
    if out_dir is None:
        out_dir = tempfile.mkdtemp(prefix=f"lidx-{name}-", dir=os.getcwd())
    out_dir = _path(out_dir)
    argv = [_lidx_command(), "--quiet", "experiment", name, "--out-dir", out_dir]
    for key, value in options.items():
        flag = "--" + key.rstrip("_").replace("_", "-")  # global_= is --global
        if value is True:
            argv.append(flag)
        elif value is False or value is None:
            continue
        elif isinstance(value, (list, tuple)):
            argv += [flag, ",".join(str(v) for v in value)]
        else:
            argv += [flag, _path(value) if isinstance(value, os.PathLike) else str(value)]
    done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        message = lines[-1] if lines else f"exited with status {done.returncode}"
        raise LidxError(message.removeprefix("lidx: error: "))
    files = sorted(os.listdir(out_dir))
    csvs = {f: _read_csv(os.path.join(out_dir, f)) for f in files if f.endswith(".csv")}
    if not csvs:
        raise LidxError(f"{out_dir}: the experiment wrote no CSV")
    main = next((f for f in (f"{name}.csv", f"{name.replace('-', '_')}.csv") if f in csvs), next(iter(csvs)))
    summary_path = os.path.join(out_dir, "summary.md")
    summary = open(summary_path).read() if os.path.exists(summary_path) else ""
    plots = [os.path.join(out_dir, f) for f in files if f.endswith(".png")]
    return ExperimentResult(name, out_dir, csvs[main], csvs, summary, plots)


#: When :func:`sql` puts the learned index nested loop join in a plan.
INDEX_JOIN_MODES = ("auto", "on", "off")


@dataclass(frozen=True)
class SqlResult:
    """What :func:`sql` returns: the columns by name (numpy arrays for numbers and booleans
    without nulls, lists otherwise), the physical plan DataFusion ran (with each
    operator's counts when ``analyze=True``: rows, blocks read, lookups) and the seconds
    the query ran (tables opened and indexes built before the clock starts)."""

    columns: dict
    plan: str
    seconds: float

    def __len__(self) -> int:
        return len(next(iter(self.columns.values()))) if self.columns else 0

    def __getitem__(self, name: str) -> Any:
        return self.columns[name]

    def frame(self):
        """The rows as a pandas DataFrame (pandas must be installed)."""
        import pandas

        return pandas.DataFrame(self.columns)

    @property
    def learned_join(self) -> bool:
        """True when the plan joins through the learned index nested loop join."""
        return "LearnedInlj" in self.plan


def sql(
    query: str,
    tables: dict,
    *,
    indexes: Optional[dict] = None,
    no_index: Sequence[str] = (),
    index_join: str = "auto",
    threads: Optional[int] = None,
    io_depth: int = 32,
    direct: bool = False,
    cold: bool = False,
    profile: Optional[PathLike] = None,
    explain: bool = False,
    analyze: bool = False,
) -> SqlResult:
    """Runs one SQL query through DataFusion over lidx tables and Parquet files, as
    ``lidx sql`` does: ``tables`` maps each name the query uses to a file (a lidx table or
    a Parquet file, told apart by their bytes). A sorted lidx table of pairs gets the index
    ``indexes`` names for it (saved by :meth:`Index.save` or ``lidx index build``), else one
    built when the call starts, unless it is in ``no_index``. ``index_join``: ``"auto"``
    puts the learned index nested loop join where paper 1's cost model predicts it beats
    the hash join (on the storage ``profile``, from ``lidx bench disk``; an assumed SSD
    otherwise), ``"on"`` wherever it can run, ``"off"`` never. ``explain=True`` returns
    the plan without running the query. Queries only: statements that write are refused.
    Errors raise :class:`LidxError` with the one-line message ``lidx sql`` prints."""
    if not isinstance(query, str):
        raise TypeError(f"query must be a str, not {type(query).__name__}")
    if index_join not in INDEX_JOIN_MODES:
        raise ValueError(f"index_join must be one of {', '.join(INDEX_JOIN_MODES)}, not {index_join!r}")
    indexes = dict(indexes or {})
    no_index = set(no_index)
    for name in list(indexes) + sorted(no_index):
        if name not in tables:
            raise ValueError(f"{name!r} names no table in tables")
    both = no_index.intersection(indexes)
    if both:
        raise ValueError(f"{sorted(both)[0]!r} is in both indexes and no_index")
    io_depth = _count(io_depth, "io_depth", 1, 4096)
    entries = [
        (str(name), _path(path), _path(indexes[name]) if name in indexes else None, name not in no_index)
        for name, path in tables.items()
    ]
    names, columns, plan, seconds = _lidx.sql(
        query,
        entries,
        index_join,
        _threads(threads),
        io_depth,
        bool(direct),
        bool(cold),
        None if profile is None else _path(profile),
        bool(explain),
        bool(analyze),
    )
    return SqlResult(dict(zip(names, columns)), plan, seconds)
