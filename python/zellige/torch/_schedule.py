"""One rank's schedule, computed by the C engine (``zg_engine_sched_export``, src/engine/sched.c)
and read here into numpy arrays. Nothing is derived in Python: the row lists, the exchanges in
the global order, the kernel slices and the ring postings are the C engine's own.

Needs numpy only (torch is imported by :mod:`zellige.torch.executor`).
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from .. import _lib
from .._lib import LIB
from ..planner import Plan, PlanError, _raise

# zg_sched_xkind / zg_sched_rkind (src/engine/engine.h)
ULYSSES, GATHER = 0, 1
KV_RECV, KV_SEND, ACC_RECV, ACC_SEND, ACC_HOME = 0, 1, 2, 3, 4
RING_FIELDS = 7  # phase, kind, peer, buf, row, rows, dst_row


@dataclass
class PlanColumns:
    """A plan as the flat columns the C schedule reads (the layout of ``zellige.PlanArrays``)."""

    world_size: int
    ids: np.ndarray          # (n,) int64
    tokens: np.ndarray       # (n,) int64
    config: np.ndarray       # (n, 3) int32: q, h, k
    offset: np.ndarray       # (n + 1,) int64
    shard_rank: np.ndarray   # (n_shards,) int32
    shard_start: np.ndarray  # (n_shards,) int64
    shard_end: np.ndarray    # (n_shards,) int64
    origin: Optional[np.ndarray] = None  # (n,) int32: the plan's origin ranks, if all known
    rounds: Optional[np.ndarray] = None  # (n,) int64 microbatch rounds, if any is not 0

    def select(self, keep: np.ndarray) -> "PlanColumns":
        """The plan of the placements where keep (a bool mask) holds, in plan order."""
        sub_off = [0]
        rk, st, en = [], [], []
        for i in np.flatnonzero(keep):
            a, b = int(self.offset[i]), int(self.offset[i + 1])
            rk.append(self.shard_rank[a:b]), st.append(self.shard_start[a:b])
            en.append(self.shard_end[a:b])
            sub_off.append(sub_off[-1] + b - a)
        cat = (lambda xs, dt: np.concatenate(xs).astype(dt) if xs else np.zeros(0, dt))
        return PlanColumns(self.world_size, self.ids[keep], self.tokens[keep],
                           self.config[keep], np.array(sub_off, np.int64),
                           cat(rk, np.int32), cat(st, np.int64), cat(en, np.int64))

    @property
    def n(self) -> int:
        return len(self.tokens)


def plan_columns(plan: Any) -> PlanColumns:
    """A :class:`zellige.Plan`, a plan dict (docs/formats.md §2) or plan JSON text as columns.

    Raises :class:`zellige.PlanError` for a malformed dict. The microbatch rounds (a dict's
    ``round`` fields, a Plan's ``arrays.round``) are kept in ``rounds`` and the origin ranks
    (a dict's ``origin_rank`` fields, a Plan's ``origin_ranks``) in ``origin`` when every
    sequence has one.
    """
    if isinstance(plan, Plan):
        a = plan.arrays
        org = plan.origin_ranks
        return PlanColumns(int(plan.world_size), np.array(a.seq_id, np.int64),
                           np.array(a.tokens, np.int64), np.array(a.config, np.int32),
                           np.array(a.offset, np.int64), np.array(a.shard_rank, np.int32),
                           np.array(a.shard_start, np.int64), np.array(a.shard_end, np.int64),
                           np.array(org, np.int32) if org is not None and len(org) and
                           (np.asarray(org) >= 0).all() else None,
                           np.array(a.round, np.int64) if plan.n_rounds > 1 else None)
    if isinstance(plan, (str, bytes)):
        import json
        plan = json.loads(plan)
    if not isinstance(plan, Mapping):
        raise PlanError(f"plan: expected a zellige.Plan, a plan dict or plan JSON, got "
                        f"{type(plan).__name__}")
    try:
        world = int(plan["world_size"])
        seqs: Sequence[Mapping[str, Any]] = plan["sequences"]
        ids, tokens, config, offset, rk, st, en, origin = [], [], [], [0], [], [], [], []
        rounds = []
        for i, s in enumerate(seqs):
            rounds.append(int(s.get("round", 0)))
            if rounds[-1] < 0:
                raise PlanError(f"plan: sequence {s.get('id', i)} has round {rounds[-1]}")
            ids.append(int(s.get("id", i)))
            tokens.append(int(s["tokens"]))
            c = s["config"]
            config.append([int(c["q"]), int(c["h"]), int(c["k"])] if isinstance(c, Mapping)
                          else [int(x) for x in c])
            shards = s["shards"]
            for sh in shards:
                if isinstance(sh, Mapping):
                    rk.append(int(sh["rank"])), st.append(int(sh["start"])), en.append(int(sh["end"]))
                else:
                    rk.append(int(sh[0])), st.append(int(sh[1])), en.append(int(sh[2]))
            offset.append(len(rk))
            origin.append(int(s.get("origin_rank", -1)))
    except PlanError:
        raise
    except (KeyError, TypeError, ValueError) as e:
        raise PlanError(f"plan: malformed plan dict ({type(e).__name__}: {e}); expected "
                        "{'world_size': P, 'sequences': [{'tokens', 'config': {q,h,k}, "
                        "'shards': [{'rank','start','end'}]}]}") from None
    org = np.array(origin, np.int32)
    return PlanColumns(world, np.array(ids, np.int64), np.array(tokens, np.int64),
                       np.array(config, np.int32).reshape(-1, 3), np.array(offset, np.int64),
                       np.array(rk, np.int32), np.array(st, np.int64), np.array(en, np.int64),
                       org if len(org) and (org >= 0).all() else None,
                       np.array(rounds, np.int64) if any(rounds) else None)


def _arr(addr: Optional[int], n: int) -> np.ndarray:
    """A copy of n int64 values at addr."""
    if n <= 0 or not addr:
        return np.zeros(0, np.int64)
    return np.ctypeslib.as_array((ctypes.c_int64 * n).from_address(addr)).copy()


@dataclass
class Exchange:
    """One collective of the global order: Ulysses all-to-all or all-gather, over ``ranks``."""

    kind: int
    ranks: List[int]       # world ranks of the members (position order)
    me: int                # this rank's position
    idx: List[Tuple[np.ndarray, np.ndarray, np.ndarray]]  # per member: (f0, f1, f2) row lists


@dataclass
class Schedule:
    """This rank's schedule (the fields of ``zg_engine_sched``, src/engine/engine.h)."""

    rank: int
    world_size: int
    n_heads: int
    head_dim: int
    k_max: int
    t_local: int
    loader_tokens: int
    q_rows: int
    kv_rows: int
    ring_rows: int
    d_loff: np.ndarray
    d_lrows: np.ndarray
    d_poff: np.ndarray
    d_prows: np.ndarray
    exchanges: List[Exchange]
    slices: List[np.ndarray]   # per step: (n, 4) q_start, q_len, k_start, k_len
    ring: np.ndarray           # (n_ring, 7)

    @classmethod
    def build(cls, cols: PlanColumns, rank: int, n_heads: int, head_dim: int,
              origin: np.ndarray) -> "Schedule":
        """Runs the C engine's schedule builder for ``rank`` (no messages)."""
        keep = [np.ascontiguousarray(x) for x in (
            cols.ids, cols.tokens, cols.config.reshape(-1), cols.offset, cols.shard_rank,
            cols.shard_start, cols.shard_end, origin.astype(np.int32))]
        ptrs = [k.ctypes.data if k.size else None for k in keep]
        out = ctypes.c_void_p()
        err = ctypes.create_string_buffer(_lib.ERR_SIZE)
        rc = LIB.zgpy_sched_new(cols.world_size, cols.n, *ptrs, rank, n_heads, head_dim,
                                ctypes.byref(out), err, _lib.ERR_SIZE)
        if rc:
            _raise(rc, err)
        try:
            v = LIB.zgpy_sched_view(out).contents
            P = v.world_size
            n_x, n_m = v.n_x, v.n_members
            x_kind, x_me, x_moff = _arr(v.x_kind, n_x), _arr(v.x_me, n_x), _arr(v.x_moff, n_x + 1)
            m_rank, m_ioff = _arr(v.m_rank, n_m), _arr(v.m_ioff, 3 * n_m + 1)
            idx = _arr(v.idx, int(m_ioff[-1]) if n_m else 0)
            exchanges = []
            for x in range(n_x):
                ms = range(int(x_moff[x]), int(x_moff[x + 1]))
                exchanges.append(Exchange(
                    int(x_kind[x]), [int(m_rank[m]) for m in ms], int(x_me[x]),
                    [tuple(idx[m_ioff[3 * m + f]:m_ioff[3 * m + f + 1]] for f in range(3))
                     for m in ms]))
            k_max = v.k_max
            sl_off = _arr(v.sl_off, k_max + 1)
            sl = _arr(v.sl, 4 * int(sl_off[-1])).reshape(-1, 4)
            has_d = bool(v.d_loff)
            d_loff = _arr(v.d_loff, P + 1) if has_d else np.zeros(P + 1, np.int64)
            d_poff = _arr(v.d_poff, P + 1) if has_d else np.zeros(P + 1, np.int64)
            return cls(rank=v.rank, world_size=P, n_heads=v.n_heads, head_dim=v.head_dim,
                       k_max=k_max, t_local=v.t_local, loader_tokens=v.loader_tokens,
                       q_rows=v.q_rows, kv_rows=v.kv_rows, ring_rows=v.ring_rows,
                       d_loff=d_loff, d_lrows=_arr(v.d_lrows, int(d_loff[-1])),
                       d_poff=d_poff, d_prows=_arr(v.d_prows, int(d_poff[-1])),
                       exchanges=exchanges,
                       slices=[sl[sl_off[s]:sl_off[s + 1]] for s in range(k_max)],
                       ring=_arr(v.ring, RING_FIELDS * v.n_ring).reshape(-1, RING_FIELDS))
        finally:
            LIB.zgpy_sched_free(out)


def comm_model_bytes(n_heads: int, head_dim: int, tokens: int, config: Sequence[int]
                     ) -> Dict[str, float]:
    """The analytic cost model's bytes per participating rank (forward + backward, one
    attention layer, fp32, no recompute) of one sequence under ``config`` = (q, h, k):
    ``{"allgather", "alltoall", "ring"}`` (what ``bench_engine_comm`` compares the C engine
    with)."""
    out = (ctypes.c_double * 3)()
    err = ctypes.create_string_buffer(_lib.ERR_SIZE)
    q, h, k = (int(x) for x in config)
    rc = LIB.zgpy_comm_model(n_heads, head_dim, tokens, q, h, k, out, err, _lib.ERR_SIZE)
    if rc:
        _raise(rc, err)
    return {"allgather": out[0], "alltoall": out[1], "ring": out[2]}
