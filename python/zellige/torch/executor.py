"""Executes a zellige plan with torch.distributed: dispatch / undispatch of tokens between the
data loader's layout and the plan's layout, and coalesced attention (forward and backward) for
every configuration θ = (q, h, k) — whole, Ulysses, ring, all-gather CP and their compositions.

The schedule (which rows go to which rank, in which collective, in which global order, and the
kernel slices of every step) is the C engine's (``zg_engine_sched_export``); this module runs it
with torch ops: ``batch_isend_irecv`` of point-to-point ops over each collective's explicit rank
list (no process group is created), ``index_select`` / indexed writes into a head-major work
space, one batched attention kernel per distinct slice shape of a step, and an LSE merge for
ring steps. The backward is written out (it mirrors ``zg_engine_attn_backward_saved``).
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.distributed as dist

from ..planner import PlanError
from . import _schedule as S

__all__ = ["Executor", "coalesced_attention", "dispatch", "undispatch"]

# message tags per class (the C engine's classes; gloo matches messages by (source, tag))
_TAG_U_FWD, _TAG_G_FWD, _TAG_U_INV, _TAG_U_BWD, _TAG_G_RED, _TAG_U_DINV = 1, 2, 3, 4, 6, 7
_TAG_DISPATCH, _TAG_RING = 8, 100


# The fused CPU attention kernel behind scaled_dot_product_attention, with its log-sum-exp
# (query/key/value (B, heads, L, D); returns output and LSE (B, heads, L) in fp32) and its
# backward (from the given output and LSE, so ring steps take the final O/LSE).
_flash_fwd = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
_flash_bwd = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward


class _Block(NamedTuple):
    """Rows start .. start + n*L of a work tensor as n blocks of L (a view, no gather)."""

    start: int
    n: int
    L: int


def _rows(starts: np.ndarray, L: int, t: Any) -> Any:
    """Row indices of n blocks of L rows starting at `starts`: a _Block when the blocks are
    back to back (the heads of one sequence, equal-length sequences side by side), else an
    (n, L) index tensor."""
    starts = np.asarray(starts, np.int64)
    if len(starts) == 1 or bool(np.all(np.diff(starts) == L)):
        return _Block(int(starts[0]), len(starts), int(L))
    return t(starts[:, None] + np.arange(L))


def _take(W: torch.Tensor, ix: Any) -> torch.Tensor:
    """W[ix] as (n, L, *W.shape[1:]) (a view for a _Block)."""
    if isinstance(ix, _Block):
        return W[ix.start:ix.start + ix.n * ix.L].reshape((ix.n, ix.L) + tuple(W.shape[1:]))
    return W[ix]


def _flat(ix: Any) -> Any:
    """ix as a flat row selector (a slice for a _Block)."""
    return slice(ix.start, ix.start + ix.n * ix.L) if isinstance(ix, _Block) else ix.reshape(-1)


def _add(W: torch.Tensor, ix: Any, x: torch.Tensor) -> None:
    """W[rows of ix] += x (x: (n, L, *W.shape[1:]))."""
    x = x.reshape((-1,) + tuple(W.shape[1:]))
    if isinstance(ix, _Block):
        W[_flat(ix)] += x
    else:
        W.index_add_(0, ix.reshape(-1), x)


def _ring_tag(phase: int, kind: int) -> int:
    return _TAG_RING + 8 * (phase % 512) + kind


class _Ix:
    """The schedule's index tensors on one device."""

    def __init__(self, ex: "Executor", dev: torch.device) -> None:
        sc = ex._sched

        def t(a: np.ndarray) -> torch.Tensor:
            return torch.as_tensor(np.ascontiguousarray(a, np.int64)).to(dev)

        self.lrows, self.prows = t(sc.d_lrows), t(sc.d_prows)
        self.exchanges = [(x.kind, x.ranks, x.me, [tuple(t(f) for f in m) for m in x.idx])
                          for x in sc.exchanges]
        # kernel groups per step: (q rows, k rows, valid queries, additive key mask), either
        # the slices of one (q_len, k_len) shape (calls="shape": no padding, masks None) or
        # every slice of the step padded to powers of two (calls="step": one call per step)
        G = Tuple[torch.Tensor, torch.Tensor, Optional[torch.Tensor], Optional[torch.Tensor]]
        self.groups: List[List[G]] = []
        for sl in sc.slices:
            g: List[G] = []
            if ex.calls == "step" and len(sl):
                lq, lk = (1 << int(max(1, x) - 1).bit_length() for x in (sl[:, 1].max(),
                                                                           sl[:, 3].max()))
                ar_q, ar_k = np.arange(lq), np.arange(lk)
                qv = ar_q[None, :] < sl[:, 1:2]
                kv = ar_k[None, :] < sl[:, 3:4]
                mask = np.where(kv, 0.0, -np.inf).astype(np.float32)[:, None, None, :]
                g.append((t(np.where(qv, sl[:, :1] + ar_q, 0)),
                          t(np.where(kv, sl[:, 2:3] + ar_k, 0)),
                          torch.as_tensor(qv).to(dev), torch.as_tensor(mask).to(dev)))
            elif len(sl):
                shapes: Dict[Tuple[int, int], List[int]] = {}
                for i, (_, ql, _, kl) in enumerate(sl.tolist()):
                    shapes.setdefault((ql, kl), []).append(i)
                for (ql, kl), rows in shapes.items():
                    r = sl[rows]
                    g.append((_rows(r[:, 0], ql, t), _rows(r[:, 2], kl, t), None, None))
            self.groups.append(g)
        # ring postings per phase: (kind, peer) -> (buf, rows in posting order); homes
        # ring[phase][kind]: (peer, buffer, rows (a slice or an index tensor), row count)
        self.ring: Dict[int, Dict[int, List[Tuple[int, int, Any, int]]]] = {}
        self.homes: Dict[int, List[Tuple[int, slice, slice]]] = {}
        acc: Dict[Tuple[int, int, int], Tuple[int, List[Tuple[int, int]]]] = {}
        order: List[Tuple[int, int, int]] = []
        for ph, kind, peer, buf, row, rows, dst in sc.ring.tolist():
            if kind == S.ACC_HOME:
                self.homes.setdefault(ph, []).append(
                    (buf, slice(row, row + rows), slice(dst, dst + rows)))
                continue
            key = (ph, kind, peer)
            if key not in acc:
                acc[key] = (buf, [])
                order.append(key)
            acc[key][1].append((row, rows))
        for key in order:
            ph, kind, peer = key
            buf, parts = acc[key]
            n = sum(c for _, c in parts)
            if all(parts[i][0] + parts[i][1] == parts[i + 1][0] for i in range(len(parts) - 1)):
                idx: Any = slice(parts[0][0], parts[0][0] + n)  # one range: a view
            else:
                idx = t(np.concatenate([np.arange(a, a + c) for a, c in parts]))
            self.ring.setdefault(ph, {}).setdefault(kind, []).append((peer, buf, idx, n))


