"""The zellige planner from Python: :class:`Planner`, :class:`Plan`, :class:`Batch`.

Everything here is a thin layer over the C library (``src/planner``): it converts Python
inputs to flat arrays, calls the C planner through ctypes (the GIL is released during the
call), and wraps the result. No planning happens in Python.
"""
from __future__ import annotations

import ctypes
import json
import os
import threading
import time
import warnings
import weakref
from collections import abc
from concurrent.futures import Future, ThreadPoolExecutor
from ctypes import byref, c_void_p
from dataclasses import dataclass, field
from typing import (Any, Dict, Iterator, List, Mapping, NamedTuple, Optional, Sequence, Tuple,
                    Union, overload)

import numpy as np

from . import _lib
from ._lib import LIB

__all__ = ["PlanError", "OverCapWarning",
           "Config", "Shard", "SequencePlacement", "RankLoad", "PlanArrays",
           "Plan", "Batch", "Planner", "policies", "read_batch", "workload_mix"]

PathLike = Union[str, "os.PathLike[str]"]
#: A model or cluster: a preset name, a JSON file path, or a dict (the JSON of docs/formats.md).
Spec = Union[str, "os.PathLike[str]", Mapping[str, Any]]
#: Token counts: a list, a 1-D numpy array or a 1-D torch tensor (any device) of integers.
Lengths = Any

_KINDS = {"other": 0, "image": 1, "video": 2}
_KIND_NAMES = ("other", "image", "video")
_META_INT_KEYS = ("frames", "height", "width", "text_tokens")
_META_KEYS = ("id", "tokens", "kind", "origin_rank", "bucket") + _META_INT_KEYS
_I32 = (-(2 ** 31), 2 ** 31 - 1)
_I64 = (-(2 ** 63), 2 ** 63 - 1)


class PlanError(ValueError):
    """Bad input to the planner, or no plan exists (e.g. a sequence no option can hold).

    The message is the C library's one line (it names the value that was wrong).
    ``status`` is the library's status: ``"invalid"``, ``"parse"``, ``"io"``,
    ``"infeasible"``, ``"unsupported"``, ...
    """

    def __init__(self, message: str, status: str = "invalid") -> None:
        super().__init__(message)
        self.status: str = status


class OverCapWarning(UserWarning):
    """:meth:`Planner.plan` returned a plan over the memory cap: a policy that ignores memory
    (``knapformer``) placed the batch as its real counterpart would, and its real run would run
    out of memory (``plan.over_cap_ranks``; ``zellige plan`` exits with status 5 for it). Make
    it an error with ``warnings.simplefilter("error", zellige.OverCapWarning)``, or plan with
    the option ``fallback`` to get another policy's plan instead."""


def _raise(rc: int, errbuf: Any) -> None:
    msg = errbuf.value.decode("utf-8", "replace")
    status = _lib.STATUS_NAMES[rc] if 0 <= rc < len(_lib.STATUS_NAMES) else str(rc)
    if status == "nomem":
        raise MemoryError(msg)
    if status == "internal":
        raise RuntimeError(f"zellige internal error (a bug): {msg}")
    raise PlanError(msg, status)


# ---------------------------------------------------------------------------------------------
# Plans


class Config(NamedTuple):
    """A parallel configuration θ = (q, h, k): all-gather CP × Ulysses × ring split factors."""

    q: int
    h: int
    k: int

    @property
    def degree(self) -> int:
        """λ = q·h·k, the number of ranks that run the sequence."""
        return self.q * self.h * self.k


class Shard(NamedTuple):
    """Tokens ``[start, end)`` of a sequence, held by ``rank``."""

    rank: int
    start: int
    end: int


@dataclass(frozen=True)
class SequencePlacement:
    """Where one batch sequence runs.

    ``ranks[i]`` holds ``shards[i]``; position ``i = (iq·k + ik)·h + ih`` (Ulysses index
    fastest, then ring, then all-gather; docs/formats.md §2). ``time`` and ``mem`` are the
    predicted seconds and bytes on each participating rank.
    """

    index: int
    id: int
    tokens: int
    config: Config
    ranks: Tuple[int, ...]
    shards: Tuple[Shard, ...]
    time: float
    mem: float


@dataclass(frozen=True)
class RankLoad:
    """One rank's predicted total: seconds, bytes (``mem_base`` included) and tokens held."""

    rank: int
    time: float
    memory: float
    tokens: int


