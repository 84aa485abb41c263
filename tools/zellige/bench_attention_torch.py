#!/usr/bin/env python3
"""bench_attention_torch.py - PyTorch CPU scaled_dot_product_attention timings for
`zellige bench attention` (same shapes and input distribution as the C kernels).

Usage: bench_attention_torch.py --tokens 256,4096 --dims 64,128 --heads 12 [--threads 2]
       bench_attention_torch.py --serve --heads 12 [--threads 2]
Prints one JSON line per (tokens, dim): {"tokens":T,"dim":D,"fwd_gflops":G,"seconds":S}.
With --serve it prints {"ready":...} and then answers each "T D" line read from stdin, so the
caller can interleave torch timings with its own on a noisy machine.
Exits 3 when torch cannot be imported (the caller then reports torch as absent).
"""
import argparse
import json
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", default="")
    ap.add_argument("--dims", default="")
    ap.add_argument("--serve", action="store_true")
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    try:
        import torch
        import torch.nn.functional as F
    except Exception as e:  # noqa: BLE001 - any import failure means "no torch"
        print(f"torch unavailable: {e}", file=sys.stderr)
        return 3
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    g = torch.Generator().manual_seed(a.seed)

    def measure(t, d):
        # (batch, heads, tokens, dim), as SDPA expects
        q, k, v = (torch.randn(1, a.heads, t, d, generator=g) for _ in range(3))
        flops = 4.0 * t * t * d * a.heads
        best, total, reps = float("inf"), 0.0, 0
        with torch.no_grad():
            while reps < 3 and (reps == 0 or total < 0.3):
                t0 = time.perf_counter()
                F.scaled_dot_product_attention(q, k, v)
                dt = time.perf_counter() - t0
                best, total, reps = min(best, dt), total + dt, reps + 1
        print(json.dumps({"tokens": t, "dim": d, "fwd_gflops": flops / best / 1e9,
                          "seconds": best, "torch": torch.__version__,
                          "threads": torch.get_num_threads()}), flush=True)

    if a.serve:
        print(json.dumps({"ready": True, "torch": torch.__version__}), flush=True)
        for line in sys.stdin:
            parts = line.split()
            if len(parts) == 2:
                measure(int(parts[0]), int(parts[1]))
        return 0
    for t in [int(x) for x in a.tokens.split(",") if x]:
        for d in [int(x) for x in a.dims.split(",") if x]:
            measure(t, d)
    return 0


if __name__ == "__main__":
    sys.exit(main())
