#!/usr/bin/env python3
"""Solves the stage-1 models written by `bench_planner_stage1 --export DIR` as positional MIPs.

Each model (zel_stage1_model: the anchors' options as (start, degree, time, mem) per group, the
fillers as fluid work) becomes

    x_o integer >= 0 per option o,  sum_{o in g} x_o = count_g
    L_r = base_load_r + sum_{o covers r} time_o x_o <= T,   H_r = base_mem_r + ... <= cap
    per fluid k (work D_k, density tau_k):  f_kr <= T - L_r,  f_kr <= tau_k (cap - H_r),
                                            sum_r f_kr >= D_k
    N T - sum_r L_r >= extra_area            (the fillers' work fits in the mean)
    minimise T

which is zellige's stage-1 objective (max load, the mean, the memory-aware fluids) exactly.
It is solved by OR-Tools' SCIP under a time limit, and the layout found is written to
<name>.layout.json for `bench_planner_stage1 --stage DIR`. A yardstick for the planner's own
stage-1 search, not part of it: SCIP takes seconds to minutes per 32-rank model.
"""
import argparse
import glob
import json
import os
import sys
import time


def solve(path, time_limit):
    from ortools.linear_solver import pywraplp

    m = json.load(open(path))
    n, gb = m["N"], 1e9
    cap = m["cap"] / gb
    bl = m["base_load"]
    bh = [v / gb for v in m["base_mem"]]
    fluids = []
    d0 = m["extra_area"] - m["free_area"]
    if m["fill_mem"] > 0 and d0 > 0:
        fluids.append((d0, d0 / (m["fill_mem"] / gb)))
    for free, mem in m["xfl"]:
        a = m["extra_area"] - free
        if a > 0 and mem > 0:
            fluids.append((a, a / (mem / gb)))
    s = pywraplp.Solver.CreateSolver("SCIP")
    if s is None:
        sys.exit("stage1_mip: OR-Tools was built without SCIP")
    T = s.NumVar(0, s.infinity(), "T")
    opts = [(g, q, o) for g, G in enumerate(m["groups"]) for q, o in enumerate(G["opts"])]
    x = [s.IntVar(0, m["groups"][g]["count"], "") for g, q, o in opts]
    for g, G in enumerate(m["groups"]):
        s.Add(sum(x[i] for i, (gg, q, o) in enumerate(opts) if gg == g) == G["count"])
    cover = [[i for i, (g, q, o) in enumerate(opts) if o[0] <= r < o[0] + o[1]] for r in range(n)]
    loads, mems = [], []
    for r in range(n):
        L = bl[r] + sum(opts[i][2][2] * x[i] for i in cover[r])
        H = bh[r] + sum(opts[i][2][3] / gb * x[i] for i in cover[r])
        loads.append(L)
        mems.append(H)
        s.Add(L <= T)
        s.Add(H <= cap)
    for work, tau in fluids:
        f = [s.NumVar(0, s.infinity(), "") for r in range(n)]
        for r in range(n):
            s.Add(f[r] <= T - loads[r])
            s.Add(f[r] <= tau * (cap - mems[r]))
        s.Add(sum(f) >= work)
    s.Add(n * T - sum(loads) >= m["extra_area"])
    s.Minimize(T)
    s.SetTimeLimit(int(time_limit * 1000))
    t0 = time.time()
    status = s.Solve()
    secs = time.time() - t0
    if status not in (pywraplp.Solver.OPTIMAL, pywraplp.Solver.FEASIBLE):
        return None, secs
    layout = []
    for i, (g, q, o) in enumerate(opts):
        layout += [[g, q, int(o[0]), int(o[1])]] * int(round(x[i].solution_value()))
    return {
        "layout": layout,
        "objective": T.solution_value(),
        "bound": s.Objective().BestBound(),
        "status": "optimal" if status == pywraplp.Solver.OPTIMAL else "time limit",
        "seconds": secs,
    }, secs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir", help="folder of <name>.model.json (bench_planner_stage1 --export)")
    ap.add_argument("--time-limit", type=float, default=60, help="seconds per model (60)")
    ap.add_argument("--redo", action="store_true", help="solve models that have a layout too")
    args = ap.parse_args()
    paths = sorted(glob.glob(os.path.join(args.dir, "*.model.json")))
    if not paths:
        sys.exit(f"stage1_mip: no *.model.json in {args.dir}")
    for i, p in enumerate(paths):
        out = p[: -len(".model.json")] + ".layout.json"
        if os.path.exists(out) and not args.redo:
            continue
        res, secs = solve(p, args.time_limit)
        name = os.path.basename(p)
        if res is None:
            print(f"[{i + 1}/{len(paths)}] {name}: no layout in {secs:.1f} s", flush=True)
            continue
        tmp = out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(res, f)
        os.replace(tmp, out)
        print(f"[{i + 1}/{len(paths)}] {name}: {res['status']} T {res['objective']:.6f} "
              f"bound {res['bound']:.6f} in {secs:.1f} s", flush=True)


if __name__ == "__main__":
    main()
