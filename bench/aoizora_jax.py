#!/usr/bin/env python3
"""Benchmark of aoizora.jax.plan with the compiler in the loop (docs/results-aoizora.md).

For Wan2.1-1.3B (hidden 1536, 12 heads, FFN 8960, 512 text tokens; 480p 81 frames = 32760
tokens, CFG batch 2, bf16) as one block and as a 30-layer ``lax.scan``, on v5e-8 and v5e-16
and HunyuanVideo-13B (hidden 3072, 24 heads, MLP 12288; one single-stream block over the joint
sequence of 480p 41 frames = 17160 video + 256 text tokens, batch 1) on v5e-16 (XLA compiles on
N fake CPU devices; nothing is run), it reports:

* the wall time of ``aoizora.jax.plan`` split into XLA compile time and pricing time (HLO
  import + placement search), and the number of candidates compiled;
* per compiled candidate: the predicted latency from XLA's compiled program vs from AoiZora's
  own lowering of the same sharding (default device order and best placement), and the
  placement gain (default order / best placement, same sharding);
* the chosen plan against the expert configurations and the Alpa-style ILP, all compiled by
  XLA and priced from the compiled HLO in the default device order (the ILP's per-op sharding
  mapped onto the front end's axes; where it cannot be expressed exactly the nearest program
  is compiled and the differing ops are printed), and against the ILP in AoiZora's own lowering
  (its exact per-op program);
* the survivors not compiled because AoiZora's lowering makes them the same program as a
  compiled one (``same program as``).

Every latency is a prediction of the uncalibrated network + roofline model.

    PYTHONPATH=build/python python3 bench/aoizora_jax.py            # all four configurations
    PYTHONPATH=build/python python3 bench/aoizora_jax.py --devices 8 --programs block
    PYTHONPATH=build/python python3 bench/aoizora_jax.py --devices 16 --models hunyuan

One subprocess per device count (XLA_FLAGS must be set before jax is imported). Prints a table
per configuration and one JSON line each (``{"bench": "aoizora_jax", ...}``).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any, Dict, List


def worker(n: int, programs: List[str], top_k: int, tokens: int, models_: List[str]) -> None:
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={n}"
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    from functools import partial

    import jax
    import jax.numpy as jnp

    import aoizora.jax as aj
    from aoizora import models

    W = models.WAN_1_3B
    B, D, H, F, T = 2, W["dim"], W["heads"], W["ffn"], W["text"]
    topo = f"v5e-{n}"
    act = lambda *s: jax.ShapeDtypeStruct(s, jnp.bfloat16)  # noqa: E731
    x, ctx, tm = act(B, tokens, D), act(B, T, D), act(B, 6, D)
    jobs = []
    if "wan" in models_:
        for prog in programs:
            if prog == "block":
                fn = partial(models.wan_block, heads=H)
                params = models.wan_param_structs(D, F)
            else:
                fn = partial(models.wan_stack, heads=H)
                params = models.wan_param_structs(D, F, layers=W["layers"])
            fn.__name__ = f"wan2.1-1.3b-{prog}"
            jobs.append(("wan2.1-1.3b", "Wan2.1-1.3B", prog, B, tokens, fn, (x, ctx, tm, params)))
    if "hunyuan" in models_ and n == 16 and "block" in programs:
        # HunyuanVideo-13B, one single-stream block over the joint sequence: 480p 41 frames =
        # 17160 video tokens + 256 text tokens, batch 1 (CFG-distilled)
        Hy = models.HUNYUAN_13B
        fn = partial(models.hunyuan_single_block, heads=Hy["heads"])
        fn.__name__ = "hunyuanvideo-13b-single-block"
        hx, ht = act(1, 17160 + Hy["text"], Hy["dim"]), act(1, 3, Hy["dim"])
        jobs.append(("hunyuanvideo-13b", "HunyuanVideo-13B single-stream", "block", 1,
                     17160 + Hy["text"], fn,
                     (hx, ht, models.hunyuan_param_structs(Hy["dim"], Hy["ffn"]))))
    for model, title, prog, B, tokens, fn, args in jobs:
        t0 = time.perf_counter()
        res = aj.plan(fn, *args, topology=topo, top_k=top_k, baselines=True)
        wall = time.perf_counter() - t0
        ilp = res.stage1.get("alpa_ilp", {})
        win = res.candidates[0]
        print(f"\n== {title} {prog} ({res.program.layers} layer(s), {tokens} tokens x batch "
              f"{B}) on {topo}: plan {wall:.1f} s wall (compile {res.compile_s:.1f} s, pricing "
              f"{res.price_s:.2f} s), {len(res.candidates)} compiled of {res.n_legal} legal "
              f"({res.n_candidates} candidates)")
        print(f"{'candidate':28s} {'role':20s} {'stage1':>8s} {'lower_def':>9s} "
              f"{'lower_best':>10s} {'xla_def':>9s} {'xla_best':>9s} {'gain':>6s} "
              f"{'compile':>7s}  collectives (compiled)")
        rows = []
        for c in res.candidates:
            role = ("winner, " if c is win else "") + (c.expert or "stage-1 top-k")
            if c.error:
                print(f"{c.label:28s} {role:20s} compile failed: {c.error[:80]}")
                continue
            coll = " ".join(f"{k.replace('collective-permute', 'permute')}x{int(v['count'])}"
                            for k, v in sorted(c.collectives.items()))
            print(f"{c.label:28s} {role:20s} {c.stage1_s:8.4f} {c.lowering_default_s or 0:9.4f} "
                  f"{c.lowering_s or 0:10.4f} {c.default_s:9.4f} {c.best_s:9.4f} "
                  f"{c.default_s / c.best_s:6.3f} {c.compile_s:7.1f}  {coll}")
            rows.append(dict(label=c.label, role=role, stage1_s=c.stage1_s,
                             lowering_default_s=c.lowering_default_s,
                             lowering_best_s=c.lowering_s, compiled_default_s=c.default_s,
                             compiled_best_s=c.best_s, placement_gain=c.default_s / c.best_s,
                             compile_s=c.compile_s, price_s=c.price_s,
                             collectives=c.collectives, device_order=list(c.device_order),
                             evidence=c.evidence_source, note=c.note))
            if c.note:
                print(f"{'':28s} ({c.note})")
        for lab, r in res.same_as.items():
            print(f"{lab:28s} {'same program as':20s} {r} in AoiZora's lowering (not compiled)")
        for e in res.stage1["experts"]:
            if e["label"] in res.skipped:
                print(f"{e['label']:28s} {e['name']:20s} skipped: {res.skipped[e['label']]}")
        for lab, why in res.skipped.items():
            if lab.startswith("ilp "):
                print(f"{lab:28s} {'alpa_ilp':20s} skipped: {why}")
        experts = {c.expert: c.default_s for c in res.candidates
                   if c.expert and c.expert != "alpa_ilp" and not c.error}
        vs = {k: v / res.predicted_latency_s for k, v in experts.items()}
        best_expert = min(experts.values()) if experts else None
        ilp_c = next((c for c in res.candidates if c.expert == "alpa_ilp"), None)
        ilp_compiled_vs = (ilp_c.default_s / res.predicted_latency_s
                           if ilp_c is not None and not ilp_c.error else None)
        # and in AoiZora's own lowering, where the ILP's exact per-op program exists: the
        # chosen sharding in the same lowering (placed) against the ILP's (default order)
        ilp_vs = (ilp["default_total_s"] / win.lowering_s
                  if ilp.get("default_total_s") and win.lowering_s else None)
        print(f"chosen {res.label}: {res.predicted_latency_s:.4f} s (default order "
              f"{res.default_order_latency_s:.4f} s, placement gain "
              f"{res.default_order_latency_s / res.predicted_latency_s:.3f}x), order "
              f"{list(res.device_order)}")
        print("speedup of the chosen plan over the experts (compiled, default order): " +
              ", ".join(f"{k} {v:.3f}x" for k, v in vs.items()))
        if ilp_compiled_vs is not None:
            print(f"speedup over the Alpa-style ILP's program {ilp_c.label} (compiled, default "
                  f"order): {ilp_compiled_vs:.3f}x")
        if ilp.get("label") and ilp_vs is not None:
            print(f"alpa_ilp {ilp['label']}: {ilp['default_total_s']:.4f} s in AoiZora's own "
                  f"lowering (default order); the chosen sharding in the same lowering, placed: "
                  f"{win.lowering_s:.4f} s -> {ilp_vs:.3f}x")
        print(json.dumps(dict(
            bench="aoizora_jax", model=model, program=prog, layers=res.program.layers,
            tokens=tokens, batch=B, topology=topo, plan_wall_s=wall, compile_s=res.compile_s,
            price_s=res.price_s, compiled=len(res.candidates), legal=res.n_legal,
            candidates=res.n_candidates, chosen=res.label,
            predicted_latency_s=res.predicted_latency_s,
            default_order_latency_s=res.default_order_latency_s,
            device_order=list(res.device_order), speedup_vs_experts=vs,
            speedup_vs_alpa_ilp_compiled=ilp_compiled_vs,
            speedup_vs_alpa_ilp_own_lowering=ilp_vs, same_as=res.same_as,
            best_expert_speedup=(best_expert / res.predicted_latency_s) if best_expert else None,
            alpa_ilp=dict(label=ilp.get("label"), default_s=ilp.get("default_total_s"),
                          best_s=ilp.get("best_total_s")),
            rows=rows, note="predictions of an uncalibrated network + roofline model")),
            flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--devices", default="8,16", help="device counts (v5e-N), e.g. 8,16")
    ap.add_argument("--programs", default="block,scan", help="block and/or scan (30 layers)")
    ap.add_argument("--top-k", type=int, default=4, help="stage-1 survivors compiled")
    ap.add_argument("--tokens", type=int, default=32760, help="tokens per sample (480p 81f)")
    ap.add_argument("--models", default="wan,hunyuan",
                    help="wan (Wan2.1-1.3B) and/or hunyuan (HunyuanVideo-13B, one "
                    "single-stream block, 16 devices only)")
    ap.add_argument("--worker", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args()
    programs = [p for p in a.programs.split(",") if p]
    if any(p not in ("block", "scan") for p in programs):
        ap.error(f"--programs {a.programs}: use block and/or scan")
    if a.worker:
        worker(a.worker, programs, a.top_k, a.tokens, a.models.split(","))
        return 0
    rc = 0
    for n in (int(v) for v in a.devices.split(",")):
        r = subprocess.run([sys.executable, __file__, "--worker", str(n), "--programs",
                            a.programs, "--top-k", str(a.top_k), "--tokens", str(a.tokens),
                            "--models", a.models],
                           env={k: v for k, v in os.environ.items() if k != "XLA_FLAGS"})
        rc = rc or r.returncode
    return rc


if __name__ == "__main__":
    sys.exit(main())
