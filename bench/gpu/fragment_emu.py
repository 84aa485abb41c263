#!/usr/bin/env python3
"""fragment_emu.py — a CPU check of the tensor-core kernels' data paths before any GPU runs them:
the PTX semantics of ldmatrix.sync.m8n8.x4 (with and without .trans) and
mma.sync.m16n8k16.row.col (fragment layouts as in the PTX ISA: g = lane/4, t = lane%4; A regs
(g,2t) (g+8,2t) (g,2t+8) (g+8,2t+8); B regs (2t,g) (2t+8,g); C (g,2t) (g+8,2t)), emulated per lane,
driven by the index expressions of src/kernels/cuda (cuda_common.cuh: swz, mma_acc_px, acc_to_a;
attn_fwd_tc.cu: the Q and K ldmatrix addresses, which mma_abt2 in attn_bwd_tc.cu repeats), on
swizzled shared tiles with random data: S = Q K^T per warp and acc += P X match numpy at D 64/128,
N 64/32. The expressions are copied here by hand: a change to them in the kernels must be made
here too. Swapping the two halves of the A-fragment address, for instance, fails with an error of
~30; dropping the swizzle passes (it only moves banks).

  python3 bench/gpu/fragment_emu.py        # 2 s
"""
# attn_fwd_tc.cu / attn_bwd_tc.cu, on swizzled shared tiles. Checks S=QK^T, O+=PV, dK+=dS^T Q.
import numpy as np
rng = np.random.default_rng(0)

def swz(D, row, col):  # element index of chunk start (col multiple of 8)
    return row * D + ((((col >> 3) ^ (row & 7))) << 3)

def store_tile(X, D):  # X (rows, D) -> swizzled flat smem
    rows = X.shape[0]; s = np.zeros(rows * D, np.float64)
    for r in range(rows):
        for c in range(0, D, 8):
            s[swz(D, r, c):swz(D, r, c) + 8] = X[r, c:c + 8]
    return s