class PlanArrays:
    """A plan as read-only numpy arrays, for vectorised use (:attr:`Plan.sequences` is built
    from them on access). Each array is made on first access, a view of the C plan's memory
    (which stays alive while an array does).

    Sequence ``i``'s shards are ``offset[i]:offset[i+1]`` of ``shard_rank``, ``shard_start``
    and ``shard_end`` (in position order: ``shard_rank[offset[i]:offset[i+1]]`` is its rank
    list).
    """

    # name: (PlanView field, dtype, length: "n" | "n1" (n + 1) | "ns" | "w", columns)
    _LAYOUT = {
        "seq_id": ("seq_id", np.int64, "n", 1),           # (n,) sequence ids
        "tokens": ("seq_tokens", np.int64, "n", 1),       # (n,) tokens per sequence
        "config": ("config", np.int32, "n", 3),           # (n, 3) q, h, k
        "offset": ("offset", np.int64, "n1", 1),          # (n + 1,) into the shard arrays
        "shard_rank": ("shard_rank", np.int32, "ns", 1),  # (n_shards,)
        "shard_start": ("shard_start", np.int64, "ns", 1),
        "shard_end": ("shard_end", np.int64, "ns", 1),
        "seq_time": ("seq_time", np.float64, "n", 1),     # (n,) s per participating rank
        "seq_mem": ("seq_mem", np.float64, "n", 1),       # (n,) bytes per participating rank
        "rank_time": ("rank_time", np.float64, "w", 1),   # (world_size,) s
        "rank_memory": ("rank_mem", np.float64, "w", 1),  # (world_size,) bytes
        "rank_tokens": ("rank_tokens", np.int64, "w", 1),  # (world_size,)
        "round": ("seq_round", np.int32, "n", 1),         # (n,) microbatch round (0: megatron
    }                                                     # alone makes others)
    __slots__ = ("_v", "_result", "_mem", "_cache")

    seq_id: np.ndarray
    tokens: np.ndarray
    config: np.ndarray
    offset: np.ndarray
    shard_rank: np.ndarray
    shard_start: np.ndarray
    shard_end: np.ndarray
    seq_time: np.ndarray
    seq_mem: np.ndarray
    rank_time: np.ndarray
    rank_memory: np.ndarray
    rank_tokens: np.ndarray
    round: np.ndarray

    def __init__(self, v: Any, result: "_Result") -> None:
        self._v = v            # the C view (lives in result)
        self._result = result  # keeps the C plan alive while any array exists
        self._mem: Any = None
        self._cache: Dict[str, np.ndarray] = {}

    def __getattr__(self, name: str) -> np.ndarray:
        try:
            field_name, dtype, ln, cols = PlanArrays._LAYOUT[name]
        except KeyError:
            raise AttributeError(name) from None
        a = self._cache.get(name)
        if a is None:
            v = self._v
            count = {"n": v.n, "n1": v.n + 1, "ns": v.n_shards, "w": v.world_size}[ln] * cols
            if count == 0:
                a = np.zeros(0, dtype)
            else:
                if self._mem is None:  # the C block, zero copy
                    self._mem = (ctypes.c_char * v.block_bytes).from_address(v.block)
                    self._mem.keep = self._result
                a = np.frombuffer(self._mem, dtype, count, getattr(v, field_name) - v.block)
            if cols > 1:
                a = a.reshape(-1, cols)
            a.flags.writeable = False
            self._cache[name] = a
        return a

    def __dir__(self) -> List[str]:
        return sorted(set(super().__dir__()) | set(self._LAYOUT))

    def __repr__(self) -> str:
        return f"PlanArrays({', '.join(self._LAYOUT)})"


class _LazyList(abc.Sequence):
    """A read-only list whose items are built on first access (plans of thousands of sequences
    cost nothing until read)."""

    __slots__ = ("_n", "_make", "_items")

    def __init__(self, n: int, make: Any) -> None:
        self._n = n
        self._make = make
        self._items: Dict[int, Any] = {}

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> Any: ...

    @overload
    def __getitem__(self, i: slice) -> List[Any]: ...

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._n))]
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(i)
        v = self._items.get(i)
        if v is None:
            v = self._items[i] = self._make(i)
        return v

    def __iter__(self) -> Iterator[Any]:
        for i in range(self._n):
            yield self[i]

    def __repr__(self) -> str:
        return f"<{self._n} items>"


class _Result:
    """Owns a C plan (freed when the last Plan referring to it goes)."""

    __slots__ = ("ptr",)
    _free = LIB.zgpy_result_free

    def __init__(self, ptr: int) -> None:
        self.ptr = ptr

    def __del__(self) -> None:
        if self.ptr:
            self._free(self.ptr)
            self.ptr = 0


