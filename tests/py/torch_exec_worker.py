"""Worker of tests/py/test_torch_exec.py: run under
``python3 -m torch.distributed.run --nproc-per-node N tests/py/torch_exec_worker.py --out F``
(gloo, CPU). Every rank runs the same plans through zellige.torch.Executor:

* random legal plans built directly as plan dicts: plan i forces configuration i mod (number of
  legal configs of N ranks), plus 1-4 more sequences of random configs (whole ones included) on
  random distinct rank lists (so rank sets overlap), ragged chunks, random origin ranks, and
  every third plan leaves one rank idle;
* one single-sequence plan per configuration of degree N with even chunks (bytes checked
  against the cost model);
* plans of the C planner (zellige.Planner) for a seeded batch.

Random plans alternate the kernel path (the fused CPU SDPA kernel, the math path) and the call
grouping (one call per slice shape; one padded call per step), so all four combinations run.

Per plan: leaf q, k, v in the loader layout -> dispatch (with positions) -> attention ->
undispatch -> loss (o * dout).sum() -> backward. The output and the q/k/v gradients are compared
with a single-process reference (SDPA per whole sequence in float64); dispatch must put exactly
the expected rows (and positions) in the plan layout and undispatch(dispatch(x)) must be x, bit
for bit. Rank 0 writes one JSON line per plan (errors reduced over the ranks) to --out.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
from typing import Any, Dict, List, Tuple

import torch
import torch.distributed as dist
import torch.nn.functional as F

import zellige
import zellige.torch as zt

H, D = 12, 8


def legal_configs(P: int, heads: int) -> List[Tuple[int, int, int]]:
    out = [(q, h, k) for q in range(1, P + 1) for h in range(1, P + 1) for k in range(1, P + 1)
           if q * h * k <= P and heads % h == 0]
    return sorted(out, key=lambda c: (c[0] * c[1] * c[2], c[0], c[2]))


def seq_dict(i: int, L: int, cfg: Tuple[int, int, int], ranks: List[int], bounds: List[int],
             origin: int) -> Dict[str, Any]:
    return {"id": i, "tokens": L, "config": {"q": cfg[0], "h": cfg[1], "k": cfg[2]},
            "ranks": ranks, "origin_rank": origin,
            "shards": [{"rank": r, "start": bounds[j], "end": bounds[j + 1]}
                       for j, r in enumerate(ranks)]}


def random_plan(rng: random.Random, P: int, force: Tuple[int, int, int], idle: int,
                max_tokens: int = 40) -> Dict[str, Any]:
    cfgs = legal_configs(P, H)
    pool = [r for r in range(P) if r != idle]
    seqs = []
    n = rng.randint(2, 5)
    for i in range(n):
        if i == 0:
            c = force
        elif i == 1:
            c = (1, 1, 1)  # a whole sequence next to the shards
        else:
            c = rng.choice([c for c in cfgs if c[0] * c[1] * c[2] <= len(pool)])
        deg = c[0] * c[1] * c[2]
        ranks = rng.sample(pool, deg)
        L = rng.randint(deg, max_tokens)
        bounds = [0] + sorted(rng.sample(range(1, L), deg - 1)) + [L]
        seqs.append(seq_dict(i, L, c, ranks, bounds, rng.randrange(P)))
    return {"world_size": P, "sequences": seqs}


def even_plan(P: int, c: Tuple[int, int, int], L: int) -> Dict[str, Any]:
    deg = c[0] * c[1] * c[2]
    bounds = [j * L // deg for j in range(deg + 1)]
    return {"world_size": P, "sequences": [seq_dict(0, L, c, list(range(deg)), bounds, 0)]}


def planner_plans(P: int, seed: int) -> List[Dict[str, Any]]:
    rng = random.Random(seed)
    planner = zellige.Planner(model="wan2.1-1.3b", cluster={"preset": "8xA800", "world_size": P})
    lens = [rng.randint(1024, 1536)] + [rng.randint(16, 96) for _ in range(rng.randint(3, 6))]
    plan = planner.plan(lens)
    d = plan.to_dict()
    for i, s in enumerate(d["sequences"]):
        s["origin_rank"] = i % P
    return [d, plan]  # the dict (with origins) and the Plan object itself


def data(seed: int, sid: int, L: int) -> List[torch.Tensor]:
    g = torch.Generator().manual_seed(seed * 100003 + sid)
    return [torch.rand(L, H, D, generator=g) * 2 - 1 for _ in range(4)]  # q, k, v, dout


def reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, do: torch.Tensor):
    q, k, v = (t.double().requires_grad_() for t in (q, k, v))
    o = F.scaled_dot_product_attention(q.transpose(0, 1)[None], k.transpose(0, 1)[None],
                                       v.transpose(0, 1)[None])[0].transpose(0, 1)
    (o * do.double()).sum().backward()
    return o.detach(), q.grad, k.grad, v.grad


def rel(a: torch.Tensor, b: torch.Tensor, den: float) -> float:
    if a.numel() == 0:
        return 0.0
    return float((a.double() - b).abs().max()) / max(den, 1e-30)


def run_plan(plan: Any, seed: int, origin: Any = None, kernel: str = "auto",
             calls: str = "shape") -> Dict[str, Any]:
    rank = dist.get_rank()
    ex = zt.Executor(plan, n_heads=H, head_dim=D, origin_ranks=origin, kernel=kernel,
                     calls=calls)
    cols = zt.plan_columns(plan)
    lens = cols.tokens.tolist()
    full = {i: data(seed, i, L) for i, L in enumerate(lens)}
    res: Dict[str, Any] = {}

    def loader(which: int) -> torch.Tensor:
        parts = [full[i][which] for i in ex.loader_sequences]
        return torch.cat(parts) if parts else torch.zeros(0, H, D)

    def positions(seqs: List[Tuple[int, int, int]]) -> torch.Tensor:
        parts = [torch.stack([torch.full((e - s,), i), torch.arange(s, e),
                              torch.arange(s, e) * 7 % 5], 1) for i, s, e in seqs]
        return torch.cat(parts).int() if parts else torch.zeros(0, 3, dtype=torch.int32)

    ql, kl, vl, dl = (loader(w) for w in range(4))
    pos_l = positions([(i, 0, lens[i]) for i in ex.loader_sequences])
    # dispatch puts exactly the plan layout's rows (and positions) here; undispatch inverts it
    ql.requires_grad_(), kl.requires_grad_(), vl.requires_grad_()
    qp, kp, vp, pos_p = ex.dispatch(ql, kl, vl, pos_l)
    want = [torch.cat([full[i][w][s:e] for i, s, e in ex.local_shards])
            if ex.local_shards else torch.zeros(0, H, D) for w in range(3)]
    res["dispatch_exact"] = bool(all(torch.equal(a.detach(), b)
                                     for a, b in zip((qp, kp, vp), want)) and
                                 torch.equal(pos_p, positions(ex.local_shards)))
    back = ex.undispatch(qp.detach(), pos_p)
    res["identity"] = bool(torch.equal(back[0], ql.detach()) and torch.equal(back[1], pos_l))
    ex.reset_stats()
    o = ex.attention(qp, kp, vp)
    ol = ex.undispatch(o)
    (ol * dl).sum().backward()
    res["stats"] = dict(ex.stats)
    # compare my loader sequences with the reference
    ef = eb = 0.0
    at = 0
    for i in ex.loader_sequences:
        L = lens[i]
        ro, rq, rk, rv = reference(*full[i])
        sl = slice(at, at + L)
        at += L
        ef = max(ef, rel(ol.detach()[sl], ro, float(ro.abs().max())))
        den = max(float(rq.abs().max()), float(rk.abs().max()), float(rv.abs().max()))
        for g, r in ((ql.grad, rq), (kl.grad, rk), (vl.grad, rv)):
            eb = max(eb, rel(g[sl], r, den))
    red = torch.tensor([ef, eb, 0.0 if res["dispatch_exact"] else 1.0,
                        0.0 if res["identity"] else 1.0], dtype=torch.float64)
    dist.all_reduce(red, op=dist.ReduceOp.MAX)
    res.update(err_fwd=float(red[0]), err_bwd=float(red[1]), dispatch_exact=bool(red[2] == 0),
               identity=bool(red[3] == 0))
    res["configs"] = sorted({tuple(int(x) for x in c) for c in cols.config.tolist()})
    seqs_of: Dict[int, List[int]] = {}
    for i in range(cols.n):
        for j in range(int(cols.offset[i]), int(cols.offset[i + 1])):
            seqs_of.setdefault(int(cols.shard_rank[j]), []).append(i)
    deg = [int(cols.offset[i + 1] - cols.offset[i]) for i in range(cols.n)]
    res["overlap"] = any(len(v) >= 2 and any(deg[i] > 1 for i in v) for v in seqs_of.values())
    res["idle_ranks"] = int(sum(1 for r in range(cols.world_size)
                                if r not in set(cols.shard_rank.tolist())))
    # per-rank stats gathered for the byte checks
    all_stats: List[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(all_stats, dict(res["stats"], k_max=ex._sched.k_max,
                                           plan_tokens=ex.plan_tokens))
    res["stats"] = all_stats
    res["rank_tokens"] = [int(sum(int(cols.shard_end[j] - cols.shard_start[j])
                                  for j in range(len(cols.shard_rank)) if cols.shard_rank[j] == r))
                          for r in range(cols.world_size)]
    return res


def bad_input(P: int) -> Dict[str, Any]:
    """Errors raised before any message (every rank raises the same one)."""
    good = even_plan(P, (1, 1, 1), 8)
    msgs, want = [], []

    def expect(fn: Any, text: str) -> None:
        try:
            fn()
            msgs.append("no error")
        except (ValueError, zellige.PlanError) as e:
            msgs.append(str(e))
        want.append(text)

    expect(lambda: zt.Executor(dict(good, world_size=P + 1), n_heads=H, head_dim=D),
           f"but the process group has {P}")
    expect(lambda: zt.Executor(good, n_heads=H, head_dim=D, origin_ranks=[P]), "outside")
    rounds = json.loads(json.dumps(good))
    rounds["sequences"][0]["round"] = 1
    expect(lambda: zt.Executor(rounds, n_heads=H, head_dim=D), "microbatch round")
    expect(lambda: zt.Executor(even_plan(P, (1, P, 1), 8 * P), n_heads=5, head_dim=D) if P > 1 else
           zt.Executor(even_plan(P, (1, 1, 1), 8), n_heads=H, head_dim=D).dispatch(
               torch.zeros(3, 2)), "divide" if P > 1 else "expected (")
    ex = zt.Executor(good, n_heads=H, head_dim=D)
    expect(lambda: ex.dispatch(torch.zeros(ex.loader_tokens + 1, 2)), "expected (")
    z = torch.zeros(ex.plan_tokens, H, D + 1)
    expect(lambda: ex.attention(z, z, z), "expected (")
    return {"kind": "errors", "messages": msgs, "want": want}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--plans", type=int, default=10, help="random plans")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    P, rank = dist.get_world_size(), dist.get_rank()
    rng = random.Random(a.seed * 31 + P)
    cfgs = legal_configs(P, H)
    lines = []
    for i in range(a.plans):
        force = cfgs[i % len(cfgs)]
        idle = rng.randrange(P) if i % 3 == 2 and force[0] * force[1] * force[2] < P else -1
        plan = random_plan(rng, P, force, idle)
        kernel = "math" if i % 2 else "auto"  # both kernel paths,
        calls = "step" if i % 4 >= 2 else "shape"  # each with and without padded steps
        r = run_plan(plan, a.seed + i, kernel=kernel, calls=calls)
        r.update(kind="random", index=i, force=list(force), kernel=kernel, calls=calls)
        lines.append(r)
    for c in cfgs:
        if c[0] * c[1] * c[2] != P:
            continue
        L = 24 * P
        r = run_plan(even_plan(P, c, L), a.seed)
        model = zt.comm_model_bytes(H, D, L, c)
        r.update(kind="even", config=list(c), tokens=L, model=model)
        lines.append(r)
    d, plan_obj = planner_plans(P, a.seed)
    for kind, p, org in (("planner_dict", d, None), ("planner_plan", plan_obj,
                                                    [s["origin_rank"] for s in d["sequences"]])):
        r = run_plan(p, a.seed + 7, origin=org)
        r.update(kind=kind)
        lines.append(r)
    lines.append(bad_input(P))
    if rank == 0:
        with open(a.out, "w") as f:
            for r in lines:
                f.write(json.dumps(r) + "\n")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