class Executor:
    """Runs one plan on this rank of a torch.distributed group.

    Args:
        plan: a :class:`zellige.Plan`, a plan dict (docs/formats.md §2) or plan JSON text. Its
            ``world_size`` must be the group's size; rank ``r`` of the plan is rank ``r`` of the
            group. The plan's microbatch rounds (a dict's ``round``, a Plan's ``arrays.round``)
            run one after another, as in the C engine.
        n_heads, head_dim: the attention shape (H, D); every Ulysses degree must divide H.
        group: the process group (None: the default group). Collectives over a plan's rank
            sets are point-to-point ops on this group; no process group is created.
        origin_ranks: per sequence (plan order), the rank whose data loader holds it. Default
            (``None``): the plan's own, a Plan's ``origin_ranks`` (given to
            ``Planner.plan(..., origin_ranks=...)``) or a dict's ``origin_rank`` fields; a plan
            without them (or with an unknown one) raises :class:`zellige.PlanError`.
            ``"first_shard"``: each sequence is loaded on the first rank of its rank list.
        kernel: ``"auto"`` (default): the fused CPU kernel of ``scaled_dot_product_attention``
            (``aten._scaled_dot_product_flash_attention_for_cpu``, which returns the LSE) for
            CPU tensors, the math path elsewhere; ``"flash"``: that CPU kernel; ``"math"``:
            batched matmuls + logsumexp in fp32 (any device; materialises the scores).
        calls: ``"shape"`` (default): per step, one kernel call per distinct (q_len, k_len) of
            its slices, no padding; ``"step"``: ONE call per step, as the C engine's varlen
            kernel (slices padded to the next power of two of the step's longest query and key
            blocks, padded keys masked: more arithmetic, shapes that repeat across steps).
        capacity_tokens: the row count of the tensors the user-facing ops take and return, so
            that they keep one shape across steps with different plans (``torch.compile``
            then compiles the model's work between the collectives once, see docs/pytorch.md).
            ``None`` (default): exact, ``loader_tokens`` and ``plan_tokens`` rows; an int
            ``C``: both layouts have ``C`` rows (a plan that puts more tokens on this rank
            raises :class:`zellige.PlanError`); ``"pow2"``: each layout padded to the next
            power of two of its token count (a few shapes, each compiled once). Rows past the
            tokens are padding: read as nothing, returned as zeros, with zero gradients.

    Every rank of the group must construct the Executor for the same plan and call
    ``dispatch``, ``undispatch`` and ``attention`` (and their backward) in the same order: each
    is collective (a rank without work takes part in nothing and returns empty tensors).
    """

    def __init__(self, plan: Any, n_heads: int, head_dim: int, group: Any = None,
                 origin_ranks: Optional[Sequence[int]] = None, kernel: str = "auto",
                 calls: str = "shape", capacity_tokens: Any = None) -> None:
        if not dist.is_available() or not dist.is_initialized():
            raise RuntimeError("zellige.torch.Executor: torch.distributed is not initialized "
                               "(call torch.distributed.init_process_group first, e.g. under "
                               "torchrun)")
        cols = S.plan_columns(plan)
        self.group = group
        self.rank = dist.get_rank(group)
        self.world_size = dist.get_world_size(group)
        if cols.world_size != self.world_size:
            raise PlanError(f"plan is for {cols.world_size} ranks but the process group has "
                            f"{self.world_size} (run with --nproc-per-node {cols.world_size})")
        if isinstance(origin_ranks, str):
            if origin_ranks != "first_shard":
                raise ValueError(f"zellige.torch Executor: origin_ranks {origin_ranks!r}: "
                                 "expected a list of ranks, None or 'first_shard'")
            origin = cols.shard_rank[cols.offset[:-1]].astype(np.int64)
        elif origin_ranks is not None:
            origin = np.asarray(origin_ranks, np.int64)
            if origin.shape != (cols.n,):
                raise PlanError(f"origin_ranks has {origin.size} entries for {cols.n} sequences")
        elif cols.origin is not None:
            origin = cols.origin.astype(np.int64)
        elif cols.n == 0:
            origin = np.zeros(0, np.int64)
        else:
            raise PlanError(
                "zellige.torch Executor: origin_ranks not given and the plan does not say which "
                "rank's data loader holds each sequence (a zellige.Plan planned without "
                "origin_ranks, or one of them -1; a plan dict without 'origin_rank' on every "
                "sequence): dispatch would move the wrong rows. Pass origin_ranks=[...] (per "
                "sequence, in plan order), plan with Planner.plan(lengths, origin_ranks=...), "
                "or pass origin_ranks='first_shard' if each sequence is loaded on its first "
                "shard's rank")
        bad = np.flatnonzero((origin < 0) | (origin >= self.world_size))
        if bad.size:
            i = int(bad[0])
            raise PlanError(f"origin_ranks[{i}] = {int(origin[i])}: outside the "
                            f"{self.world_size} ranks of the group")
        if kernel not in ("auto", "flash", "math"):
            raise ValueError(f"zellige.torch Executor: kernel {kernel!r}: expected 'auto', "
                             "'flash' or 'math'")
        self.kernel = kernel
        if calls not in ("shape", "step"):
            raise ValueError(f"zellige.torch Executor: calls {calls!r}: expected 'shape' or "
                             "'step'")
        self.calls = calls
        self.n_heads, self.head_dim = int(n_heads), int(head_dim)
        self.scale = 1.0 / math.sqrt(self.head_dim)
        self.origin = origin.astype(np.int32)
        self._sched = S.Schedule.build(cols, self.rank, self.n_heads, self.head_dim, self.origin)
        sc = self._sched
        self.loader_tokens: int = int(sc.loader_tokens)
        self.plan_tokens: int = int(sc.t_local)
        #: this rank's shards in plan-layout order: (sequence index, start, end)
        self.local_shards: List[Tuple[int, int, int]] = [
            (i, int(cols.shard_start[j]), int(cols.shard_end[j]))
            for i in range(cols.n) for j in range(cols.offset[i], cols.offset[i + 1])
            if cols.shard_rank[j] == self.rank]
        #: sequences whose origin is this rank, in loader-layout order
        self.loader_sequences: List[int] = [i for i in range(cols.n) if origin[i] == self.rank]
        self._send_counts = np.diff(sc.d_loff).tolist()  # loader rows to each rank
        self._recv_counts = np.diff(sc.d_poff).tolist()  # plan rows from each rank
        #: rows of the loader-layout / plan-layout tensors the ops take and return
        self.loader_capacity, self.plan_capacity = _capacities(
            capacity_tokens, self.loader_tokens, self.plan_tokens, self.rank)
        self._ix_cache: Dict[torch.device, _Ix] = {}
        self.stats: Dict[str, int] = {}
        self.reset_stats()
        # microbatch rounds (plan dicts with "round"): attention runs round after round, each
        # round's placements on their own schedule over its rows of the plan layout (a rank's
        # shards of one round are a subsequence of its shards); dispatch stays the whole plan's
        self._rounds: List[Tuple["Executor", torch.Tensor]] = []
        if cols.rounds is not None:
            shard_round = np.repeat(cols.rounds, np.diff(cols.offset))
            mine = np.flatnonzero(cols.shard_rank == self.rank)
            lens = cols.shard_end[mine] - cols.shard_start[mine]
            at = np.concatenate([[0], np.cumsum(lens)])
            for r in np.unique(cols.rounds).tolist():
                sub = self._sub(S.Schedule.build(cols.select(cols.rounds == r), self.rank,
                                                 self.n_heads, self.head_dim,
                                                 self.origin[cols.rounds == r]))
                rows = [np.arange(at[j], at[j + 1]) for j in range(len(mine))
                        if shard_round[mine[j]] == r]
                self._rounds.append((sub, torch.as_tensor(
                    np.concatenate(rows) if rows else np.zeros(0, np.int64))))

    # ---- bookkeeping ------------------------------------------------------------------------

    def reset_stats(self) -> None:
        """Zeroes :attr:`stats`: bytes sent to other ranks per class (``bytes_dispatch``,
        ``bytes_alltoall`` (of which ``bytes_lse``: the forward's LSE), ``bytes_allgather``
        (all-gather and reduce-scatter), ``bytes_ring``), ``collectives`` (collectives and ring
        phases this rank waited on; dispatch counts one) and ``kernel_calls``, summed since the
        last reset."""
        self.stats.update(bytes_dispatch=0, bytes_alltoall=0, bytes_lse=0, bytes_allgather=0,
                          bytes_ring=0, collectives=0, kernel_calls=0)

    def _sub(self, sched: S.Schedule) -> "Executor":
        """An executor of one round's schedule sharing this one's group, options and stats."""
        sub = object.__new__(Executor)
        sub.__dict__.update({k: v for k, v in self.__dict__.items()
                             if k in ("group", "rank", "world_size", "n_heads", "head_dim",
                                      "scale", "kernel", "calls", "stats", "origin")})
        sub.__dict__.update(_sched=sched, plan_tokens=int(sched.t_local), loader_tokens=0,
                            plan_capacity=int(sched.t_local), loader_capacity=0,
                            _ix_cache={}, _rounds=[], local_shards=[], loader_sequences=[])
        return sub

    def _ix(self, dev: torch.device) -> _Ix:
        ix = self._ix_cache.get(dev)
        if ix is None:
            ix = self._ix_cache[dev] = _Ix(self, dev)
        return ix

    def _post(self, recvs: Sequence[Tuple[int, torch.Tensor, int]],
              sends: Sequence[Tuple[int, torch.Tensor, int]], cls: str) -> List[Any]:
        """Posts receives, then sends (peer = group rank, tensor, tag); counts bytes sent."""
        ops = [dist.P2POp(dist.irecv, t, group=self.group, group_peer=p, tag=tag)
               for p, t, tag in recvs]
        ops += [dist.P2POp(dist.isend, t, group=self.group, group_peer=p, tag=tag)
                for p, t, tag in sends]
        for _, t, _ in sends:
            self.stats["bytes_" + cls] += t.numel() * t.element_size()
        return dist.batch_isend_irecv(ops) if ops else []

    def _wait(self, works: List[Any]) -> None:
        if works:
            for w in works:
                w.wait()
            self.stats["collectives"] += 1

    # ---- dispatch / undispatch --------------------------------------------------------------

    def _move(self, direction: int, xs: Sequence[torch.Tensor]) -> List[torch.Tensor]:
        """direction 0: loader -> plan layout; 1: plan -> loader. All tensors travel in ONE
        all-to-all (rows as bytes)."""
        n_in, n_out = ((self.loader_tokens, self.plan_tokens) if direction == 0 else
                       (self.plan_tokens, self.loader_tokens))
        c_in, c_out = ((self.loader_capacity, self.plan_capacity) if direction == 0 else
                       (self.plan_capacity, self.loader_capacity))
        what = "dispatch" if direction == 0 else "undispatch"
        layout = "loader" if direction == 0 else "plan"
        for i, x in enumerate(xs):
            if not isinstance(x, torch.Tensor) or x.dim() < 1 or x.shape[0] != c_in:
                shape = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
                pad = (f" ({n_in} tokens padded to capacity_tokens)" if c_in != n_in else "")
                raise ValueError(f"zellige.torch {what}: tensor {i} has shape {shape}; expected "
                                 f"({c_in}, ...){pad}: this rank's {layout}-layout tokens "
                                 "first")
        dev = xs[0].device
        ix = self._ix(dev)
        sidx, ridx = (ix.lrows, ix.prows) if direction == 0 else (ix.prows, ix.lrows)
        sc, rc = ((self._send_counts, self._recv_counts) if direction == 0 else
                  (self._recv_counts, self._send_counts))
        parts, widths = [], []
        for x in xs:
            rows = x.detach()[:n_in].index_select(0, sidx).reshape(len(sidx),
                                                                  math.prod(x.shape[1:]))
            b = rows.contiguous().view(torch.uint8) if rows.numel() else \
                torch.empty(len(sidx), rows.shape[1] * x.element_size(), dtype=torch.uint8,
                            device=dev)
            parts.append(b)
            widths.append(b.shape[1])
        send = torch.cat(parts, 1) if len(parts) > 1 else parts[0]
        recv = torch.empty(sum(rc), send.shape[1], dtype=torch.uint8, device=dev)
        dist.all_to_all_single(recv, send, rc, sc, group=self.group)
        self.stats["bytes_dispatch"] += (sum(sc) - sc[self.rank]) * send.shape[1]
        self.stats["collectives"] += 1
        out, at = [], 0
        for x, w in zip(xs, widths):
            blk = recv[:, at:at + w].contiguous()
            at += w
            vals = blk.view(x.dtype) if blk.numel() else torch.empty(0, dtype=x.dtype, device=dev)
            y = (torch.empty if c_out == n_out else torch.zeros)(
                (c_out,) + tuple(x.shape[1:]), dtype=x.dtype, device=dev)
            y[ridx] = vals.reshape((len(ridx),) + tuple(x.shape[1:]))
            out.append(y)
        return out

    @torch.compiler.disable
    def dispatch(self, *xs: torch.Tensor) -> Any:
        """Loader layout -> plan layout: each tensor ``(loader_capacity, *rest)`` (any dtype;
        e.g. hidden states and their (frame, row, col) positions together) becomes
        ``(plan_capacity, *rest)``, all in one all-to-all (the capacities are the token
        counts unless ``capacity_tokens`` is given; padding rows come out zero).
        Autograd-aware (the backward is the undispatch of the gradients). Returns one tensor, or a tuple for several."""
        ys = _Move.apply(self, 0, *xs)
        return ys[0] if len(xs) == 1 else ys

    @torch.compiler.disable
    def undispatch(self, *ys: torch.Tensor) -> Any:
        """Plan layout -> loader layout; the exact inverse of :meth:`dispatch`."""
        xs = _Move.apply(self, 1, *ys)
        return xs[0] if len(ys) == 1 else xs

    # ---- attention --------------------------------------------------------------------------

    @torch.compiler.disable
    def attention(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                  return_lse: bool = False) -> Any:
        """Full (bidirectional) attention of every sequence of the plan: q, k, v are
        ``(plan_capacity, H, D)`` in the plan layout; returns o ``(plan_capacity, H, D)`` (and
        the log-sum-exp ``(plan_capacity, H)`` in fp32 when ``return_lse``; padding rows of
        both are zero), equal to running each
        whole sequence alone. Autograd-aware; the backward is collective too."""
        o, lse = _Attention.apply(q, k, v, self)
        return (o, lse) if return_lse else o

    def _check_qkv(self, *ts: torch.Tensor) -> None:
        want = (self.plan_capacity, self.n_heads, self.head_dim)
        what = ("plan_tokens" if self.plan_capacity == self.plan_tokens else
                f"plan_capacity (plan_tokens {self.plan_tokens} padded)")
        for name, t in zip("qkv", ts):
            if tuple(t.shape) != want:
                raise ValueError(f"zellige.torch attention: {name} has shape {tuple(t.shape)}; "
                                 f"expected {want} ({what}, n_heads, head_dim)")

    def _ulysses(self, ix: _Ix, src: torch.Tensor, fsrc: int, dsts: Sequence[Tuple[torch.Tensor,
                 int]], tag: int, lse: Optional[Tuple[torch.Tensor, torch.Tensor]] = None,
                 ) -> None:
        """Every Ulysses exchange in the global order. src (F, rows, D) is read at index list
        fsrc of each member (0: plan layout, 1: Q work, 2: KV work) and sent; what member m
        sends lands in dsts[i][0] (a (F_i, rows, D) tensor) at index list dsts[i][1] of m, the
        fields of src split over the dsts in order. lse: an extra (rows,) fp32 field (src,
        dst), sent with index list fsrc and received at the dsts[0] list."""
        D = self.head_dim
        widths = [d.shape[0] for d, _ in dsts]
        for kind, ranks, me, idx in ix.exchanges:
            if kind != S.ULYSSES:
                continue
            n = len(ranks)
            recvs, sends, bufs = [], [], []
            for m in range(n):
                if m == me:
                    continue
                cnt = len(idx[m][dsts[0][1]])
                buf = src.new_empty(src.shape[0], cnt, D)
                recvs.append((ranks[m], buf, tag))
                sends.append((ranks[m], src[:, idx[m][fsrc]].contiguous(), tag))
                lb = None
                if lse is not None:
                    lb = lse[0].new_empty(cnt)
                    recvs.append((ranks[m], lb, tag + 16))
                    sends.append((ranks[m], lse[0][idx[m][fsrc]].contiguous(), tag + 16))
                    self.stats["bytes_lse"] += (len(idx[m][fsrc]) * lse[0].element_size())
                bufs.append((m, buf, lb))
            works = self._post(recvs, sends, "alltoall")
            # my own block: a local copy
            self._scatter(src[:, idx[me][fsrc]], dsts, idx[me], widths)
            if lse is not None:
                lse[1][idx[me][dsts[0][1]]] = lse[0][idx[me][fsrc]]
            self._wait(works)
            for m, buf, lb in bufs:
                self._scatter(buf, dsts, idx[m], widths)
                if lb is not None:
                    lse[1][idx[m][dsts[0][1]]] = lb

    @staticmethod
    def _scatter(vals: torch.Tensor, dsts: Sequence[Tuple[torch.Tensor, int]],
                 idx: Tuple[torch.Tensor, ...], widths: Sequence[int]) -> None:
        at = 0
        for (d, f), w in zip(dsts, widths):
            d[:, idx[f]] = vals[at:at + w].to(d.dtype)
            at += w

    def _gathers(self, ix: _Ix, KV: torch.Tensor) -> None:
        """All-gathers of K/V sections (forward), in the global order."""
        for kind, ranks, me, idx in ix.exchanges:
            if kind != S.GATHER:
                continue
            mine = KV[:, idx[me][0]].contiguous()
            recvs, sends, bufs = [], [], []
            for m in range(len(ranks)):
                if m == me:
                    continue
                buf = KV.new_empty(2, len(idx[m][0]), self.head_dim)
                recvs.append((ranks[m], buf, _TAG_G_FWD))
                sends.append((ranks[m], mine, _TAG_G_FWD))
                bufs.append((m, buf))
            self._wait(self._post(recvs, sends, "allgather"))
            for m, buf in bufs:
                KV[:, idx[m][0]] = buf

    def _reduce_scatters(self, ix: _Ix, dKV: torch.Tensor) -> None:
        """Reduce-scatters of dK/dV sections (backward), summed in member order."""
        for kind, ranks, me, idx in ix.exchanges:
            if kind != S.GATHER:
                continue
            recvs, sends, parts = [], [], {}
            for m in range(len(ranks)):
                if m == me:
                    parts[m] = dKV[:, idx[me][0]]
                    continue
                buf = dKV.new_empty(2, len(idx[me][0]), self.head_dim)
                recvs.append((ranks[m], buf, _TAG_G_RED))
                sends.append((ranks[m], dKV[:, idx[m][0]].contiguous(), _TAG_G_RED))
                parts[m] = buf
            self._wait(self._post(recvs, sends, "allgather"))
            total = parts[0].clone()
            for m in range(1, len(ranks)):
                total += parts[m]
            dKV[:, idx[me][0]] = total

    def _ring_post(self, ix: _Ix, phase: int, kinds: Sequence[int],
                   bufs: Dict[Tuple[int, int], torch.Tensor]) -> Tuple[List[Any], List[Any]]:
        """Posts the ring postings of `phase` of the given kinds. bufs[(kind class, b)]: the
        (2, rows, D) tensor of buffer b (class 0: K/V, with b = 0 the KV work; 1: dK/dV
        accumulators). Returns the works and the receives to unpack after the wait."""
        recvs, sends, unpack = [], [], []
        ops = ix.ring.get(phase, {})
        for kind in kinds:
            for peer, b, rows, count in ops.get(kind, []):
                cls = 0 if kind in (S.KV_RECV, S.KV_SEND) else 1
                t = bufs[(cls, b)]
                tag = _ring_tag(phase, cls)
                if kind in (S.KV_RECV, S.ACC_RECV):
                    buf = t.new_empty(2, count, self.head_dim)
                    recvs.append((peer, buf, tag))
                    unpack.append((t, rows, buf))
                else:
                    sends.append((peer, t[:, rows].contiguous(), tag))
        return self._post(recvs, sends, "ring"), unpack

    def _ring_wait(self, pending: List[Tuple[List[Any], List[Any]]]) -> None:
        works = [w for ws, _ in pending for w in ws]
        self._wait(works)
        for _, unpack in pending:
            for t, rows, buf in unpack:
                t[:, rows] = buf

    def _use_flash(self, t: torch.Tensor) -> bool:
        if self.kernel == "flash" and t.device.type != "cpu":
            raise ValueError(f"zellige.torch Executor: kernel='flash' is PyTorch's fused CPU "
                             f"kernel; q/k/v are on {t.device}: use kernel='auto' or 'math'")
        return self.kernel == "flash" or (self.kernel == "auto" and t.device.type == "cpu")

    def _kernel_fwd(self, ix: _Ix, step: int, Qw: torch.Tensor, KV: torch.Tensor,
                    Ow: torch.Tensor, Lw: torch.Tensor) -> None:
        """Step `step`'s slices (K/V from KV: the work space at step 0, the ring buffer after):
        one batched kernel call per group; step >= 1 merges into Ow/Lw through the LSE (fp32).
        Padded groups (calls="step") zero their padded queries and mask their padded keys."""
        flash = self._use_flash(Qw)
        for qi, ki, qv, km in ix.groups[step]:
            Q, K, V = _take(Qw, qi), _take(KV[0], ki), _take(KV[1], ki)
            if qv is not None:
                Q = Q * qv[..., None]
            if flash:  # slices as a batch of one-head sequences: (n, 1, L, D)
                o, lse = _flash_fwd(Q[:, None], K[:, None], V[:, None], scale=self.scale,
                                    attn_mask=None if km is None else km.to(Q.dtype))
                o, lse = o[:, 0].float(), lse[:, 0].float()
            else:  # the plain math path, any device
                s = torch.bmm(Q.float(), K.float().transpose(1, 2)).mul_(self.scale)
                if km is not None:
                    s = s + km[:, 0]
                lse = torch.logsumexp(s, -1)
                o = torch.bmm(torch.exp(s - lse[..., None]), V.float())
            if qv is not None:
                rows, o, lse = qi[qv], o[qv], lse[qv]
            else:
                rows, o, lse = _flat(qi), o.reshape(-1, self.head_dim), lse.reshape(-1)
            if step == 0:
                Ow[rows] = o
                Lw[rows] = lse
            else:
                l0 = Lw[rows]
                new = torch.logaddexp(l0, lse)
                Ow[rows] = (Ow[rows] * torch.exp(l0 - new)[:, None] +
                            o * torch.exp(lse - new)[:, None])
                Lw[rows] = new
            self.stats["kernel_calls"] += 1

    def _kernel_bwd(self, ix: _Ix, step: int, Qw: torch.Tensor, KV: torch.Tensor,
                    dOw: torch.Tensor, Ow: torch.Tensor, Lw: torch.Tensor, Dw: torch.Tensor,
                    dQw: torch.Tensor, dKV: torch.Tensor) -> None:
        """Backward of step `step` from the final O and LSE (so ring steps need no rescaling):
        adds dQ into dQw and dK/dV into dKV (same rows as KV). Padded queries get Q = dO = O =
        LSE = 0 (they then add nothing) and padded keys are masked."""
        flash = self._use_flash(Qw)
        for qi, ki, qv, km in ix.groups[step]:
            Q, dO, O, L, Dd = (_take(W, qi) for W in (Qw, dOw, Ow, Lw, Dw))
            if qv is not None:
                z = qv[..., None]
                Q, dO, O, L, Dd = Q * z, dO * z, O * z, L * qv, Dd * qv
            K, V = _take(KV[0], ki), _take(KV[1], ki)
            if flash:
                dt = Qw.dtype
                dq, dk, dv = (g[:, 0] for g in _flash_bwd(
                    dO[:, None], Q[:, None], K[:, None], V[:, None], O.to(dt)[:, None],
                    L[:, None], 0.0, False, scale=self.scale,
                    attn_mask=None if km is None else km.to(dt)))
            else:
                Q, dO, K, V = Q.float(), dO.float(), K.float(), V.float()
                s = torch.bmm(Q, K.transpose(1, 2)).mul_(self.scale)
                if km is not None:
                    s = s + km[:, 0]
                p = torch.exp(s - L[..., None])
                dv = torch.bmm(p.transpose(1, 2), dO)
                ds = p * (torch.bmm(dO, V.transpose(1, 2)) - Dd[..., None])
                dq = torch.bmm(ds, K).mul_(self.scale)
                dk = torch.bmm(ds.transpose(1, 2), Q).mul_(self.scale)
            if qv is not None:
                kv = km[:, 0, 0] == 0
                dQw.index_add_(0, qi[qv], dq[qv].float())
                dKV[0].index_add_(0, ki[kv], dk[kv].float())
                dKV[1].index_add_(0, ki[kv], dv[kv].float())
            else:
                _add(dQw, qi, dq.float())
                _add(dKV[0], ki, dk.float())
                _add(dKV[1], ki, dv.float())
            self.stats["kernel_calls"] += 1

    def _fwd(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor
             ) -> Tuple[torch.Tensor, torch.Tensor, Tuple[torch.Tensor, ...]]:
        if self._rounds:  # round after round, in ascending order on every rank
            O, L = q.new_empty(q.shape), q.new_empty(q.shape[:2], dtype=torch.float32)
            saved: List[torch.Tensor] = []
            for sub, rows in self._rounds:
                rows = rows.to(q.device)
                o, lse, sv = sub._fwd(q[rows], k[rows], v[rows])
                O[rows], L[rows] = o, lse
                saved += sv
            return O, L, tuple(saved)
        sc, D, T, H = self._sched, self.head_dim, self.plan_tokens, self.n_heads
        ix = self._ix(q.device)
        X = torch.stack([q.detach().reshape(T * H, D), k.detach().reshape(T * H, D),
                         v.detach().reshape(T * H, D)])
        Qw = X.new_zeros(1, sc.q_rows, D)
        KV = X.new_zeros(2, sc.kv_rows, D)
        self._ulysses(ix, X, 0, [(Qw, 1), (KV, 2)], _TAG_U_FWD)
        self._gathers(ix, KV)
        f32 = dict(dtype=torch.float32, device=q.device)
        Ow = torch.zeros(sc.q_rows, D, **f32)
        Lw = torch.zeros(sc.q_rows, **f32)
        R = {s: X.new_zeros(2, sc.ring_rows, D) for s in range(1, sc.k_max)}
        bufs = {(0, 0): KV, **{(0, s): R[s] for s in R}}
        pending = [self._ring_post(ix, 1, (S.KV_RECV, S.KV_SEND), bufs)] if sc.k_max > 1 else []
        self._kernel_fwd(ix, 0, Qw[0], KV, Ow, Lw)
        for s in range(1, sc.k_max):
            self._ring_wait(pending)
            pending = ([self._ring_post(ix, s + 1, (S.KV_RECV, S.KV_SEND), bufs)]
                       if s + 1 < sc.k_max else [])
            self._kernel_fwd(ix, s, Qw[0], R[s], Ow, Lw)
        O = q.new_empty(1, T * H, D)
        L = torch.empty(T * H, **f32)
        self._ulysses(ix, Ow[None].to(q.dtype), 1, [(O, 0)], _TAG_U_INV, lse=(Lw, L))
        return O.reshape(T, H, D), L.reshape(T, H), (Qw[0], KV, Ow, Lw)

    def _bwd(self, saved: Sequence[torch.Tensor], dout: torch.Tensor
             ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        if self._rounds:
            grads = [dout.new_empty(dout.shape) for _ in range(3)]
            for x, (sub, rows) in enumerate(self._rounds):
                rows = rows.to(dout.device)
                for g, d in zip(grads, sub._bwd(saved[4 * x:4 * x + 4], dout[rows])):
                    g[rows] = d
            return grads[0], grads[1], grads[2]
        Qw, KV, Ow, Lw = saved
        sc, D, T, H = self._sched, self.head_dim, self.plan_tokens, self.n_heads
        ix = self._ix(dout.device)
        dOw = Qw.new_zeros(1, sc.q_rows, D)
        self._ulysses(ix, dout.reshape(1, T * H, D).to(Qw.dtype), 0, [(dOw, 1)], _TAG_U_BWD)
        dOw = dOw[0]
        Dw = (dOw.float() * Ow).sum(-1)
        f32 = dict(dtype=torch.float32, device=Qw.device)
        dQw = torch.zeros(sc.q_rows, D, **f32)
        dKV = torch.zeros(2, sc.kv_rows, D, **f32)
        R = {s: KV.new_zeros(2, sc.ring_rows, D) for s in range(1, sc.k_max)}
        A = {s: torch.zeros(2, sc.ring_rows, D, **f32) for s in range(1, sc.k_max + 1)}
        bufs = {(0, 0): KV, **{(0, s): R[s] for s in R}, **{(1, s): A[s] for s in A}}
        pending = [self._ring_post(ix, 1, (S.KV_RECV, S.KV_SEND), bufs)] if sc.k_max > 1 else []
        self._kernel_bwd(ix, 0, Qw, KV, dOw, Ow, Lw, Dw, dQw, dKV)
        for s in range(1, sc.k_max + 1) if sc.k_max > 1 else ():
            self._ring_wait(pending)
            pending = []
            if s + 1 <= sc.k_max:
                pending.append(self._ring_post(ix, s + 1, (S.ACC_RECV, S.KV_RECV, S.KV_SEND),
                                               bufs))
            if s < sc.k_max:
                self._kernel_bwd(ix, s, Qw, R[s], dOw, Ow, Lw, Dw, dQw, A[s])
                if s + 1 <= sc.k_max:
                    pending.append(self._ring_post(ix, s + 1, (S.ACC_SEND,), bufs))
            for b, src, dst in ix.homes.get(s, []):
                dKV[:, dst] += A[b][:, src]
        self._reduce_scatters(ix, dKV)
        dX = dout.new_empty(3, T * H, D)
        # dQ from Q rows, dK/dV from KV rows: two sources, one message per member
        self._ulysses_inverse3(ix, dQw, dKV, dX)
        return dX[0].reshape(T, H, D), dX[1].reshape(T, H, D), dX[2].reshape(T, H, D)

    def _ulysses_inverse3(self, ix: _Ix, dQw: torch.Tensor, dKV: torch.Tensor,
                          dX: torch.Tensor) -> None:
        """dQ (Q rows) and dK, dV (KV rows) back to the plan layout (dX: (3, T*H, D))."""
        D = self.head_dim
        for kind, ranks, me, idx in ix.exchanges:
            if kind != S.ULYSSES:
                continue

            def pack(m: int) -> torch.Tensor:
                return torch.cat([dQw[idx[m][1]][None], dKV[:, idx[m][2]]]).to(dX.dtype)

            recvs, sends, bufs = [], [], []
            for m in range(len(ranks)):
                if m == me:
                    continue
                buf = dX.new_empty(3, len(idx[m][0]), D)
                recvs.append((ranks[m], buf, _TAG_U_DINV))
                sends.append((ranks[m], pack(m), _TAG_U_DINV))
                bufs.append((m, buf))
            works = self._post(recvs, sends, "alltoall")
            dX[:, idx[me][0]] = pack(me)
            self._wait(works)
            for m, buf in bufs:
                dX[:, idx[m][0]] = buf

    def __repr__(self) -> str:
        return (f"Executor(rank {self.rank}/{self.world_size}, loader_tokens "
                f"{self.loader_tokens}, plan_tokens {self.plan_tokens}, H={self.n_heads}, "
                f"D={self.head_dim}, ring degree <= {self._sched.k_max})")


class _Move(torch.autograd.Function):
    """dispatch (direction 0) / undispatch (1); the backward moves gradients the other way."""

    @staticmethod
    def forward(ctx: Any, ex: Executor, direction: int, *xs: torch.Tensor) -> Any:
        ys = ex._move(direction, xs)
        ctx.ex, ctx.direction = ex, direction
        ctx.float_mask = [x.is_floating_point() or x.is_complex() for x in xs]
        ctx.shapes = [(tuple(x.shape), x.dtype, x.device) for x in xs]
        ctx.mark_non_differentiable(*[y for y, f in zip(ys, ctx.float_mask) if not f])
        return tuple(ys)

    @staticmethod
    def backward(ctx: Any, *gs: torch.Tensor) -> Any:
        ex: Executor = ctx.ex
        sel = [i for i, f in enumerate(ctx.float_mask) if f]
        n_out = ex.plan_capacity if ctx.direction == 0 else ex.loader_capacity
        grads = []
        for i in sel:
            g = gs[i]
            if g is None:
                shape, dtype, dev = ctx.shapes[i]
                g = torch.zeros((n_out,) + shape[1:], dtype=dtype, device=dev)
            grads.append(g)
        back = ex._move(1 - ctx.direction, grads) if grads else []
        out: List[Optional[torch.Tensor]] = [None] * len(ctx.float_mask)
        for i, b in zip(sel, back):
            out[i] = b
        return (None, None, *out)


class _Attention(torch.autograd.Function):
    """coalesced_attention: forward and the explicit backward (saved work space)."""

    @staticmethod
    def forward(ctx: Any, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                ex: Executor) -> Any:
        ex._check_qkv(q, k, v)
        T = ex.plan_tokens
        o, lse, saved = ex._fwd(q[:T], k[:T], v[:T])
        ctx.ex = ex
        ctx.save_for_backward(*saved)
        o, lse = _pad(o, ex.plan_capacity), _pad(lse, ex.plan_capacity)
        ctx.mark_non_differentiable(lse)
        return o, lse

    @staticmethod
    def backward(ctx: Any, do: torch.Tensor, dlse: Any) -> Any:
        ex = ctx.ex
        dq, dk, dv = ex._bwd(ctx.saved_tensors, do[:ex.plan_tokens].contiguous())
        return _pad(dq, ex.plan_capacity), _pad(dk, ex.plan_capacity), \
            _pad(dv, ex.plan_capacity), None


def _pad(x: torch.Tensor, rows: int) -> torch.Tensor:
    """x with zero rows appended up to `rows` (x itself when it has them)."""
    if x.shape[0] == rows:
        return x
    y = x.new_zeros((rows,) + tuple(x.shape[1:]))
    y[:x.shape[0]] = x
    return y


def _capacities(capacity: Any, loader: int, plan: int, rank: int) -> Tuple[int, int]:
    """(loader_capacity, plan_capacity) for Executor(capacity_tokens=capacity)."""
    if capacity is None:
        return loader, plan
    if capacity == "pow2":
        return tuple(1 << max(0, n - 1).bit_length() if n else 0 for n in (loader, plan))
    if isinstance(capacity, bool) or not isinstance(capacity, (int, np.integer)) or capacity < 0:
        raise ValueError(f"zellige.torch Executor: capacity_tokens {capacity!r}: expected None, "
                         "'pow2' or a non-negative int (rows of the padded layouts)")
    c = int(capacity)
    for what, n in (("data loader", loader), ("plan", plan)):
        if n > c:
            raise PlanError(f"zellige.torch Executor: rank {rank} holds {n} tokens in the {what} "
                            f"layout but capacity_tokens is {c}: raise capacity_tokens to >= {n} "
                            "(e.g. the planner's per-rank token cap) or use 'pow2'")
    return c, c


def coalesced_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                        ex: Executor) -> torch.Tensor:
    """``ex.attention(q, k, v)``: every configuration of the plan in the C engine's
    collectives, global order and kernel steps (see :class:`Executor`)."""
    return ex.attention(q, k, v)


def dispatch(x: torch.Tensor, ex: Executor) -> torch.Tensor:
    """``ex.dispatch(x)``: loader layout -> plan layout."""
    return ex.dispatch(x)


def undispatch(y: torch.Tensor, ex: Executor) -> torch.Tensor:
    """``ex.undispatch(y)``: plan layout -> loader layout."""
    return ex.undispatch(y)