@dataclass(frozen=True, eq=False)
class Plan:
    """A plan for one batch (docs/formats.md §2), made by :meth:`Planner.plan`.

    ``sequences[i]`` is the placement of batch sequence ``i`` (batch order);
    ``ranks[r]`` is rank ``r``'s predicted load. ``makespan`` is the predicted step time in
    seconds (the largest rank time; with microbatch rounds, the sum over rounds of the slowest
    rank), ``plan_time_ms`` the C planner's wall time.

    ``n_rounds``: 1 + the largest microbatch round (``arrays.round``; only ``megatron`` makes
    more than one: rounds run one after another, as ``zellige.torch.Executor`` runs them).
    ``origin_ranks``: the ``origin_ranks`` given to :meth:`Planner.plan` (from the argument,
    the metadata's ``origin_rank`` or the :class:`Batch`), an (n,) int32 array, -1 where
    unknown; ``None`` when none was given. ``over_cap_ranks``: for a plan of a policy that
    ignores memory (``knapformer``) that goes over the memory cap, the ranks over it,
    ascending (``over_cap_note`` says by how much); ``()`` for every other plan (the plan
    JSON's ``over_cap_ranks``; ``zellige plan`` exits with status 5 for such a plan and
    :meth:`Planner.plan` warns with :class:`OverCapWarning`).
    """

    policy: str
    fallback_from: str
    summary: str
    world_size: int
    makespan: float
    plan_time_ms: float
    lower_bound: float
    optimal: bool
    mem_base: float
    mem_cap: float
    n_rounds: int
    over_cap_ranks: Tuple[int, ...]
    over_cap_note: str
    origin_ranks: Optional[np.ndarray] = field(repr=False)
    arrays: PlanArrays = field(repr=False)
    sequences: Sequence[SequencePlacement] = field(repr=False)
    ranks: Sequence[RankLoad] = field(repr=False)
    _result: _Result = field(repr=False)

    @classmethod
    def _from_result(cls, ptr: int) -> "Plan":
        res = _Result(ptr)
        v = LIB.zgpy_result_view(ptr).contents
        a = PlanArrays(v, res)
        w = v.world_size
        def placement(i: int) -> SequencePlacement:
            lo, hi = int(a.offset[i]), int(a.offset[i + 1])
            ranks = tuple(a.shard_rank[lo:hi].tolist())
            shards = tuple(map(Shard, ranks, a.shard_start[lo:hi].tolist(),
                               a.shard_end[lo:hi].tolist()))
            return SequencePlacement(i, int(a.seq_id[i]), int(a.tokens[i]),
                                     Config(*a.config[i].tolist()), ranks, shards,
                                     float(a.seq_time[i]), float(a.seq_mem[i]))

        def rank_load(r: int) -> RankLoad:
            return RankLoad(r, float(a.rank_time[r]), float(a.rank_memory[r]),
                            int(a.rank_tokens[r]))

        # the fields set directly: a frozen dataclass's __init__ costs ~5 us of the ~15 us
        # Python overhead per plan() (bench/python_planner.py)
        plan = object.__new__(cls)
        plan.__dict__.update(
            policy=v.policy.decode(), fallback_from=v.fallback_from.decode(),
            summary=v.summary.decode(), world_size=w, makespan=v.makespan,
            plan_time_ms=v.plan_time_ms, lower_bound=v.lower_bound, optimal=bool(v.optimal),
            mem_base=v.mem_base, mem_cap=v.mem_cap, n_rounds=int(v.n_rounds),
            over_cap_ranks=tuple(np.ctypeslib.as_array(
                (ctypes.c_int32 * v.n_over_cap).from_address(v.over_cap_ranks)).tolist())
            if v.n_over_cap else (), over_cap_note=(v.over_cap_note or b"").decode(),
            origin_ranks=None, arrays=a,
            sequences=_LazyList(v.n, placement), ranks=_LazyList(w, rank_load), _result=res)
        return plan

    def __len__(self) -> int:
        """Number of sequences."""
        return len(self.sequences)

    def to_json(self) -> str:
        """The plan JSON of docs/formats.md §2, as the C library writes it: byte for byte what
        ``zellige plan --json`` writes for the same batch (except ``plan_time_ms``)."""
        out = c_void_p()
        err = ctypes.create_string_buffer(_lib.ERR_SIZE)
        rc = LIB.zgpy_result_json(self._result.ptr, byref(out), err, _lib.ERR_SIZE)
        if rc:
            _raise(rc, err)
        return _lib.take_string(out)

    def write(self, path: PathLike) -> None:
        """Writes the plan JSON to ``path`` atomically (as ``zellige plan --json``)."""
        err = ctypes.create_string_buffer(_lib.ERR_SIZE)
        rc = LIB.zgpy_result_write(self._result.ptr, os.fspath(path).encode(), err,
                                   _lib.ERR_SIZE)
        if rc:
            _raise(rc, err)

    def to_dict(self) -> Dict[str, Any]:
        """The plan JSON parsed into Python objects."""
        return json.loads(self.to_json())

    def sequences_on(self, rank: int) -> List[int]:
        """Indices of the sequences that have a shard on ``rank``, in batch order."""
        hit = np.flatnonzero(self.arrays.shard_rank == rank)
        return sorted(set((np.searchsorted(self.arrays.offset, hit, side="right") - 1).tolist()))


# ---------------------------------------------------------------------------------------------
# Batches


