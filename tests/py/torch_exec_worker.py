"""Worker of tests/py/test_torch_exec.py: run under
``python3 -m torch.distributed.run --nproc-per-node N tests/py/torch_exec_worker.py --out F``
(gloo, CPU; ``--device cuda`` runs the same checks with NCCL on each rank's GPU, LOCAL_RANK's,
bench/gpu/torch_cuda.sh). World sizes 1..N are checked one after another in this one launch:
size P on the group of ranks 0..P-1 (``--plans`` gives the random plans per size). Every rank of
a size runs the same plans through zellige.torch.Executor:

* random legal plans built directly as plan dicts: plan i forces configuration i mod (number of
  legal configs of N ranks), plus 1-4 more sequences of random configs (whole ones included) on
  random distinct rank lists (so rank sets overlap), ragged chunks, random origin ranks, and
  every third plan leaves one rank idle, and every third (another) has 2-3 microbatch rounds;
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
from typing import Any, Dict, List, Tuple

import torch
import torch.distributed as dist
import torch.nn.functional as F

import zellige
import zellige.torch as zt

H, D = 12, 8
_GROUP: Any = None  # the group of the world size being checked (None: the whole launch)
DEV = torch.device("cpu")  # where the executor's tensors live (--device); references stay on CPU


def EX(plan: Any, **kw: Any) -> Any:
    """zt.Executor on the current world size's group."""
    return zt.Executor(plan, group=_GROUP, **kw)


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
    plan = planner.plan(lens, origin_ranks=[i % P for i in range(len(lens))])
    d = plan.to_dict()
    for i, s in enumerate(d["sequences"]):
        s["origin_rank"] = i % P
    out = [d, plan]  # the dict (with origins) and the Plan object itself (carrying them)
    if P in (2, 4):  # megatron's microbatch rounds, from a zellige.Plan
        meg = zellige.Planner(model="wan2.1-1.3b", cluster={"preset": "8xA800", "world_size": P},
                              policy="megatron", max_seqlen_per_rank=200 if P == 2 else 128)
        out.append(meg.plan([300, 60, 50, 40, 30], origin_ranks=[0, 1, 1 % P, 3 % P, 0]))
    return out


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
             calls: str = "shape", group: Any = None) -> Dict[str, Any]:
    ex = zt.Executor(plan, n_heads=H, head_dim=D, origin_ranks=origin, kernel=kernel,
                     calls=calls, group=group)
    cols = zt.plan_columns(plan)
    lens = cols.tokens.tolist()
    full = {i: data(seed, i, L) for i, L in enumerate(lens)}
    res: Dict[str, Any] = {}

    def loader(which: int) -> torch.Tensor:
        parts = [full[i][which] for i in ex.loader_sequences]
        return (torch.cat(parts) if parts else torch.zeros(0, H, D)).to(DEV)

    def positions(seqs: List[Tuple[int, int, int]]) -> torch.Tensor:
        parts = [torch.stack([torch.full((e - s,), i), torch.arange(s, e),
                              torch.arange(s, e) * 7 % 5], 1) for i, s, e in seqs]
        out = torch.cat(parts).int() if parts else torch.zeros(0, 3, dtype=torch.int32)
        return out.to(DEV)

    ql, kl, vl, dl = (loader(w) for w in range(4))
    pos_l = positions([(i, 0, lens[i]) for i in ex.loader_sequences])
    # dispatch puts exactly the plan layout's rows (and positions) here; undispatch inverts it
    ql.requires_grad_(), kl.requires_grad_(), vl.requires_grad_()
    qp, kp, vp, pos_p = ex.dispatch(ql, kl, vl, pos_l)
    want = [torch.cat([full[i][w][s:e] for i, s, e in ex.local_shards])
            if ex.local_shards else torch.zeros(0, H, D) for w in range(3)]
    res["dispatch_exact"] = bool(all(torch.equal(a.detach().cpu(), b)
                                     for a, b in zip((qp, kp, vp), want)) and
                                 torch.equal(pos_p, positions(ex.local_shards)))
    back = ex.undispatch(qp.detach(), pos_p)
    res["identity"] = bool(torch.equal(back[0], ql.detach()) and torch.equal(back[1], pos_l))
    ex.reset_stats()
    o = ex.attention(qp, kp, vp)
    ol = ex.undispatch(o)
    (ol * dl).sum().backward()
    res["stats"] = dict(ex.stats)
    res["device"] = str(o.device)
    ol, gq, gk, gv = (t.detach().cpu() for t in (ol, ql.grad, kl.grad, vl.grad))
    # compare my loader sequences with the reference
    ef = eb = 0.0
    at = 0
    for i in ex.loader_sequences:
        L = lens[i]
        ro, rq, rk, rv = reference(*full[i])
        sl = slice(at, at + L)
        at += L
        ef = max(ef, rel(ol[sl], ro, float(ro.abs().max())))
        den = max(float(rq.abs().max()), float(rk.abs().max()), float(rv.abs().max()))
        for g, r in ((gq, rq), (gk, rk), (gv, rv)):
            eb = max(eb, rel(g[sl], r, den))
    red = torch.tensor([ef, eb, 0.0 if res["dispatch_exact"] else 1.0,
                        0.0 if res["identity"] else 1.0], dtype=torch.float64, device=DEV)
    dist.all_reduce(red, op=dist.ReduceOp.MAX, group=group)
    res.update(err_fwd=float(red[0]), err_bwd=float(red[1]), dispatch_exact=bool(red[2] == 0),
               identity=bool(red[3] == 0))
    res["rounds"] = int(cols.rounds.max()) + 1 if cols.rounds is not None else 1
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
    all_stats: List[Any] = [None] * dist.get_world_size(group)
    dist.all_gather_object(all_stats, dict(res["stats"], k_max=ex._sched.k_max,
                                           plan_tokens=ex.plan_tokens), group=group)
    res["stats"] = all_stats
    res["rank_tokens"] = [int(sum(int(cols.shard_end[j] - cols.shard_start[j])
                                  for j in range(len(cols.shard_rank)) if cols.shard_rank[j] == r))
                          for r in range(cols.world_size)]
    return res


