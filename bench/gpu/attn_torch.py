#!/usr/bin/env python3
"""attn_torch.py — the baselines for bench/attn_cuda.c on the same shapes, through PyTorch:

  * single sequences: torch SDPA with the flash backend and with the cuDNN backend, forward and
    forward+backward (bf16, (1, H, L, D), non-causal);
  * varlen packs of many short sequences: FlashAttention's varlen API when importable
    (flash_attn_interface = FA3, flash_attn = FA2), else torch's bundled FA2 varlen kernel
    (torch.ops.aten._flash_attention_forward), forward; and one SDPA call per sequence (what
    a system without coalescing does).

Reads the cases bench_attn_cuda wrote (--shapes), prints one JSON object; never needs the
network. Anything missing (torch, a backend, flash_attn) is reported as null with the reason.
Flops as in attn_cuda.c: forward 4 * sum(L_i^2) * D * H, backward 2.5x forward.

Usage: python3 bench/gpu/attn_torch.py --shapes shapes.json [--iters N] > torch.json
"""
import argparse
import json
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", required=True)
    ap.add_argument("--iters", type=int, default=0)
    args = ap.parse_args()
    shapes = json.load(open(args.shapes))
    out = {"bench": "attn_torch", "torch": None, "rows": [], "notes": []}
    try:
        import torch
        import torch.nn.functional as F
    except Exception as e:  # noqa: BLE001 - report any import failure
        out["notes"].append(f"torch not importable: {e!r}")
        print(json.dumps(out))
        return 0
    out["torch"] = torch.__version__
    if not torch.cuda.is_available():
        out["notes"].append("torch sees no CUDA device")
        print(json.dumps(out))
        return 0
    dev = torch.device("cuda:0")
    out["device"] = torch.cuda.get_device_name(0)
    H, D = shapes["heads"], shapes["dim"]

    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except Exception:  # older torch
        SDPBackend = sdpa_kernel = None

    fa_varlen, fa_name = None, None
    for mod, name in (("flash_attn_interface", "fa3"), ("flash_attn", "fa2")):
        try:
            m = __import__(mod)
            fa_varlen, fa_name = m.flash_attn_varlen_func, name
            out["notes"].append(f"{mod} imported")
            break
        except Exception as e:  # noqa: BLE001
            out["notes"].append(f"{mod} not importable: {type(e).__name__}")

    def timed(fn, iters):
        fn()  # warm-up (and compile/autotune)
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(iters):
            fn()
        b.record()
        torch.cuda.synchronize()
        return a.elapsed_time(b) / iters

    def attempt(row, key, fn, iters, flops):
        try:
            ms = timed(fn, iters)
            row[key + "_ms"] = round(ms, 4)
            row[key + "_tflops"] = round(flops / (ms * 1e-3) / 1e12, 2)
        except Exception as e:  # noqa: BLE001
            row[key + "_ms"] = row[key + "_tflops"] = None
            row[key + "_error"] = f"{type(e).__name__}: {str(e)[:160]}"

    torch.manual_seed(0)
    for case in shapes["cases"]:
        lens = case["lens"]
        T = sum(lens)
        ff = 4.0 * sum(l * l for l in lens) * D * H
        iters = args.iters or int(min(50, max(3, 0.3 * 300e12 / ff)))
        row = {"kind": case["kind"], "tokens": T, "seqs": len(lens)}
        q = torch.randn(T, H, D, device=dev, dtype=torch.bfloat16)
        k, v = torch.randn_like(q), torch.randn_like(q)
        if case["kind"] == "single":
            qs, ks, vs = (x.transpose(0, 1).unsqueeze(0).contiguous() for x in (q, k, v))
            backends = [("sdpa", None)]
            if SDPBackend is not None:
                backends = [("sdpa_flash", SDPBackend.FLASH_ATTENTION),
                            ("sdpa_cudnn", SDPBackend.CUDNN_ATTENTION)]
            for key, be in backends:
                def fwd(be=be):
                    if be is None:
                        return F.scaled_dot_product_attention(qs, ks, vs)
                    with sdpa_kernel([be]):
                        return F.scaled_dot_product_attention(qs, ks, vs)
                attempt(row, key + "_fwd", fwd, iters, ff)
                qg, kg, vg = (x.detach().requires_grad_() for x in (qs, ks, vs))
                do = torch.randn_like(qs)

                def fwdbwd(be=be):
                    if be is None:
                        o = F.scaled_dot_product_attention(qg, kg, vg)
                    else:
                        with sdpa_kernel([be]):
                            o = F.scaled_dot_product_attention(qg, kg, vg)
                    o.backward(do)
                attempt(row, key + "_fwdbwd", fwdbwd, iters, 3.5 * ff)
                if row.get(key + "_fwdbwd_ms") and row.get(key + "_fwd_ms"):
                    bms = row[key + "_fwdbwd_ms"] - row[key + "_fwd_ms"]
                    row[key + "_bwd_tflops"] = round(2.5 * ff / (bms * 1e-3) / 1e12, 2) if bms > 0 else None
        else:
            cu = torch.tensor([0] + [sum(lens[:i + 1]) for i in range(len(lens))],
                              device=dev, dtype=torch.int32)
            mx = max(lens)
            if fa_varlen is not None:
                attempt(row, fa_name + "_varlen_fwd",
                        lambda: fa_varlen(q, k, v, cu, cu, mx, mx), iters, ff)
            try:
                op = torch.ops.aten._flash_attention_forward

                def aten_fwd():
                    return op(q, k, v, cu, cu, mx, mx, 0.0, False, False)
                attempt(row, "torch_fa2_varlen_fwd", aten_fwd, iters, ff)
            except Exception as e:  # noqa: BLE001
                row["torch_fa2_varlen_fwd_error"] = f"{type(e).__name__}: {str(e)[:160]}"
            # one SDPA call per sequence (no coalescing)
            views = []
            off = 0
            for l in lens:
                views.append(tuple(x[off:off + l].transpose(0, 1).unsqueeze(0) for x in (q, k, v)))
                off += l

            def per_seq():
                for a, b, c in views:
                    F.scaled_dot_product_attention(a, b, c)
            attempt(row, "sdpa_per_seq_fwd", per_seq, max(3, iters // 4), ff)
        out["rows"].append(row)
        print(f"torch {row}", file=sys.stderr, flush=True)
        del q, k, v
        torch.cuda.empty_cache()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    t0 = time.time()
    rc = main()
    print(f"attn_torch: {time.time() - t0:.1f} s", file=sys.stderr)
    sys.exit(rc)