@dataclass(frozen=True, eq=False)
class Batch:
    """A batch as columns (docs/formats.md §1): token counts and optional metadata.

    ``None`` columns are unknown: origin rank -1, kind ``"other"``, 0 for frames/height/
    width/text_tokens, no bucket; ids default to 0..n-1. Made by :func:`read_batch` and
    :func:`workload_mix`, or directly. Integer columns are stored as numpy arrays (int64 for
    lengths and ids, int32 otherwise), kinds and buckets as tuples, and the columns the C call
    reads are made here, once (so a batch made by the data loader costs :meth:`Planner.plan`
    no conversion). Bad values raise :class:`PlanError`.
    """

    lengths: np.ndarray                        # (n,) int64 visual tokens
    ids: Optional[np.ndarray] = None           # (n,) int64
    origin_ranks: Optional[np.ndarray] = None  # (n,) int32, -1 unknown
    kinds: Optional[Sequence[str]] = None      # "image" | "video" | "other"
    frames: Optional[np.ndarray] = None        # (n,) int32
    heights: Optional[np.ndarray] = None       # (n,) int32
    widths: Optional[np.ndarray] = None        # (n,) int32
    text_tokens: Optional[np.ndarray] = None   # (n,) int32
    buckets: Optional[Sequence[str]] = None    # catalog bucket names ("" none)
    _enc: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        put = object.__setattr__
        put(self, "lengths", _int_array(self.lengths, "lengths", *_I64, np.int64))
        n = len(self.lengths)
        for name, dtype, rng in (("ids", np.int64, _I64), ("origin_ranks", np.int32, _I32),
                                 ("frames", np.int32, _I32), ("heights", np.int32, _I32),
                                 ("widths", np.int32, _I32), ("text_tokens", np.int32, _I32)):
            v = getattr(self, name)
            if v is not None:
                a = _int_array(v, name, *rng, dtype)
                if len(a) != n:
                    raise PlanError(f"Batch.{name} has {len(a)} entries for {n} sequences")
                put(self, name, a)
        for name in ("kinds", "buckets"):
            v = getattr(self, name)
            if v is not None:
                v = tuple(v)
                if len(v) != n:
                    raise PlanError(f"Batch.{name} has {len(v)} entries for {n} sequences")
                put(self, name, v)
        put(self, "_enc", _encode(self.lengths, self.origin_ranks, self.metadata()))

    def __len__(self) -> int:
        return len(self.lengths)

    def metadata(self) -> Dict[str, Any]:
        """The metadata columns that are set, as :meth:`Planner.plan` takes them."""
        cols = {"id": self.ids, "kind": self.kinds, "frames": self.frames,
                "height": self.heights, "width": self.widths, "text_tokens": self.text_tokens,
                "bucket": self.buckets}
        return {k: v for k, v in cols.items() if v is not None}

    def _encoded(self) -> "_Encoded":
        return self._enc

    @classmethod
    def from_dict(cls, d: Union[Mapping[str, Any], Sequence[Mapping[str, Any]]]) -> "Batch":
        """From batch JSON with ``tokens`` on every sequence (as :func:`read_batch` returns;
        that one also fills tokens from frames/height/width)."""
        seqs = d["sequences"] if isinstance(d, abc.Mapping) else d
        n = len(seqs)

        def col(key: str, default: Any, dtype: Any) -> np.ndarray:
            try:
                return np.fromiter((s.get(key, default) for s in seqs), dtype=dtype, count=n)
            except (TypeError, ValueError, OverflowError) as e:
                raise PlanError(f"batch: key '{key}': {e}") from None

        for i, s in enumerate(seqs):
            if "tokens" not in s:
                raise PlanError(f"batch: sequence {i} has no \"tokens\" (read_batch computes "
                                "them from frames/height/width)")
        return cls(lengths=col("tokens", 0, np.int64), ids=col("id", 0, np.int64),
                   origin_ranks=col("origin_rank", -1, np.int32),
                   kinds=[s.get("kind", "other") for s in seqs],
                   frames=col("frames", 0, np.int32), heights=col("height", 0, np.int32),
                   widths=col("width", 0, np.int32),
                   text_tokens=col("text_tokens", 0, np.int32),
                   buckets=[s.get("bucket", "") for s in seqs])

    def write(self, path: PathLike) -> None:
        """Writes the batch JSON (:meth:`to_dict`) to ``path`` atomically: a temporary file in
        the same folder, then a rename, so a failure leaves no partial file."""
        path = os.fspath(path)
        tmp = f"{path}.tmp.{os.getpid()}"
        try:
            with open(tmp, "w") as f:
                json.dump(self.to_dict(), f)
            os.replace(tmp, path)
        except OSError as e:
            if os.path.exists(tmp):
                os.remove(tmp)
            raise PlanError(f"batch: cannot write {path}: {e.strerror}") from None

    def to_dict(self) -> Dict[str, Any]:
        """Batch JSON (``{"sequences": [...]}``) with the known fields, as
        ``zellige workload mix --out`` writes it."""
        out = []
        for i in range(len(self)):
            s: Dict[str, Any] = {"id": int(self.ids[i]) if self.ids is not None else i,
                                 "tokens": int(self.lengths[i])}
            if self.kinds is not None and self.kinds[i] != "other":
                s["kind"] = self.kinds[i]
            for key, arr in (("frames", self.frames), ("height", self.heights),
                             ("width", self.widths), ("text_tokens", self.text_tokens)):
                if arr is not None and arr[i] > 0:
                    s[key] = int(arr[i])
            if self.origin_ranks is not None and self.origin_ranks[i] >= 0:
                s["origin_rank"] = int(self.origin_ranks[i])
            if self.buckets is not None and self.buckets[i]:
                s["bucket"] = self.buckets[i]
            out.append(s)
        return {"sequences": out}


def _info_property(key: str, conv: Any, doc: str) -> property:
    """A read-only property: the planner's C-side description's `key`, converted by `conv`."""
    return property(lambda self: conv(self._info[key]), doc=doc)


