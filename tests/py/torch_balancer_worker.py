"""One rank of tests/py/test_torch_balancer.py (run with torchrun, gloo).

For each policy, every rank holds its own sequences (lengths differ per rank; one is long
enough to be split); the data of global sequence s is a function of s only, so each rank knows
what every routed row must be. Prints ``PASS <case>`` per check on rank 0 and exits non-zero
(with the reason) when one fails.
"""
from __future__ import annotations

import sys
from typing import List

import torch
import torch.distributed as dist
import torch.nn.functional as F

import zellige
import zellige.torch as zt

H, D = 4, 16
MODEL = {"preset": "tiny", "name": "balancer-test", "dim": H * D, "n_heads": H}
LOCAL = {0: [1500, 17, 64, 9], 1: [5, 220, 31]}   # rank -> its sequences (KnapFormer's seq_lens)


def seq_data(s: int, n: int, width: int, which: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(1000 * s + which)
    return torch.randn(n, width, generator=g, dtype=torch.float32)


def pack(rank: int, width: int, which: int) -> torch.Tensor:
    """This rank's own sequences packed in order: (sum(LOCAL[rank]), width)."""
    base = sum(len(LOCAL[r]) for r in range(rank))
    return torch.cat([seq_data(base + i, n, width, which) for i, n in enumerate(LOCAL[rank])])


def check(cond: bool, what: str) -> None:
    if not cond:
        print(f"FAIL rank {dist.get_rank()}: {what}", flush=True)
        sys.exit(1)


def main() -> None:
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    check(world == 2, f"run with 2 ranks, not {world}")
    lens: List[int] = [n for r in range(world) for n in LOCAL[r]]

    for policy, extra in (("zellige", {}), ("usp", {}), ("knapformer", {"bags": "g2n1"}),
                          ("dp", {})):
        bal = zt.Balancer(MODEL, "cpu:2", policy=policy, **extra)
        plan = bal.plan_routing(torch.tensor(LOCAL[rank]))
        check(bal.global_seq_lens == lens, f"{policy}: gathered lengths {bal.global_seq_lens}")
        split = sum(1 for s in plan.sequences if s.config.degree > 1)
        configs = sorted({tuple(s.config) for s in plan.sequences})
        if policy in ("usp", "knapformer"):
            check(split == len(lens), f"{policy}: {split} of {len(lens)} sequences split")
        if policy == "zellige":   # the 1500-token sequence is worth splitting on 2 ranks
            check(split >= 1, f"zellige split nothing: {configs}")

        # route: the plan layout is this rank's shards in plan order, rows of their sequences
        x = pack(rank, 7, 0)
        pos = torch.arange(x.shape[0], dtype=torch.int64)[:, None].repeat(1, 3) + 1000 * rank
        check(bal.local_tokens == x.shape[0], f"{policy}: local_tokens {bal.local_tokens}")
        xr, pr = bal.route(x, pos)
        want = [seq_data(s.index, s.tokens, 7, 0)[sh.start:sh.end]
                for s in plan.sequences for sh in s.shards if sh.rank == rank]
        want_t = torch.cat(want) if want else torch.zeros(0, 7)
        check(xr.shape[0] == bal.routed_tokens == want_t.shape[0],
              f"{policy}: routed {xr.shape[0]} rows, plan says {want_t.shape[0]}")
        check(torch.equal(xr, want_t), f"{policy}: routed rows differ from the plan's shards")
        check(pr.dtype == torch.int64, f"{policy}: positions came back as {pr.dtype}")
        xb, pb = bal.reverse_route(xr, pr)
        check(torch.equal(xb, x) and torch.equal(pb, pos),
              f"{policy}: reverse_route(route(x)) is not x")

        # attention over the routed shards equals each whole sequence's attention, and its
        # gradients (through route/reverse_route) equal the reference's
        q, k, v = (pack(rank, H * D, w).reshape(-1, H, D).requires_grad_() for w in (1, 2, 3))
        w_out = pack(rank, H * D, 4).reshape(-1, H, D)
        qr, kr, vr = bal.route(q, k, v)
        o = bal.reverse_route(bal.attention(qr, kr, vr))
        (o * w_out).sum().backward()
        base = sum(len(LOCAL[r]) for r in range(rank))
        a = 0
        for i, n in enumerate(LOCAL[rank]):
            s = base + i
            qs, ks, vs = (seq_data(s, n, H * D, w).reshape(n, H, D).requires_grad_()
                          for w in (1, 2, 3))
            ref = F.scaled_dot_product_attention(qs.transpose(0, 1), ks.transpose(0, 1),
                                                 vs.transpose(0, 1)).transpose(0, 1)
            (ref * seq_data(s, n, H * D, 4).reshape(n, H, D)).sum().backward()
            for name, got, exp in (("O", o[a:a + n], ref), ("dQ", q.grad[a:a + n], qs.grad),
                                   ("dK", k.grad[a:a + n], ks.grad),
                                   ("dV", v.grad[a:a + n], vs.grad)):
                err = float((got - exp).detach().abs().max() / exp.detach().abs().max())
                check(err <= 1e-5, f"{policy}: sequence {s} ({n} tokens) {name} relative "
                                   f"error {err:.2e}")
            a += n
        if rank == 0:
            print(f"PASS {policy}: route/reverse_route identity, attention and gradients equal "
                  f"the reference ({split} of {len(lens)} sequences split; configs {configs})"
                  f"{'; async plan and pow2 capacity checked next' if policy == 'zellige' else ''}",
                  flush=True)
        if policy == "zellige":
            # plan_routing_async + set_plan (the plan made on the planner's thread) gives the
            # same plan and routing as plan_routing
            bal2 = zt.Balancer(MODEL, "cpu:2", policy=policy)
            pending = bal2.plan_routing_async(LOCAL[rank])
            plan2 = bal2.set_plan(pending)
            check(pending.done() and pending.global_seq_lens == lens, "pending routing")
            strip = lambda p: [(tuple(s.config), s.shards) for s in p.sequences]  # noqa: E731
            check(strip(plan2) == strip(plan), f"async plan differs: {strip(plan2)}")
            check(torch.equal(bal2.route(x), xr), "async plan routes differently")
            bal2.close()
            # capacity_tokens="pow2": fixed row counts (padding rows in and out), same rows
            bal3 = zt.Balancer(MODEL, "cpu:2", policy=policy, capacity_tokens="pow2")
            bal3.plan_routing(LOCAL[rank])
            lc, rc = bal3.local_capacity, bal3.routed_capacity
            check(lc >= x.shape[0] and lc & (lc - 1) == 0 and rc & (rc - 1) == 0,
                  f"capacities {lc}, {rc} are not powers of two holding the tokens")
            xp = torch.cat([x, torch.full((lc - x.shape[0], 7), 9.0)])
            xr3 = bal3.route(xp)
            check(xr3.shape[0] == rc and torch.equal(xr3[:xr.shape[0]], xr) and
                  not xr3[xr.shape[0]:].any(), "padded route differs from the exact one")
            xb3 = bal3.reverse_route(xr3)
            check(torch.equal(xb3[:x.shape[0]], x) and not xb3[x.shape[0]:].any(),
                  "padded reverse_route(route(x)) is not x with zero padding")
            bal3.close()
        bal.close()

    # a cluster of the wrong size is refused with a message that says what to give
    try:
        zt.Balancer(MODEL, "cpu:4")
        check(False, "a 4-rank cluster was accepted for 2 processes")
    except zellige.PlanError as e:
        check("process group has 2" in str(e) and "cpu:2" in str(e), f"message: {e}")
    try:
        zt.Balancer(MODEL, "cpu:2").route(torch.zeros(3))
        check(False, "route before plan_routing was accepted")
    except RuntimeError as e:
        check("plan_routing" in str(e), f"message: {e}")
    bal = zt.Balancer(MODEL, "cpu:2")
    for bad, msg in (([3, 2.5], "seq_lens[1] = 2.5 is not a whole number"),
                     (torch.ones(2, 2, dtype=torch.int64), "must be 1-D"),
                     (torch.tensor([4.0]), "must hold integers")):
        try:
            bal.plan_routing(bad)
            check(False, f"plan_routing({bad!r}) was accepted")
        except zellige.PlanError as e:
            check(msg in str(e), f"message: {e}")
    if rank == 0:
        print("PASS errors: wrong cluster size, route before plan_routing, bad seq_lens",
              flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