def bf16_check(P: int) -> Dict[str, Any]:
    """bf16 q/k/v on a random plan: outputs and gradients keep the dtype and stay within bf16
    rounding of the fp32 run (max relative error per tensor, reduced over ranks)."""
    rng = random.Random(99 + P)
    plan = random_plan(rng, P, legal_configs(P, H)[-1], -1)
    errs: Dict[str, float] = {}
    for kernel, calls in (("auto", "shape"), ("math", "step")):
        ex = EX(plan, n_heads=H, head_dim=D, kernel=kernel, calls=calls)
        g = torch.Generator().manual_seed(5 + dist.get_rank(_GROUP))
        q, k, v, do = ((torch.rand(ex.plan_tokens, H, D, generator=g) * 2 - 1).to(DEV)
                       for _ in range(4))
        out = {}
        for dt in (torch.float32, torch.bfloat16):
            qq, kk, vv = (t.to(dt).clone().requires_grad_() for t in (q, k, v))
            o = ex.attention(qq, kk, vv)
            (o.float() * do).sum().backward()
            assert o.dtype == dt and qq.grad.dtype == dt and kk.grad.dtype == dt
            out[dt] = [o.detach().float(), qq.grad.float(), kk.grad.float(), vv.grad.float()]
        e = torch.tensor([float((a - b).abs().max() / b.abs().max().clamp_min(1e-30))
                          if b.numel() else 0.0
                          for a, b in zip(out[torch.bfloat16], out[torch.float32])],
                         dtype=torch.float64, device=DEV)
        dist.all_reduce(e, op=dist.ReduceOp.MAX, group=_GROUP)
        errs[f"{kernel}/{calls}"] = float(e.max())
    return {"kind": "bf16", "errs": errs, "configs": [list(plan["sequences"][0]["config"].values())]}


