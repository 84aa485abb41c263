#!/usr/bin/env python3
"""python_planner.py — zellige.Planner.plan from Python: warm latency (p50/p99) on the paper's
mixes at 8/16/32 ranks, and the Python overhead over the C call.

    python3 bench/python_planner.py [--clusters 8xA800,16xA800,32xA6000] [--mixes V35,...,V60]
                                    [--loads high,low] [--steps 200] [--json-only]

Settings as bench_planner_latency (bench/zel_bench.h): Wan2.1-1.3B; 8xA800 with 10 s videos,
16xA800 and 32xA6000 with 15 s; high load 350K tokens per rank (175K on 32xA6000), low 125K.
Per (cluster, mix, load) one Planner plans `--steps` seeded batches (steps 0..N-1 of the mix,
drawn by the C generator through the package and made into zellige.Batch objects beforehand:
that is the data loader's work) in order, as a training loop does: step 0 is cold, the others
warm. Reported over the warm steps (1..N-1):

  total   wall time of planner.plan(batch) (Python call to Plan object)
  c       wall time of the ctypes call alone inside it (Planner.last_c_call_ms: the C shim builds
          the zg_batch, zg_planner_plan plans, evaluates and validates, the plan is flattened)
  plan    the C planner's own plan_time_ms (the policy alone, as `zellige plan` reports it)
  over    the Python overhead: p50 of (total - c) per step, in microseconds and as a share of
          the p50 C call

`dicts` (one column per cluster, V50 high): p50 of plan(lengths, origin_ranks=...,
metadata=[dict per sequence]) on a second planner, the path without a prepared Batch: the
per-sequence conversion is Python work and shows up in the total.
Absolute times are noisy on a shared machine; the overhead ratio is the number to read.
Ends with one JSON line.
"""
import argparse
import json
import os
import platform
import statistics
import sys
import time

try:
    import zellige
except ImportError:
    sys.exit("python_planner.py: install the package first: python3 -m pip install ./python")

SETTINGS = {  # cluster: (video seconds, high load, low load), as bench/zel_bench.h
    "8xA800": (10, 350_000, 125_000),
    "16xA800": (15, 350_000, 125_000),
    "32xA6000": (15, 175_000, 125_000),
}


def pct(xs, q):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * q / 100.0
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def run_series(cluster, mix, load, steps):
    secs, high, low = SETTINGS[cluster]
    tpr = high if load == "high" else low
    world = int(cluster.split("x")[0])
    batches = [zellige.workload_mix(mix, tpr, world, secs, seed=1, step=s) for s in range(steps)]
    planner = zellige.Planner(model="wan2.1-1.3b", cluster=cluster)
    total, c, plan_ms = [], [], []
    for b in batches:
        t0 = time.perf_counter()
        p = planner.plan(b)
        total.append((time.perf_counter() - t0) * 1e3)
        c.append(planner.last_c_call_ms)
        plan_ms.append(p.plan_time_ms)
        del p  # the C plan is freed here, outside the timed call
    over_us = [(t - x) * 1e3 for t, x in zip(total[1:], c[1:])]
    return {
        "cluster": cluster, "mix": mix, "load": load, "tokens_per_rank": tpr, "steps": steps,
        "seqs_mean": statistics.mean(len(b) for b in batches),
        "cold_ms": total[0],
        "total_p50_ms": pct(total[1:], 50), "total_p99_ms": pct(total[1:], 99),
        "c_p50_ms": pct(c[1:], 50), "c_p99_ms": pct(c[1:], 99),
        "plan_p50_ms": pct(plan_ms[1:], 50),
        "over_p50_us": pct(over_us, 50),
        "over_ratio": pct(over_us, 50) / 1e3 / pct(c[1:], 50),
    }, batches


def dicts_p50(cluster, batches):
    """plan() from lists and per-sequence dicts (no prepared Batch), warm steps."""
    planner = zellige.Planner(model="wan2.1-1.3b", cluster=cluster)
    times = []
    for b in batches:
        d = b.to_dict()["sequences"]
        lengths = [s["tokens"] for s in d]
        origin = [s.get("origin_rank", -1) for s in d]
        meta = [{k: s[k] for k in ("kind", "frames", "height", "width", "text_tokens", "bucket")
                 if k in s} for s in d]
        t0 = time.perf_counter()
        p = planner.plan(lengths, origin_ranks=origin, metadata=meta)
        times.append((time.perf_counter() - t0) * 1e3)
        del p
    return pct(times[1:], 50)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clusters", default="8xA800,16xA800,32xA6000")
    ap.add_argument("--mixes", default="V35,V40,V45,V50,V55,V60")
    ap.add_argument("--loads", default="high,low")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--json-only", action="store_true")
    a = ap.parse_args()
    if a.steps < 2:
        sys.exit("--steps: at least 2 (step 0 is cold)")
    rows, dicts = [], {}
    say = (lambda *x: None) if a.json_only else print
    say(f"zellige.Planner.plan, warm steps 1..{a.steps - 1} of each series; "
        f"python {platform.python_version()}, {os.cpu_count()} CPUs "
        f"({platform.processor() or platform.machine()})")
    hdr = (f"{'cluster':9} {'load':4} {'mix':4} {'seqs':>6} {'cold ms':>8} {'p50 ms':>7} "
           f"{'p99 ms':>7} {'C p50':>7} {'C p99':>7} {'plan p50':>8} {'over us':>8} {'over %':>7}")
    say(hdr)
    say("-" * len(hdr))
    for cl in a.clusters.split(","):
        if cl not in SETTINGS:
            sys.exit(f"--clusters: {cl} is not one of {', '.join(SETTINGS)}")
        for ld in a.loads.split(","):
            for mx in a.mixes.split(","):
                r, batches = run_series(cl, mx, ld, a.steps)
                rows.append(r)
                say(f"{cl:9} {ld:4} {mx:4} {r['seqs_mean']:6.0f} {r['cold_ms']:8.2f} "
                    f"{r['total_p50_ms']:7.3f} {r['total_p99_ms']:7.3f} {r['c_p50_ms']:7.3f} "
                    f"{r['c_p99_ms']:7.3f} {r['plan_p50_ms']:8.3f} {r['over_p50_us']:8.1f} "
                    f"{100 * r['over_ratio']:6.1f}%")
                if mx == "V50" and ld == "high":
                    dicts[cl] = dicts_p50(cl, batches)
    say("")
    for cl, ms in dicts.items():
        say(f"{cl}: plan(lists + per-sequence dicts), V50 high, p50 {ms:.3f} ms")
    worst = max(r["over_ratio"] for r in rows)
    p50s = [r["total_p50_ms"] for r in rows]
    say(f"summary: total p50 {min(p50s):.3f}..{max(p50s):.3f} ms (target <= 1 ms), "
        f"Python overhead <= {100 * worst:.1f}% of the C call (target <= 10%)")
    print(json.dumps({"bench": "python_planner", "python": platform.python_version(),
                      "cpus": os.cpu_count(), "steps": a.steps, "rows": rows,
                      "dicts_p50_ms": dicts, "over_ratio_max": worst,
                      "total_p50_ms_max": max(p50s)}))


if __name__ == "__main__":
    main()
