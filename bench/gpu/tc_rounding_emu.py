#!/usr/bin/env python3
"""tc_rounding_emu.py — where the 16-bit tolerances of tests/kernels/test_attention_cuda.c come
from: a numpy emulation of what the tensor-core kernels round (inputs to bf16/fp16; P and dS to
16 bits before the second GEMM of the forward and backward; the online softmax over blocks of 64
keys in fp32), run on the test's three slice lists, scored like the test
(|a - b| / (atol + rtol |ref|), atol = rtol * rms(ref); <= 1 passes). A CPU-side analysis of the
tolerances, not a kernel: the kernels themselves are checked on a GPU (bench/gpu/check.sh).

  python3 bench/gpu/tc_rounding_emu.py [--rtol-o-bf16 3e-2 ...]      # ~1 minute on 2 cores
"""
import argparse

import numpy as np


def bf16(x):
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16 << 16  # round to nearest even
    return u.astype(np.uint32).view(np.float32)


def f16(x):
    return np.asarray(x, np.float32).astype(np.float16).astype(np.float32)


def mixed():  # the test's mixed(): whole sequences, shared keys, empty ranges
    sl, t, k333 = [], 0, 0
    for n in (1, 17, 64, 65, 130, 333, 2):
        if n == 333:
            k333 = t
        sl.append((t, n, t, n))
        t += n
    sl += [(t, 10, k333, 333), (t + 10, 20, k333 + 100, 200), (t + 30, 5, 0, 0),
           (t + 35, 0, 0, 50), (t + 40, 3, t - 2, 2)]
    return sl, t + 43


def pack(rng):  # the test's pack(): 41 sequences of 1..150 tokens around one of 700
    sl, t = [], 0
    for i in range(41):
        n = 700 if i == 20 else int(rng.integers(1, 151))
        sl.append((t, n, t, n))
        t += n
    return sl, t


def score(a, ref, rtol):
    ref, a = ref.ravel(), a.ravel()
    fin = np.isfinite(ref)
    atol = rtol * np.sqrt(np.mean(ref[fin] ** 2))
    return float((np.abs(a[fin] - ref[fin]) / (atol + rtol * np.abs(ref[fin]))).max())


def run(rng, sl, T, H, D, amp, rnd):
    sc = 1 / np.sqrt(D)
    sl2 = np.float32(sc * np.log2(np.e))
    q, k = rnd(amp * rng.standard_normal((T, H, D))), rnd(amp * rng.standard_normal((T, H, D)))
    v, do = rnd(rng.standard_normal((T, H, D))), rnd(rng.standard_normal((T, H, D)))
    g0 = [0.1 * rng.standard_normal((T, H, D)) for _ in range(3)]  # initial dq, dk, dv
    O, Oe, LSE = np.zeros((T, H, D)), np.zeros((T, H, D)), np.zeros((T, H))
    qmask = np.zeros(T, bool)
    ref, emu = [g.copy() for g in g0], [g.copy() for g in g0]
    for (qs, ql, ks, kl) in sl:
        if ql == 0:
            continue
        qmask[qs:qs + ql] = True
        for h in range(H):
            if kl == 0:
                LSE[qs:qs + ql, h] = -np.inf
                continue
            Q, K, V = (x[a:a + n, h].astype(np.float64) for x, a, n in
                       ((q, qs, ql), (k, ks, kl), (v, ks, kl)))
            S = Q @ K.T
            m = (S * sc).max(1, keepdims=True)
            P = np.exp(S * sc - m)
            O[qs:qs + ql, h] = P @ V / P.sum(1, keepdims=True)
            LSE[qs:qs + ql, h] = (m + np.log(P.sum(1, keepdims=True)))[:, 0]
            S2 = S.astype(np.float32) * sl2  # the kernel: base 2, blocks of 64 keys, P rounded
            mr = np.full((ql, 1), -np.inf, np.float32)
            lr = np.zeros((ql, 1), np.float32)
            acc = np.zeros((ql, D), np.float32)
            for j in range(0, kl, 64):
                Sb = S2[:, j:j + 64]
                mx = np.maximum(mr, Sb.max(1, keepdims=True))
                al, Pb = np.exp2(mr - mx), np.exp2(Sb - mx)
                lr = lr * al + Pb.sum(1, keepdims=True)
                acc = acc * al + rnd(Pb) @ V[j:j + 64].astype(np.float32)
                mr = mx
            Oe[qs:qs + ql, h] = acc / lr
    for (qs, ql, ks, kl) in sl:  # backward from the reference O/LSE, as the test passes them
        if ql == 0 or kl == 0:
            continue
        for h in range(H):
            Q, K, V = (x[a:a + n, h].astype(np.float64) for x, a, n in
                       ((q, qs, ql), (k, ks, kl), (v, ks, kl)))
            dO, L = do[qs:qs + ql, h].astype(np.float64), LSE[qs:qs + ql, h][:, None]
            delta = (dO * O[qs:qs + ql, h]).sum(1, keepdims=True)
            P = np.exp(Q @ K.T * sc - L)
            dS = P * (dO @ V.T - delta)
            ref[0][qs:qs + ql, h] += sc * dS @ K
            ref[1][ks:ks + kl, h] += sc * dS.T @ Q
            ref[2][ks:ks + kl, h] += P.T @ dO
            P32 = np.exp2((Q @ K.T).astype(np.float32) * sl2 - np.float32(L * np.log2(np.e)))
            dS32 = P32 * ((dO @ V.T).astype(np.float32) - delta.astype(np.float32))
            emu[0][qs:qs + ql, h] += sc * (rnd(dS32) @ K.astype(np.float32))
            emu[1][ks:ks + kl, h] += sc * (rnd(dS32).T @ Q.astype(np.float32))
            emu[2][ks:ks + kl, h] += rnd(P32).T @ dO.astype(np.float32)
    return Oe[qmask], O[qmask], emu, ref


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rtol-o-bf16", type=float, default=3e-2)
    ap.add_argument("--rtol-g-bf16", type=float, default=5e-2)
    ap.add_argument("--rtol-o-f16", type=float, default=5e-3)
    ap.add_argument("--rtol-g-f16", type=float, default=1.5e-2)
    a = ap.parse_args()
    rng = np.random.default_rng(1)
    lists = [("mixed", mixed(), 3, 1.0), ("sharp", mixed(), 2, 2.0), ("pack", pack(rng), 2, 1.0)]
    worst = 0.0
    print("worst err/tol (<= 1 passes): list dtype D: O dQ dK dV")
    for name, (sl, T), H, amp in lists:
        for dt, rnd, ro, rg in (("bf16", bf16, a.rtol_o_bf16, a.rtol_g_bf16),
                                ("f16", f16, a.rtol_o_f16, a.rtol_g_f16)):
            for D in (128, 64):
                oe, o, emu, ref = run(rng, sl, T, H, D, amp, rnd)
                r = [score(oe, o, ro)] + [score(e, f, rg) for e, f in zip(emu, ref)]
                worst = max(worst, *r)
                print(f"  {name:5s} {dt:4s} D={D:3d}: " + " ".join(f"{x:.3f}" for x in r),
                      flush=True)
    print(f"worst {worst:.3f}")
    return 0 if worst <= 1 else 1


if __name__ == "__main__":
    raise SystemExit(main())
