"""A drop-in for KnapFormer's ``SequenceBalancer``: the same four calls, zellige's plans.

KnapFormer (Zhang et al. 2025) balances a step's sequences with ``SequenceBalancer(spec,
gamma)``: ``plan_routing(seq_lens)`` on every rank, ``route(x)`` before the transformer,
an attention hook per layer, ``reverse_route(y)`` after. :class:`Balancer` keeps that shape,
built on :class:`zellige.Planner` (the C planner; any policy, ``"zellige"`` by default) and
:class:`zellige.torch.Executor` (dispatch, coalesced attention, undispatch)::

    balancer = zellige.torch.Balancer(model="wan2.1-1.3b", cluster="8xH100")
    balancer.plan_routing(seq_lens)            # this rank's sequence lengths, as KnapFormer
    x = balancer.route(x)                      # (local tokens, ...) -> (routed tokens, ...)
    o = balancer.attention(q, k, v)            # in every attention layer, routed layout
    y = balancer.reverse_route(y)              # back to this rank's own sequences

The layouts match KnapFormer's: before ``route``, a rank holds its own sequences packed in
order; after it, the tokens zellige's plan puts on the rank (whole sequences and shards, in
plan order). ``policy="knapformer", bags="g1n2+g2n1", gamma=0.4`` reproduces KnapFormer's
own placement (the C library's bit-faithful port), so a user can switch the loop first and
the policy second.
"""
from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, List, Optional, Tuple

import torch
import torch.distributed as dist

from ..planner import Plan, PlanError, Planner, Spec

__all__ = ["Balancer", "PendingRouting"]


@dataclass(frozen=True)
class PendingRouting:
    """A plan being made on the planner's thread (:meth:`Balancer.plan_routing_async`) and the
    lengths it is for; :meth:`Balancer.set_plan` takes it."""

    future: "Future[Plan]"
    seq_lens: List[int]           # this rank's
    global_seq_lens: List[int]    # every rank's, in (rank, local index) order
    origin_ranks: List[int]

    def done(self) -> bool:
        """Whether the plan is ready (``set_plan`` will not wait)."""
        return self.future.done()

    def result(self) -> Plan:
        """The plan (waits for it; raises the planner's :class:`zellige.PlanError`)."""
        return self.future.result()


def _as_lengths(seq_lens: Any) -> List[int]:
    """This rank's sequence lengths (a list, tuple, numpy array or 1-D tensor) as ints."""
    if isinstance(seq_lens, torch.Tensor):
        if seq_lens.dim() != 1:
            raise PlanError(f"plan_routing: seq_lens must be 1-D, got shape "
                            f"{tuple(seq_lens.shape)}")
        if seq_lens.is_floating_point() or seq_lens.is_complex():
            raise PlanError(f"plan_routing: seq_lens must hold integers, got {seq_lens.dtype}")
        return [int(v) for v in seq_lens.detach().cpu().tolist()]
    try:
        out = [int(v) for v in seq_lens]
    except (TypeError, ValueError) as e:
        raise PlanError(f"plan_routing: seq_lens must be a list of token counts ({e})") from None
    for i, (v, w) in enumerate(zip(out, seq_lens)):
        if v != w:
            raise PlanError(f"plan_routing: seq_lens[{i}] = {w!r} is not a whole number")
    return out