def compile_check(P: int, seed: int) -> Dict[str, Any]:
    """capacity_tokens: ONE torch.compile'd training step (dispatch -> qkv projection ->
    attention -> output map -> undispatch, the collectives as graph breaks) over 3 random plans
    of different token counts compiles its graphs once (dynamo's frame count does not grow after
    the first plan); without a capacity (exact shapes, dynamic=False) the first 2 plans already
    recompile. Outputs and
    gradients equal a per-sequence float64 reference; padding rows are zero."""
    from torch._dynamo.testing import CompileCounterWithBackend
    rng = random.Random(seed)
    g = torch.Generator().manual_seed(seed)
    w = (torch.rand(H * D, 3 * H * D, generator=g) * 2 - 1) / (H * D) ** 0.5
    cfgs = legal_configs(P, H)
    plans = [random_plan(rng, P, cfgs[-1 - i % len(cfgs)], -1) for i in range(3)]

    def step(x: torch.Tensor, ex: Any) -> torch.Tensor:
        xp = ex.dispatch(x)
        qkv = (xp @ w).reshape(xp.shape[0], 3, H, D)
        o = ex.attention(qkv[:, 0], qkv[:, 1], qkv[:, 2])
        return ex.undispatch(torch.tanh(o.reshape(o.shape[0], H * D)) * 2)

    counts: Dict[str, List[int]] = {}
    err, pad_zero, shapes = 0.0, True, set()
    for cap in (256, None):
        torch._dynamo.reset()
        cnt = CompileCounterWithBackend("aot_eager")
        f = torch.compile(step, backend=cnt, dynamic=False)
        counts[str(cap)] = []
        for j, plan in enumerate(plans if cap else plans[:2]):
            ex = EX(plan, n_heads=H, head_dim=D, capacity_tokens=cap)
            lens = [s["tokens"] for s in plan["sequences"]]
            xs = {i: torch.rand(lens[i], H * D, generator=torch.Generator().manual_seed(
                seed * 7 + 100 * j + i)) * 2 - 1 for i in ex.loader_sequences}
            x = torch.zeros(ex.loader_capacity, H * D)
            at = 0
            for i in ex.loader_sequences:
                x[at:at + lens[i]] = xs[i]
                at += lens[i]
            x.requires_grad_()
            y = f(x, ex)
            (y * torch.cos(torch.arange(y.numel()).reshape(y.shape).float())).sum().backward()
            counts[str(cap)].append(cnt.frame_count)
            shapes.add((cap, tuple(y.shape)))
            pad_zero &= bool((y[ex.loader_tokens:] == 0).all() and
                             (x.grad[ex.loader_tokens:] == 0).all())
            at = 0
            for i in ex.loader_sequences:
                xr = xs[i].double().requires_grad_()
                qkv = (xr @ w.double()).reshape(lens[i], 3, H, D).permute(1, 2, 0, 3)
                o = F.scaled_dot_product_attention(qkv[0][None], qkv[1][None],
                                                   qkv[2][None])[0].transpose(0, 1)
                yr = torch.tanh(o.reshape(lens[i], H * D)) * 2
                cosw = torch.cos(torch.arange(at * H * D, (at + lens[i]) * H * D).float()
                                 ).reshape(lens[i], H * D)
                (yr * cosw.double()).sum().backward()
                sl = slice(at, at + lens[i])
                err = max(err, rel(y.detach()[sl], yr.detach(), float(yr.abs().max())),
                          rel(x.grad[sl], xr.grad, float(xr.grad.abs().max())))
                at += lens[i]
    red = torch.tensor([err, 0.0 if pad_zero else 1.0], dtype=torch.float64)
    dist.all_reduce(red, op=dist.ReduceOp.MAX, group=_GROUP)
    all_counts: List[Any] = [None] * P
    dist.all_gather_object(all_counts, counts, group=_GROUP)
    return {"kind": "compile", "err": float(red[0]), "pad_zero": bool(red[1] == 0),
            "frames": all_counts, "cap_shapes": sorted(s[1] for s in shapes if s[0] == 256),
            "tokens": [sum(s["tokens"] for s in p["sequences"]) for p in plans]}


def rank_has(plan: Dict[str, Any]) -> bool:
    """Whether this rank holds tokens of the plan (plan layout) or loads some (loader layout)."""
    r = dist.get_rank(_GROUP)
    return any(sh["rank"] == r for s in plan["sequences"] for sh in s["shards"]) or \
        any(s.get("origin_rank") == r for s in plan["sequences"])