def _spec(x: Any, what: str) -> bytes:
    if isinstance(x, abc.Mapping):
        return json.dumps(x).encode()
    if isinstance(x, (str, os.PathLike)):
        s = os.fspath(x)
        if not s:
            raise PlanError(f"{what}: give a preset name, a JSON file or a dict")
        return s.encode()
    raise PlanError(f"{what}: expected a preset name, a path or a dict, got {type(x).__name__}")


def _call_json(fn: Any, *args: Any) -> str:
    out = c_void_p()
    err = ctypes.create_string_buffer(_lib.ERR_SIZE)
    rc = fn(*args, byref(out), err, _lib.ERR_SIZE)
    if rc:
        _raise(rc, err)
    return _lib.take_string(out)


def read_batch(source: Union[PathLike, Mapping[str, Any], Sequence[Mapping[str, Any]]],
               model: Spec = "wan2.1-1.3b") -> Batch:
    """Reads a batch with the C library's reader (``zellige plan --batch``'s).

    ``source``: a ``.json`` batch or ``.jsonl`` trace path, or batch JSON as a dict/list.
    Tokens missing from a sequence are computed from frames/height/width with ``model``.
    Raises :class:`PlanError` with the reader's message on bad input.
    """
    if isinstance(source, (str, os.PathLike)):
        text = _call_json(LIB.zgpy_batch_read, _spec(model, "model"),
                          os.fspath(source).encode(), 1)
    else:
        text = _call_json(LIB.zgpy_batch_read, _spec(model, "model"),
                          json.dumps(source).encode(), 0)
    return Batch.from_dict(json.loads(text))