class Balancer:
    """KnapFormer's ``SequenceBalancer`` workflow on zellige plans (see the module docstring).

    Args:
        model: the DiT the planner prices: a preset (``"wan2.1-1.3b"``, ``"tiny"``, …), a
            model JSON path or a dict (docs/formats.md §5). Its ``n_heads`` and
            ``dim / n_heads`` are the attention shape unless ``n_heads``/``head_dim`` are given.
        cluster: the cluster the plans are priced on; its world size must equal the group's
            (``"8xH100"``, ``"2x8xA800"``, ``"cpu:4"``, a JSON path or a dict). Default:
            ``"cpu:W"`` for a gloo group of W processes; on other backends it must be given.
        policy: ``"zellige"`` (default), ``"knapformer"`` (KnapFormer's own placement: give
            ``bags``), ``"usp"``, ``"dp"``, … (:func:`zellige.policies`).
        gamma: KnapFormer's attention weight γ (policy ``"knapformer"`` only).
        bags: KnapFormer's bag layout, e.g. ``"g1n2+g2n1+g4n1"`` (policy ``"knapformer"``).
        group: the process group to balance over (default: the default group).
        profile: a measured price table (``zellige profile``) instead of analytic prices.
        n_heads, head_dim: the q/k/v shape of :meth:`attention`, when it differs from the model's.
        capacity_tokens: ``None`` (exact row counts), an int ``C`` or ``"pow2"``: the row count of
            the tensors :meth:`route`, :meth:`attention` and :meth:`reverse_route` take and
            return, fixed across steps so a ``torch.compile``d model does not recompile
            (:class:`zellige.torch.Executor`; pad the input to :attr:`local_capacity` rows).
        **options: more planner options (:class:`zellige.Planner`).

    Raises:
        PlanError: a bad model, cluster, policy or option, or a cluster whose world size is not
            the group's.
    """

    def __init__(self, model: Spec = "wan2.1-1.3b", cluster: Optional[Spec] = None,
                 policy: str = "zellige", gamma: Optional[float] = None,
                 bags: Optional[str] = None, group: Optional[Any] = None,
                 profile: Optional[str] = None, n_heads: Optional[int] = None,
                 head_dim: Optional[int] = None, capacity_tokens: Any = None,
                 **options: Any) -> None:
        if not dist.is_available() or not dist.is_initialized():
            raise RuntimeError("zellige.torch.Balancer needs torch.distributed: call "
                               "torch.distributed.init_process_group first (torchrun sets the "
                               "environment it reads)")
        self.group = group
        self.rank: int = dist.get_rank(group)
        self.world_size: int = dist.get_world_size(group)
        if policy != "knapformer" and (bags is not None or gamma is not None):
            raise PlanError(f"bags and gamma are KnapFormer's settings; policy {policy!r} does "
                            "not take them (use policy='knapformer' to reproduce KnapFormer's "
                            "placement)")
        if cluster is None:
            if dist.get_backend(group) != "gloo":
                raise PlanError(f"Balancer: give the cluster the plans are priced on (e.g. "
                                f"cluster='{self.world_size}xH100'); the default cpu:"
                                f"{self.world_size} is only for gloo (CPU) process groups")
            cluster = f"cpu:{self.world_size}"
        self.planner = Planner(model, cluster, profile, policy, bags=bags, gamma=gamma,
                               **options)
        if self.planner.world_size != self.world_size:
            raise PlanError(f"cluster {self.planner.cluster.get('name', cluster)!r} has "
                            f"{self.planner.world_size} ranks but the process group has "
                            f"{self.world_size}; give a cluster of {self.world_size} ranks "
                            f"(e.g. '{self.world_size}xH100' or 'cpu:{self.world_size}')")
        m = self.planner.model
        self.n_heads: int = int(n_heads if n_heads is not None else m["n_heads"])
        self.head_dim: int = int(head_dim if head_dim is not None else m["dim"] // m["n_heads"])
        self.capacity_tokens: Any = capacity_tokens
        self.plan: Optional[Plan] = None
        self.executor: Optional[Any] = None
        self.seq_lens: List[int] = []           # this rank's lengths at the last plan_routing
        self.global_seq_lens: List[int] = []    # every rank's, in (rank, local index) order
        self.origin_ranks: List[int] = []

    # -- planning --------------------------------------------------------------------------------

    def _gather(self, seq_lens: Any) -> Tuple[List[int], List[int], List[int]]:
        mine = _as_lengths(seq_lens)
        every: List[Any] = [None] * self.world_size
        dist.all_gather_object(every, mine, group=self.group)
        lens: List[int] = []
        origin: List[int] = []
        for r, ls in enumerate(every):
            lens += ls
            origin += [r] * len(ls)
        return mine, lens, origin

    def plan_routing(self, seq_lens: Any, metadata: Any = None) -> Plan:
        """Plans this step: gathers every rank's sequence lengths (one all-gather over the
        group; global sequence ids in (rank, local index) order, as KnapFormer numbers them),
        plans them with the C planner (each rank plans the same batch; plans are
        deterministic) and builds the executor. Collective: every rank of the group calls it.

        Args:
            seq_lens: the token count of each sequence this rank holds, in packing order.
            metadata: optional per-sequence metadata for the *global* batch
                (:meth:`zellige.Planner.plan`).

        Returns:
            The plan (also :attr:`plan`).
        """
        mine, lens, origin = self._gather(seq_lens)
        return self._use(self.planner.plan(lens, origin_ranks=origin, metadata=metadata),
                         mine, lens, origin)

    def plan_routing_async(self, seq_lens: Any, metadata: Any = None) -> "PendingRouting":
        """:meth:`plan_routing` with the planning on the planner's thread: the gather runs now
        (collective), the C planner in the background (it releases the GIL). Pass the result
        to :meth:`set_plan` when the step that uses it starts: plan step t+1 while step t
        trains."""
        mine, lens, origin = self._gather(seq_lens)
        fut = self.planner.plan_async(lens, origin_ranks=origin, metadata=metadata)
        return PendingRouting(fut, mine, lens, origin)

    def set_plan(self, pending: "PendingRouting") -> Plan:
        """Waits for a :meth:`plan_routing_async` plan and makes it the one :meth:`route`,
        :meth:`attention` and :meth:`reverse_route` follow. Returns the plan."""
        if not isinstance(pending, PendingRouting):
            raise TypeError(f"Balancer.set_plan takes what plan_routing_async returned, not "
                            f"{type(pending).__name__}")
        return self._use(pending.result(), pending.seq_lens, pending.global_seq_lens,
                         pending.origin_ranks)

    def _use(self, plan: Plan, seq_lens: List[int], global_seq_lens: List[int],
             origin_ranks: List[int]) -> Plan:
        from . import Executor
        self.executor = Executor(plan, n_heads=self.n_heads, head_dim=self.head_dim,
                                 group=self.group, origin_ranks=origin_ranks,
                                 capacity_tokens=self.capacity_tokens)
        self.plan = plan
        self.seq_lens, self.global_seq_lens, self.origin_ranks = (seq_lens, global_seq_lens,
                                                                  origin_ranks)
        return plan

    def _ex(self, what: str) -> Any:
        if self.executor is None:
            raise RuntimeError(f"Balancer.{what}: call plan_routing(seq_lens) first")
        return self.executor

    # -- the step ----------------------------------------------------------------------------

    def route(self, *tensors: torch.Tensor) -> Any:
        """Moves per-token tensors from this rank's own sequences (``(sum(seq_lens), ...)``,
        packed in order) to the plan's layout (``(routed_tokens, ...)``). Several tensors
        (hidden states, positions, ...) travel in one all-to-all, each keeping its dtype, and
        come back as a tuple; autograd-aware."""
        return self._ex("route").dispatch(*tensors)

    def reverse_route(self, *tensors: torch.Tensor) -> Any:
        """The exact inverse of :meth:`route`."""
        return self._ex("reverse_route").undispatch(*tensors)

    def attention(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Self-attention of every routed sequence over its own tokens (whole sequences and
        the plan's distributed shards; q, k, v are ``(routed_tokens, n_heads, head_dim)``).
        Replaces KnapFormer's ``pre_attn`` / varlen flash attention / ``post_attn``."""
        return self._ex("attention").attention(q, k, v)

    # -- what KnapFormer users read -------------------------------------------------------------

    @property
    def local_tokens(self) -> int:
        """Tokens this rank holds before :meth:`route` (``sum(seq_lens)``)."""
        return int(self._ex("local_tokens").loader_tokens)

    @property
    def routed_tokens(self) -> int:
        """Tokens this rank holds after :meth:`route`."""
        return int(self._ex("routed_tokens").plan_tokens)

    @property
    def local_capacity(self) -> int:
        """Rows :meth:`route` takes (``local_tokens`` unless ``capacity_tokens`` pads them)."""
        return int(self._ex("local_capacity").loader_capacity)

    @property
    def routed_capacity(self) -> int:
        """Rows :meth:`route` returns (``routed_tokens`` unless ``capacity_tokens`` pads them)."""
        return int(self._ex("routed_capacity").plan_capacity)

    @property
    def stats(self) -> Any:
        """The executor's counters (bytes per class, collectives, kernel calls)."""
        return self._ex("stats").stats

    def close(self) -> None:
        """Frees the planner (and its background thread)."""
        self.planner.close()