def ldmatrix_x4(smem, addrs, trans=False):
    # addrs[lane] = element index of a row of 8; returns regs[lane][m] = (lo, hi)
    out = [[None] * 4 for _ in range(32)]
    for t in range(32):
        for m in range(4):
            if not trans:
                a = addrs[m * 8 + t // 4]
                out[t][m] = (smem[a + 2 * (t % 4)], smem[a + 2 * (t % 4) + 1])
            else:
                a0 = addrs[m * 8 + 2 * (t % 4)]; a1 = addrs[m * 8 + 2 * (t % 4) + 1]
                out[t][m] = (smem[a0 + t // 4], smem[a1 + t // 4])
    return out

def mma(d, a, b0, b1):
    # d[lane] = 4 floats, a[lane] = 4 pairs, b0/b1[lane] = pairs. PTX m16n8k16 layouts.
    A = np.zeros((16, 16)); B = np.zeros((16, 8)); C = np.zeros((16, 8))
    for l in range(32):
        g, t = l // 4, l % 4
        for i, (r, c) in enumerate([(g, 2*t), (g+8, 2*t), (g, 2*t+8), (g+8, 2*t+8)]):
            A[r, c], A[r, c+1] = a[l][i]
        B[2*t, g], B[2*t+1, g] = b0[l]; B[2*t+8, g], B[2*t+9, g] = b1[l]
        C[g, 2*t], C[g, 2*t+1], C[g+8, 2*t], C[g+8, 2*t+1] = d[l]
    Dm = A @ B + C
    return [[Dm[l//4, 2*(l%4)], Dm[l//4, 2*(l%4)+1], Dm[l//4+8, 2*(l%4)], Dm[l//4+8, 2*(l%4)+1]] for l in range(32)]

def acc_to_a(c, ks):  # c[lane][ntile][4]
    return [[(c[l][2*ks][0], c[l][2*ks][1]), (c[l][2*ks][2], c[l][2*ks][3]),
             (c[l][2*ks+1][0], c[l][2*ks+1][1]), (c[l][2*ks+1][2], c[l][2*ks+1][3])] for l in range(32)]

def frag_to_mat(c, rows=16):  # accumulator fragments -> (16, 8*ntiles)
    nt = len(c[0]); M = np.zeros((16, 8 * nt))
    for l in range(32):
        g, t = l // 4, l % 4
        for n in range(nt):
            M[g, n*8+2*t], M[g, n*8+2*t+1], M[g+8, n*8+2*t], M[g+8, n*8+2*t+1] = c[l][n]
    return M

def s_qkt(sQ, sK, D, N, warp):  # forward: Q frags via ldmatrix, S = Q K^T (N keys)
    qf = []
    for kk in range(D // 16):
        addrs = [swz(D, warp*16 + (l & 7) + ((l >> 3) & 1) * 8, kk*16 + (l >> 4) * 8) for l in range(32)]
        qf.append(ldmatrix_x4(sQ, addrs))
    sacc = [[[0.0]*4 for _ in range(N // 8)] for _ in range(32)]
    for kk in range(D // 16):
        for np_ in range(N // 16):
            addrs = [swz(D, np_*16 + (l & 7) + (l >> 4) * 8, kk*16 + ((l >> 3) & 1) * 8) for l in range(32)]
            b = ldmatrix_x4(sK, addrs)
            a = qf[kk]
            d0 = mma([sacc[l][2*np_] for l in range(32)], a, [b[l][0] for l in range(32)], [b[l][1] for l in range(32)])
            d1 = mma([sacc[l][2*np_+1] for l in range(32)], a, [b[l][2] for l in range(32)], [b[l][3] for l in range(32)])
            for l in range(32): sacc[l][2*np_], sacc[l][2*np_+1] = d0[l], d1[l]
    return sacc

def acc_px(acc, p, sX, D, N):  # mma_acc_px: acc += P X
    for ks in range(N // 16):
        a = acc_to_a(p, ks)
        for dp in range(D // 16):
            addrs = [swz(D, ks*16 + (l & 7) + ((l >> 3) & 1) * 8, dp*16 + (l >> 4) * 8) for l in range(32)]
            b = ldmatrix_x4(sX, addrs, trans=True)
            d0 = mma([acc[l][2*dp] for l in range(32)], a, [b[l][0] for l in range(32)], [b[l][1] for l in range(32)])
            d1 = mma([acc[l][2*dp+1] for l in range(32)], a, [b[l][2] for l in range(32)], [b[l][3] for l in range(32)])
            for l in range(32): acc[l][2*dp], acc[l][2*dp+1] = d0[l], d1[l]
    return acc

for D in (64, 128):
    for N in (64, 32):
        Q = rng.standard_normal((64, D)); K = rng.standard_normal((N, D)); V = rng.standard_normal((N, D))
        sQ, sK, sV = store_tile(Q, D), store_tile(K, D), store_tile(V, D)
        for warp in range(4):
            S = frag_to_mat(s_qkt(sQ, sK, D, N, warp))
            e1 = np.abs(S - Q[warp*16:warp*16+16] @ K.T).max()
            P = rng.standard_normal((16, N))  # any P in accumulator layout
            pfr = [[[P[l//4, n*8+2*(l%4)], P[l//4, n*8+2*(l%4)+1], P[l//4+8, n*8+2*(l%4)], P[l//4+8, n*8+2*(l%4)+1]] for n in range(N // 8)] for l in range(32)]
            O = frag_to_mat(acc_px([[[0.0]*4 for _ in range(D // 8)] for _ in range(32)], pfr, sV, D, N))
            e2 = np.abs(O - P @ V).max()
            assert e1 < 1e-9 and e2 < 1e-9, (D, N, warp, e1, e2)
        print(f"D={D} N={N}: S=QK^T (as fwd/dq/dkdv mma_abt2) and acc+=P X (ldmatrix.trans) match, 4 warps")