def bad_input(P: int) -> Dict[str, Any]:
    """Errors raised before any message (every rank raises the same one)."""
    good = even_plan(P, (1, 1, 1), 8)
    msgs, want = [], []
    no_origin = json.loads(json.dumps(good))
    del no_origin["sequences"][0]["origin_rank"]
    planned = zellige.Planner(model="wan2.1-1.3b", cluster={"preset": "8xA800",
                                                             "world_size": P}).plan([8, 9])

    def expect(fn: Any, text: str) -> None:
        try:
            fn()
            msgs.append("no error")
        except (ValueError, zellige.PlanError) as e:
            msgs.append(str(e))
        want.append(text)

    expect(lambda: EX(dict(good, world_size=P + 1), n_heads=H, head_dim=D),
           f"but the process group has {P}")
    expect(lambda: EX(good, n_heads=H, head_dim=D, origin_ranks=[P]), "outside")
    expect(lambda: EX(no_origin, n_heads=H, head_dim=D), "origin_ranks not given")
    expect(lambda: EX(planned, n_heads=H, head_dim=D), "origin_ranks not given")
    expect(lambda: EX(planned, n_heads=H, head_dim=D, origin_ranks="first"),
           "'first_shard'")
    first = EX(no_origin, n_heads=H, head_dim=D, origin_ranks="first_shard")
    msgs.append(f"loader {first.loader_sequences}")
    want.append(f"loader {[0] if dist.get_rank(_GROUP) == 0 else []}")
    rounds = json.loads(json.dumps(good))
    rounds["sequences"][0]["round"] = -1
    expect(lambda: EX(rounds, n_heads=H, head_dim=D), "has round -1")
    expect(lambda: EX(even_plan(P, (1, P, 1), 8 * P), n_heads=5, head_dim=D) if P > 1 else
           EX(even_plan(P, (1, 1, 1), 8), n_heads=H, head_dim=D).dispatch(
               torch.zeros(3, 2, device=DEV)), "divide" if P > 1 else "expected (")
    ex = EX(good, n_heads=H, head_dim=D)
    expect(lambda: ex.dispatch(torch.zeros(ex.loader_tokens + 1, 2, device=DEV)), "expected (")
    z = torch.zeros(ex.plan_tokens, H, D + 1, device=DEV)
    expect(lambda: ex.attention(z, z, z), "expected (")
    expect(lambda: EX(good, n_heads=H, head_dim=D, capacity_tokens=7 if rank_has(good)
                               else -1), "capacity_tokens")
    expect(lambda: EX(good, n_heads=H, head_dim=D, capacity_tokens="max"),
           "capacity_tokens")
    # "pow2": each layout padded to its next power of two; padded attention = exact attention
    nine = even_plan(P, (1, 1, 1), 9)
    ex_p, ex_e = (EX(nine, n_heads=H, head_dim=D, capacity_tokens=c) for c in ("pow2", None))
    mine = 9 if dist.get_rank(_GROUP) == 0 else 0
    msgs.append(f"pow2 {ex_p.loader_capacity} {ex_p.plan_capacity}")
    want.append(f"pow2 {16 if mine else 0} {16 if mine else 0}")
    qkv = torch.rand(ex_p.plan_capacity, 3, H, D, generator=torch.Generator().manual_seed(1))
    qkv = qkv.to(DEV)
    qkv[mine:] = 7.0  # padding rows: ignored
    o_p, o_e = ex_p.attention(*qkv.unbind(1)), ex_e.attention(*qkv[:mine].unbind(1))
    msgs.append(f"pow2 attention equal {torch.equal(o_p[:mine], o_e)} pad zero "
                f"{bool((o_p[mine:] == 0).all())}")
    want.append("pow2 attention equal True pad zero True")
    exc = EX(good, n_heads=H, head_dim=D, capacity_tokens=16)
    expect(lambda: exc.dispatch(torch.zeros(exc.loader_tokens, 2, device=DEV))
           if exc.loader_tokens != 16 else exc.dispatch(torch.zeros(3, 2, device=DEV)),
           "padded to capacity_tokens")
    return {"kind": "errors", "messages": msgs, "want": want}