def workload_mix(mix: str = "V50", load: int = 350_000, world_size: int = 16,
                 video_seconds: int = 15, seed: int = 1, step: int = 0,
                 model: Spec = "wan2.1-1.3b") -> Batch:
    """One step of a seeded paper mix (``zellige workload mix``; docs/workloads.md).

    ``mix``: ``"V35"`` … ``"V60"`` (video share of tokens); ``load``: tokens per rank
    (350K high, 175K, 125K low). Deterministic in ``seed`` and ``step``.
    """
    for name, v in (("load", load), ("world_size", world_size), ("video_seconds", video_seconds),
                    ("seed", seed), ("step", step)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 0:
            raise PlanError(f"workload_mix: {name} = {v!r}: expected a non-negative integer")
    text = _call_json(LIB.zgpy_workload_mix, _spec(model, "model"), str(mix).encode(),
                      int(load), int(world_size), int(video_seconds), int(seed), int(step))
    return Batch.from_dict(json.loads(text))


def policies() -> List[str]:
    """The placement policies the C library has (``zellige``, ``joint``, ``knapformer``, …)."""
    return LIB.zgpy_policies().decode().split(",")


# ---------------------------------------------------------------------------------------------
# Input conversion


def _int_array(x: Any, name: str, lo: int, hi: int, dtype: Any) -> np.ndarray:
    """x as a 1-D integer array of dtype, every value in [lo, hi]; PlanError otherwise."""
    if type(x).__module__.split(".")[0] == "torch":  # a tensor on any device
        x = x.detach().cpu().numpy()
    try:
        a = np.asarray(x)
    except (OverflowError, ValueError, TypeError) as e:
        raise PlanError(f"{name}: not a list of integers ({e})") from None
    if a.ndim != 1:
        raise PlanError(f"{name}: expected a 1-D list of integers, got shape {a.shape}")
    if a.dtype.kind == "O":
        try:
            a = np.array([int(v) if float(v) == int(v) else float(v) for v in a.tolist()])
        except (OverflowError, ValueError, TypeError) as e:
            raise PlanError(f"{name}: not a list of integers ({e})") from None
        if a.dtype.kind == "O":
            raise PlanError(f"{name}: a value is outside the 64-bit integer range")
    kind = a.dtype.kind
    if kind == "b" or kind not in "iuf":
        raise PlanError(f"{name}: expected integers, got dtype {a.dtype}")
    if a.size == 0:
        return np.zeros(0, dtype)
    if kind == "f":
        bad = ~np.isfinite(a) | (a != np.floor(a))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise PlanError(f"{name}[{i}] = {a[i]!r}: not a whole number")
    if a.dtype == dtype:  # lo..hi is dtype's range
        return np.ascontiguousarray(a)
    out_of = (a < lo) | (a > hi)
    if out_of.any():
        i = int(np.flatnonzero(out_of)[0])
        raise PlanError(f"{name}[{i}] = {a[i]!r}: outside {lo}..{hi}")
    return np.ascontiguousarray(a, dtype=dtype)


def _columns(meta: Any, n: int) -> Dict[str, Any]:
    """Metadata (a list of n dicts, or a dict of n-long columns) as a dict of columns."""
    if isinstance(meta, abc.Mapping):
        cols = dict(meta)
        for k, v in cols.items():
            if k not in _META_KEYS:
                raise PlanError(f"metadata: unknown key '{k}' (keys: {', '.join(_META_KEYS)})")
            if len(v) != n:
                raise PlanError(f"metadata['{k}'] has {len(v)} entries for {n} sequences")
        return cols
    if isinstance(meta, (str, bytes)) or not isinstance(meta, abc.Sequence):
        raise PlanError("metadata: expected a list of dicts (one per sequence) or a dict of "
                        "columns")
    if len(meta) != n:
        raise PlanError(f"metadata has {len(meta)} entries for {n} sequences")
    keys: Dict[str, None] = {}
    for d in meta:
        if type(d) is dict:
            keys.update(d)
        elif isinstance(d, abc.Mapping):
            keys.update(dict.fromkeys(d))
        else:
            keys = {}
            break
    bad = [k for k in keys if k not in _META_KEYS]
    if bad or not keys and n:
        for i, d in enumerate(meta):
            if not isinstance(d, abc.Mapping):
                raise PlanError(f"metadata[{i}]: expected a dict, got {type(d).__name__}")
            for k in d:
                if k not in _META_KEYS:
                    raise PlanError(f"metadata[{i}]: unknown key '{k}' (keys: "
                                    f"{', '.join(_META_KEYS)})")
    defaults = {"kind": "other", "bucket": "", "origin_rank": -1}
    out: Dict[str, Any] = {}
    for k in keys:
        if k == "id":
            out[k] = [d.get(k, i) for i, d in enumerate(meta)]
        else:
            dv = defaults.get(k, 0)
            out[k] = [d.get(k, dv) for d in meta]
    return out


def _kind_codes(col: Any, n: int) -> np.ndarray:
    """Kind names (or codes 0 other, 1 image, 2 video) as int32 codes."""
    if isinstance(col, np.ndarray) and col.dtype.kind in "iu":
        return _int_array(col, "metadata kind", 0, 2, np.int32)
    try:
        return np.array([_KINDS[k] for k in col], np.int32).reshape(n)
    except (KeyError, TypeError):
        i, k = next((i, k) for i, k in enumerate(col) if not isinstance(k, str) or k not in _KINDS)
        raise PlanError(f'sequence {i}: unknown "kind" {k!r}; expected "image", "video" or '
                        f'"other"') from None


def _bucket_blob(col: Any, n: int) -> Optional[bytes]:
    """Bucket names as n NUL-terminated UTF-8 strings, one after another."""
    if n == 0:
        return None
    names = list(col)
    try:
        joined = "\0".join(names)
    except TypeError:
        i = next(i for i, s in enumerate(names) if not isinstance(s, str))
        raise PlanError(f"sequence {i}: bucket {names[i]!r} is not a name") from None
    if joined.count("\0") != n - 1:
        i = next(i for i, s in enumerate(names) if "\0" in s)
        raise PlanError(f"sequence {i}: bucket {names[i]!r} is not a name")
    return (joined + "\0").encode()


class _Encoded(NamedTuple):
    """A batch as the columns the C call reads (None = unknown)."""

    tokens: np.ndarray
    ids: Optional[np.ndarray]
    origin: Optional[np.ndarray]
    kind: Optional[np.ndarray]
    frames: Optional[np.ndarray]
    height: Optional[np.ndarray]
    width: Optional[np.ndarray]
    text_tokens: Optional[np.ndarray]
    buckets: Optional[bytes]
    struct: _lib.BatchIn  # the columns' addresses, as the C call takes them


def _encode(lengths: Any, origin_ranks: Any = None, metadata: Any = None) -> _Encoded:
    tokens = _int_array(lengths, "lengths", *_I64, np.int64)
    n = len(tokens)
    cols = _columns(metadata, n) if metadata is not None else {}
    if "tokens" in cols:
        given = _int_array(cols["tokens"], "metadata tokens", *_I64, np.int64)
        if not np.array_equal(given, tokens):
            i = int(np.flatnonzero(given != tokens)[0])
            raise PlanError(f"sequence {i}: metadata tokens {given[i]} differ from "
                            f"lengths[{i}] = {tokens[i]}")
    if origin_ranks is None:
        origin_ranks = cols.get("origin_rank")

    def ints(v: Any, name: str, rng: Tuple[int, int], dtype: Any) -> Optional[np.ndarray]:
        if v is None:
            return None
        a = _int_array(v, name, *rng, dtype)
        if len(a) != n:
            raise PlanError(f"{name} has {len(a)} entries for {n} sequences")
        return a

    cols_out = dict(
        tokens=tokens, ids=ints(cols.get("id"), "metadata id", _I64, np.int64),
        origin=ints(origin_ranks, "origin_ranks", _I32, np.int32),
        kind=_kind_codes(cols["kind"], n) if "kind" in cols else None,
        frames=ints(cols.get("frames"), "metadata frames", _I32, np.int32),
        height=ints(cols.get("height"), "metadata height", _I32, np.int32),
        width=ints(cols.get("width"), "metadata width", _I32, np.int32),
        text_tokens=ints(cols.get("text_tokens"), "metadata text_tokens", _I32, np.int32),
        buckets=_bucket_blob(cols["bucket"], n) if "bucket" in cols else None)
    c = cols_out
    struct = _lib.BatchIn(n, _addr(c["tokens"]), _addr(c["ids"]), _addr(c["origin"]),
                          _addr(c["kind"]), _addr(c["frames"]), _addr(c["height"]),
                          _addr(c["width"]), _addr(c["text_tokens"]), c["buckets"])
    return _Encoded(struct=struct, **cols_out)


def _addr(a: Optional[np.ndarray]) -> Optional[int]:
    return None if a is None else a.ctypes.data


# ---------------------------------------------------------------------------------------------
# The planner


class Planner:
    """Plans where each sequence of a batch runs (the C library's planner, kept warm).

    Args:
        model: a model preset (``"wan2.1-1.3b"``, ``"wan2.1-14b"``, ``"hunyuanvideo-13b"``,
            ``"flux-12b"``, ``"tiny"``), a model JSON path, or a dict (docs/formats.md §5).
        cluster: a cluster preset (``"8xA800"``, ``"16xA800"``, ``"32xA6000"``, ``"8xH100"``,
            ``"cpu:4"``, …), ``"NxGPU"`` (``"32xA800"``) or ``"NODESxGPUSxGPU"``
            (``"2x8xH100"``; GPUs: docs/cli.md, "Clusters"), a cluster JSON path, or a dict
            (docs/formats.md §4).
        profile: a measured price table from ``zellige profile``; ``None`` prices with the
            analytic cost model. A table that prices some (bucket, config) pairs 0 s gives a
            ``RuntimeWarning`` (the planner would see those sequences as free).
        policy: ``"zellige"`` (default), ``"joint"``, ``"knapformer"``, ``"usp"``,
            ``"adaptive"``, ``"dp"`` or ``"static"`` (:func:`policies`).
        **options: the options of ``zellige plan`` with ``_`` for ``-``: ``family``
            (``"node"``/``"aligned"``/``"sliding"``), ``max_degree``, ``fallback`` (a policy
            used when this one finds no plan), ``eps``, ``time_limit`` (s), ``anchor_cut`` (s),
            ``anchor_nodes``, ``lns_nodes``, ``first_nodes`` (int or ``"ordinary"``),
            ``catalog`` (``"auto"``: the model's bucket catalog when every sequence has one of
            its buckets, as ``zellige plan``; ``"default"``; ``"none"``), ``seed``,
            ``exact_rank_prices``, ``remember_layouts``, ``device_row`` (a measured device row
            from ``zellige profile-device`` for the cluster's device, in place of the built-in
            efficiency row of the analytic model; not with ``profile``), and for knapformer
            ``bags``, ``gamma``, ``d_model``, ``world_size``. ``None`` means "not given".

    Raises:
        PlanError: an unknown preset, policy or option, or a bad option value (the C
            library's message).

    The planner keeps its C state across :meth:`plan` calls (option cache, remembered
    stage-1 layouts): a training loop makes one planner and plans every step with it. The
    first plan of a batch is the same as ``zellige plan`` gives for that batch. Plans are
    deterministic. :meth:`plan` releases the GIL while the C planner runs, so a background
    thread can plan step t+1 while step t trains (:meth:`plan_async`). One plan runs at a time
    per planner (calls from several threads queue).

    Example::

        planner = zellige.Planner("wan2.1-1.3b", "16xA800")
        plan = planner.plan([219600, 32760, 8160, 8160])
        plan.sequences[0].config, plan.sequences[0].shards[0], plan.makespan
    """

    def __init__(self, model: Spec = "wan2.1-1.3b", cluster: Spec = "16xA800",
                 profile: Optional[PathLike] = None, policy: str = "zellige",
                 **options: Any) -> None:
        self._handle: Optional[int] = None
        self._lock = threading.Lock()
        self._err = ctypes.create_string_buffer(_lib.ERR_SIZE)  # plan()'s, under the lock
        self._pool: Optional[ThreadPoolExecutor] = None
        #: milliseconds the last :meth:`plan` spent in the C call (input arrays to result),
        #: for measuring the Python overhead of :meth:`plan`.
        self.last_c_call_ms: float = 0.0
        opts = {k: (v.item() if isinstance(v, np.generic) else v)
                for k, v in options.items() if v is not None}
        if profile is not None:
            profile = os.fspath(profile)
        if not isinstance(policy, str):
            raise PlanError(f"policy: expected a name, got {type(policy).__name__}")
        h = c_void_p()
        err = ctypes.create_string_buffer(_lib.ERR_SIZE)
        try:
            opts_json = json.dumps(opts)
        except TypeError as e:
            raise PlanError(f"options: {e}") from None
        rc = LIB.zgpy_planner_new(_spec(model, "model"), _spec(cluster, "cluster"),
                                  profile.encode() if profile else None, policy.encode(),
                                  opts_json.encode(), byref(h), err, _lib.ERR_SIZE)
        if rc:
            _raise(rc, err)
        self._handle = h.value
        self._finalizer = weakref.finalize(self, LIB.zgpy_planner_free, h.value)
        self._options: Dict[str, Any] = opts
        self._info: Dict[str, Any] = json.loads(_call_json(LIB.zgpy_planner_info, h.value))
        if self._info.get("unpriced_pairs"):
            warnings.warn(f"profile {profile}: {self._info['unpriced_note']}", RuntimeWarning,
                          stacklevel=2)

    # -- properties ----------------------------------------------------------------------------

    policy = _info_property("policy", str, "The placement policy's name.")
    world_size = _info_property("world_size", int, "Ranks of the cluster.")
    model = _info_property("model", dict, "The model as JSON (docs/formats.md §5).")
    cluster = _info_property("cluster", dict, "The cluster as JSON (docs/formats.md §4).")
    pricer = _info_property("pricer", str, '``"analytic"`` or ``"table"`` (a measured profile).')
    mem_cap = _info_property("mem_cap", float,
                             "The memory cap per rank in bytes: device memory × usable "
                             "fraction (docs/cost-model.md). A rank's total, ``mem_base`` "
                             "included, must stay under it.")
    mem_base = _info_property("mem_base", float,
                              "Bytes every rank holds independent of placement (weights, "
                              "optimizer, …).")

    @property
    def options(self) -> Dict[str, Any]:
        """The options given to the constructor."""
        return dict(self._options)

    def __repr__(self) -> str:
        state = "closed" if self._handle is None else f"{self.world_size} ranks"
        return (f"Planner(model={self._info['model'].get('name')!r}, "
                f"cluster={self._info['cluster'].get('name')!r}, policy={self.policy!r}, "
                f"pricer={self.pricer!r}; {state})")

    # -- planning ------------------------------------------------------------------------------

    def plan(self, lengths: Union[Lengths, Batch], origin_ranks: Any = None,
             metadata: Any = None) -> Plan:
        """Plans one batch.

        Args:
            lengths: the visual token count of each sequence (a list, a 1-D numpy array or
                torch tensor of integers), or a :class:`Batch` (its metadata is used).
            origin_ranks: optional, per sequence, the rank whose data loader holds it
                (-1 unknown).
            metadata: optional, per sequence, what the cost model may use: a list of dicts
                or a dict of columns with keys ``kind`` (``"image"``/``"video"``/
                ``"other"``), ``frames``, ``height``, ``width``, ``text_tokens``, ``bucket``
                (e.g. ``"720p-15s"``; see docs/workloads.md), ``id`` and ``origin_rank``.

        Returns:
            The :class:`Plan`; ``plan.sequences[i]`` is sequence ``i``'s placement.

        Raises:
            PlanError: an empty batch, bad input (a negative or non-integer length, NaN,
                an unknown key, an origin rank out of range, …) or no plan (a sequence no
                option can hold; ``status == "infeasible"``), with the C library's one-line
                message.

        Warns:
            OverCapWarning: a ``knapformer`` plan over the memory cap (``plan.over_cap_ranks``;
                ``zellige plan`` keeps such a plan and exits with status 5).
        """
        if isinstance(lengths, Batch):
            if metadata is None and origin_ranks is None:
                enc = lengths._encoded()
            else:
                enc = _encode(lengths.lengths,
                              lengths.origin_ranks if origin_ranks is None else origin_ranks,
                              lengths.metadata() if metadata is None else metadata)
        else:
            enc = _encode(lengths, origin_ranks, metadata)
        if len(enc.tokens) == 0:
            raise PlanError("plan: the batch holds no sequences; give at least one (as "
                            "`zellige plan` refuses an empty batch)")
        out = c_void_p()
        with self._lock:
            if self._handle is None:
                raise PlanError("the planner is closed")
            err = self._err
            t0 = time.perf_counter()
            rc = LIB.zgpy_plan(self._handle, byref(enc.struct), byref(out), err, _lib.ERR_SIZE)
            self.last_c_call_ms = (time.perf_counter() - t0) * 1e3
            if rc:
                err = ctypes.create_string_buffer(err.value)  # the message, out of the lock
        if rc:
            _raise(rc, err)
        plan = Plan._from_result(out.value)
        if enc.origin is not None:
            origin = enc.origin.copy()
            origin.flags.writeable = False
            plan.__dict__["origin_ranks"] = origin
        if plan.over_cap_ranks:
            warnings.warn(f"{plan.policy} ignores memory and its plan is over the cap (its real "
                          f"run would run out of memory; plan kept, `zellige plan` exits with "
                          f"status 5): {plan.over_cap_note}", OverCapWarning, stacklevel=2)
        return plan

    def plan_async(self, lengths: Union[Lengths, Batch], origin_ranks: Any = None,
                   metadata: Any = None) -> "Future[Plan]":
        """Plans on this planner's background thread; returns a Future of the :class:`Plan`.

        The C planner runs without the GIL, so the caller's thread keeps running (e.g. the
        current training step). Plans queue in call order; each is the plan :meth:`plan`
        would return.
        """
        if self._handle is None:
            raise PlanError("the planner is closed")
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="zellige-plan")
        return self._pool.submit(self.plan, lengths, origin_ranks, metadata)

    def close(self) -> None:
        """Frees the C planner (also done when the object is collected). Idempotent."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        with self._lock:
            if self._handle is not None:
                self._finalizer()
                self._handle = None

    def __enter__(self) -> "Planner":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
