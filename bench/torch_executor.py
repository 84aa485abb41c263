#!/usr/bin/env python3
"""zellige.torch executor benchmark (prints tables and one JSON line per part).

Part 1, overhead (one process, world size 1, gloo): one attention layer forward + backward over
a batch of whole sequences, plan-driven (``Executor.attention``: the C engine's schedule; mode
"shape": one batched kernel call per slice shape and step, "step": one padded call per step) vs the same work as one
``scaled_dot_product_attention`` call per sequence (autograd backward), best of --reps, on the
same data, the two run alternately. Batches (--seqs sequences): uniform lengths (one slice
shape: one kernel call per direction), mixed lengths, and mixed with one long sequence.

Part 2, communication (``--comm``, relaunched under ``torch.distributed.run --nproc-per-node
4``): per configuration of degree <= 4, one sequence of --tokens on ranks 0..λ-1, H=12, D=32,
fp32; bytes each participating rank sends (forward + backward, by class) next to the cost
model's (``zellige.torch.comm_model_bytes``; the Ulysses all-to-all also carries the forward's
LSE, shown apart).

    PYTHONPATH=build/python python3 bench/torch_executor.py [--reps 3] [--threads 1]
    PYTHONPATH=build/python python3 bench/torch_executor.py --device cuda [--dtype bf16]

``--device cuda``: part 1 on the GPU (world size 1, NCCL; times include a device synchronize;
the executor's "auto" kernel is its math path there, SDPA picks its own fused kernel), part 2
is left out (it needs 4 ranks on one kind of device).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import socket
import subprocess
import sys
import time
from typing import Any, Dict, List, Tuple

import torch
import torch.distributed as dist
import torch.nn.functional as F

import zellige.torch as zt


def whole_plan(lens: List[int]) -> Dict[str, Any]:
    return {"world_size": 1, "sequences": [
        {"id": i, "tokens": L, "config": {"q": 1, "h": 1, "k": 1},
         "shards": [{"rank": 0, "start": 0, "end": L}]} for i, L in enumerate(lens)]}


def best2(fa: Any, fb: Any, reps: int, sync: Any = lambda: None) -> Tuple[float, float]:
    """Best times of fa and fb, run alternately (so drifting machine load hits both); sync()
    waits for queued device work before each clock reading."""
    fa(), fb()  # warm-up
    ta, tb = [], []
    for _ in range(reps):
        for f, t in ((fa, ta), (fb, tb)):
            sync()
            t0 = time.perf_counter()
            f()
            sync()
            t.append(time.perf_counter() - t0)
    return min(ta), min(tb)


def overhead(args: argparse.Namespace) -> None:
    H, D = args.heads, args.head_dim
    rng = random.Random(1)
    n = args.seqs
    batches = [("uniform", [256] * n),
               ("mixed", [rng.randint(64, 320) for _ in range(n)]),
               ("mixed+long", [1024] + [rng.randint(64, 320) for _ in range(n - 1)])]
    dev = torch.device(args.device)
    dt = {"fp32": torch.float32, "bf16": torch.bfloat16}[args.dtype]
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    where = (torch.cuda.get_device_name(dev) if dev.type == "cuda" else
             f"cpu, {torch.get_num_threads()} thread(s)")
    print(f"zellige.torch overhead: world size 1, H={H} D={D}, {args.dtype}, forward+backward, "
          f"{where}, best of {args.reps}")
    print(f"{'batch':<12}{'seqs':>6}{'tokens':>8}{'shapes':>8}{'kernel':>8}{'mode':>7}{'calls':>7}"
          f"{'plan_ms':>10}{'sdpa_ms':>10}{'ratio':>8}")
    out = []
    for name, lens in batches:
        T = sum(lens)
        g = torch.Generator().manual_seed(0)
        q, k, v, do = (torch.randn(T, H, D, generator=g).to(dev, dt) for _ in range(4))
        for kernel, calls in (("auto", "shape"), ("auto", "step"), ("math", "shape")):
            ex = zt.Executor(whole_plan(lens), n_heads=H, head_dim=D, kernel=kernel,
                             calls=calls, origin_ranks="first_shard")

            def plan_step() -> None:
                qq, kk, vv = (t.clone().requires_grad_() for t in (q, k, v))
                (ex.attention(qq, kk, vv) * do).sum().backward()

            def sdpa_step() -> None:
                qq, kk, vv = (t.clone().requires_grad_() for t in (q, k, v))
                outs, at = [], 0
                for L in lens:
                    sl = slice(at, at + L)
                    at += L
                    o = F.scaled_dot_product_attention(qq[sl].transpose(0, 1)[None],
                                                       kk[sl].transpose(0, 1)[None],
                                                       vv[sl].transpose(0, 1)[None])
                    outs.append(o[0].transpose(0, 1))
                (torch.cat(outs) * do).sum().backward()

            ex.reset_stats()
            plan_step()
            n_calls = ex.stats["kernel_calls"]
            tp, ts = best2(plan_step, sdpa_step, args.reps, sync)
            shapes = len(set(lens))
            print(f"{name:<12}{len(lens):>6}{T:>8}{shapes:>8}{kernel:>8}{calls:>7}{n_calls:>7}"
                  f"{tp * 1e3:>10.1f}{ts * 1e3:>10.1f}{tp / ts:>8.2f}")
            out.append(dict(batch=name, seqs=len(lens), tokens=T, shapes=shapes, kernel=kernel,
                            mode=calls, kernel_calls=n_calls, plan_ms=tp * 1e3, sdpa_ms=ts * 1e3,
                            ratio=tp / ts))
    print(json.dumps({"bench": "torch_executor_overhead", "H": H, "D": D,
                      "device": where, "dtype": args.dtype,
                      "threads": torch.get_num_threads(), "rows": out}))


def comm(args: argparse.Namespace) -> None:
    dist.init_process_group("gloo")
    P, rank = dist.get_world_size(), dist.get_rank()
    H, D, L = 12, 32, args.tokens
    cfgs = sorted([(q, h, k) for q in range(1, P + 1) for h in range(1, P + 1)
                   for k in range(1, P + 1) if q * h * k <= P and H % h == 0],
                  key=lambda c: (c[0] * c[1] * c[2], c[0], c[2]))
    rows = []
    if rank == 0:
        print(f"zellige.torch comm per config: L={L} tokens, H={H}, D={D}, fp32, {P} ranks "
              "(gloo); bytes per participating rank (max over them), forward+backward")
        print(f"{'config':<9}{'alltoall':>10}{'(lse)':>8}{'model':>10}{'allgather':>11}"
              f"{'model':>10}{'ring':>10}{'model':>10}{'equal':>7}")
    for c in cfgs:
        deg = c[0] * c[1] * c[2]
        bounds = [j * L // deg for j in range(deg + 1)]
        plan = {"world_size": P, "sequences": [{
            "id": 0, "tokens": L, "config": {"q": c[0], "h": c[1], "k": c[2]},
            "shards": [{"rank": j, "start": bounds[j], "end": bounds[j + 1]}
                       for j in range(deg)]}]}
        ex = zt.Executor(plan, n_heads=H, head_dim=D, origin_ranks="first_shard")
        g = torch.Generator().manual_seed(rank)
        q, k, v = (torch.randn(ex.plan_tokens, H, D, generator=g).requires_grad_()
                   for _ in range(3))
        (ex.attention(q, k, v) * 1.5).sum().backward()
        st: List[Any] = [None] * P
        dist.all_gather_object(st, ex.stats)
        if rank == 0:
            m = zt.comm_model_bytes(H, D, L, c)
            part = st[:deg]
            a2a = max(s["bytes_alltoall"] - s["bytes_lse"] for s in part)
            lse = max(s["bytes_lse"] for s in part)
            ag = max(s["bytes_allgather"] for s in part)
            ring = max(s["bytes_ring"] for s in part)
            eq = all(s["bytes_alltoall"] - s["bytes_lse"] == m["alltoall"] and
                     s["bytes_allgather"] == m["allgather"] and s["bytes_ring"] == m["ring"]
                     for s in part)
            name = f"({c[0]},{c[1]},{c[2]})"
            print(f"{name:<9}{a2a:>10}{lse:>8}{m['alltoall']:>10.0f}{ag:>11}"
                  f"{m['allgather']:>10.0f}{ring:>10}{m['ring']:>10.0f}{'yes' if eq else 'NO':>7}")
            rows.append(dict(config=list(c), alltoall=a2a, lse=lse, allgather=ag, ring=ring,
                             model=m, equal=eq))
    if rank == 0:
        print(json.dumps({"bench": "torch_executor_comm", "L": L, "world": P, "rows": rows}))
    dist.destroy_process_group()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seqs", type=int, default=24, help="sequences per batch in part 1")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--tokens", type=int, default=768, help="sequence length of part 2")
    ap.add_argument("--comm", action="store_true", help="part 2 only (under torchrun)")
    ap.add_argument("--no-comm", action="store_true", help="skip part 2")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                    help="part 1 on this device (cuda: NCCL, part 2 left out)")
    ap.add_argument("--dtype", choices=("fp32", "bf16"), default="fp32", help="part 1's q/k/v")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    if a.device == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda: torch sees no CUDA device")
    if a.comm:
        comm(a)
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    if a.device == "cuda":
        torch.cuda.set_device(0)
    dist.init_process_group("nccl" if a.device == "cuda" else "gloo",
                            init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    overhead(a)
    dist.destroy_process_group()
    if not a.no_comm and a.device == "cpu":
        sys.stdout.flush()
        env = dict(os.environ, OMP_NUM_THREADS="1")
        subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "4",
                        "--master-addr", "127.0.0.1", "--master-port", str(port + 1),
                        os.path.abspath(__file__), "--comm", "--tokens", str(a.tokens)],
                       env=env, check=True, stderr=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