def run_world(P: int, seed: int, n_plans: int) -> List[Dict[str, Any]]:
    """Every check on a world of P ranks (the group _GROUP: ranks 0..P-1 of the launch)."""
    rank = dist.get_rank()
    rng = random.Random(seed * 31 + P)
    cfgs = legal_configs(P, H)
    lines = []
    for i in range(n_plans):
        force = cfgs[i % len(cfgs)]
        idle = rng.randrange(P) if i % 3 == 2 and force[0] * force[1] * force[2] < P else -1
        plan = random_plan(rng, P, force, idle)
        if i % 3 == 1:  # microbatch rounds: 2-3 rounds, rank sets overlapping across rounds
            nr = rng.randint(2, 3)
            for j, sq in enumerate(plan["sequences"]):
                sq["round"] = j % nr if j < nr else rng.randrange(nr)
        kernel = "math" if i % 2 else "auto"  # both kernel paths,
        calls = "step" if i % 4 >= 2 else "shape"  # each with and without padded steps
        r = run_plan(plan, seed + i, kernel=kernel, calls=calls, group=_GROUP)
        r.update(kind="random", index=i, force=list(force), kernel=kernel, calls=calls)
        lines.append(r)
    for c in cfgs:
        if c[0] * c[1] * c[2] != P:
            continue
        L = 24 * P
        r = run_plan(even_plan(P, c, L), seed, group=_GROUP)
        model = zt.comm_model_bytes(H, D, L, c)
        r.update(kind="even", config=list(c), tokens=L, model=model)
        lines.append(r)
    for kind, p in zip(("planner_dict", "planner_plan", "planner_rounds"),
                       planner_plans(P, seed)):
        r = run_plan(p, seed + 7, group=_GROUP)  # origins: the dict's origin_rank, the Plan's
        r.update(kind=kind)
        lines.append(r)
    if P == 4 and _GROUP is None:
        # a subgroup (global ranks 1, 2, 3 = group ranks 0, 1, 2): peers are group ranks, the
        # dispatch all-to-all runs on the group; rank 0 takes no part
        g = dist.new_group([1, 2, 3])
        subs = []
        if rank != 0:
            for i in range(2):
                plan = random_plan(rng, 3, legal_configs(3, H)[4 + i], -1)
                r = run_plan(plan, seed + 50 + i, calls="step" if i else "shape", group=g)
                r.update(kind="subgroup", index=i)
                subs.append(r)
        obj: List[Any] = [subs]
        dist.broadcast_object_list(obj, src=1)
        lines.extend(obj[0])
    lines.append(bf16_check(P))
    if P == 2 and DEV.type == "cpu":  # one size only: dynamo's compiles cost seconds of CPU
        lines.append(compile_check(P, seed + 11))
    lines.append(bad_input(P))
    for r in lines:
        r["world"] = P
    return lines


def main() -> None:
    global _GROUP, DEV
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--plans", default="10", help="random plans per world size: one number, "
                    "or one per world size 1..N (comma-separated; 0 skips that size)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"),
                    help="cuda: each rank on GPU LOCAL_RANK, NCCL (unless --backend)")
    ap.add_argument("--backend", default=None, help="default: gloo on cpu, nccl on cuda")
    a = ap.parse_args()
    torch.set_num_threads(1)
    if a.device == "cuda":
        if not torch.cuda.is_available():
            raise SystemExit("--device cuda: torch sees no CUDA device")
        local = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local)  # before NCCL's first collective: its communicator's GPU
        DEV = torch.device("cuda", local)
    dist.init_process_group(a.backend or ("nccl" if a.device == "cuda" else "gloo"))
    W, rank = dist.get_world_size(), dist.get_rank()
    plans = [int(x) for x in a.plans.split(",")]
    plans = plans * W if len(plans) == 1 else plans
    if len(plans) != W:
        raise SystemExit(f"--plans: {len(plans)} counts for world sizes 1..{W}")
    # world sizes 1..W in ONE launch: size P runs on the group of ranks 0..P-1 (created by
    # every rank, in the same order), the other ranks wait at the next size
    groups = {P: dist.new_group(list(range(P))) if P < W else None for P in range(1, W + 1)}
    lines = []
    for P in range(1, W + 1):
        if plans[P - 1] > 0 and rank < P:
            _GROUP = groups[P]
            lines += run_world(P, a.seed, plans[P - 1])
        dist.barrier()
    _GROUP = None
    if rank == 0:
        with open(a.out, "w") as f:
            for r in lines:
                f.write(json.dumps(r) + "\n")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
