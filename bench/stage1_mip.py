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
It is solved by OR-Tools' SCIP (default) or HiGHS (--solver highs; pip install highspy) under a
time limit, and the layout found, its objective and the solver's proven bound are written to
<name>.layout.json for `bench_planner_stage1 --stage DIR`. The same file format carries joint's
relaxation (`bench_planner_stage1 --relax --export`), whose proven bound is a lower bound on
every plan. A yardstick for the planner's own search and bounds, not part of it: a 32-rank
model takes seconds to minutes (HiGHS proves joint's relaxation where SCIP stalls: 32xA6000
high batch 9, 202.0195 s in 56 s against SCIP's bound 201.21 after 60 s).
"""
import argparse
import glob
import json
import os
import sys
import time


def formulate(m):
    """The MIP of model m as plain data: variables (lo, hi, integer), rows (coefficients {var:
    value}, lo, hi), the objective variable (T), and the option of each x variable."""
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
    inf = float("inf")
    var, rows = [(0, inf, False)], []  # var 0: T
    opts = [(g, q, o) for g, G in enumerate(m["groups"]) for q, o in enumerate(G["opts"])]
    x0 = len(var)
    var += [(0, m["groups"][g]["count"], True) for g, q, o in opts]
    for g, G in enumerate(m["groups"]):
        rows.append(({x0 + i: 1.0 for i, (gg, q, o) in enumerate(opts) if gg == g},
                     G["count"], G["count"]))
    cover = [[i for i, (g, q, o) in enumerate(opts) if o[0] <= r < o[0] + o[1]] for r in range(n)]
    # L_r = bl_r + sum time x <= T;  H_r = bh_r + sum mem x <= cap
    load = [{x0 + i: opts[i][2][2] for i in cover[r]} for r in range(n)]
    mem = [{x0 + i: opts[i][2][3] / gb for i in cover[r]} for r in range(n)]
    for r in range(n):
        rows.append(({**load[r], 0: -1.0}, -inf, -bl[r]))
        rows.append((dict(mem[r]), -inf, cap - bh[r]))
    for work, tau in fluids:
        f0 = len(var)
        var += [(0, inf, False)] * n
        for r in range(n):
            rows.append(({f0 + r: 1.0, **load[r], 0: -1.0}, -inf, -bl[r]))  # f <= T - L
            rows.append(({f0 + r: 1.0, **{k: tau * v for k, v in mem[r].items()}}, -inf,
                         tau * (cap - bh[r])))  # f <= tau (cap - H)
        rows.append(({f0 + r: 1.0 for r in range(n)}, work, inf))
    mean = {0: float(n)}
    for r in range(n):
        for k, v in load[r].items():
            mean[k] = mean.get(k, 0.0) - v
    rows.append((mean, m["extra_area"] + sum(bl), inf))  # N T - sum L >= extra_area
    return var, rows, x0, opts


def run_scip(var, rows, time_limit):
    from ortools.linear_solver import pywraplp

    s = pywraplp.Solver.CreateSolver("SCIP")
    if s is None:
        sys.exit("stage1_mip: OR-Tools was built without SCIP")
    inf = s.infinity()
    v = [s.IntVar(lo, hi, "") if integer else s.NumVar(lo, min(hi, inf), "")
         for lo, hi, integer in var]
    for coef, lo, hi in rows:
        c = s.Constraint(max(lo, -inf), min(hi, inf))
        for k, a in coef.items():
            c.SetCoefficient(v[k], a)
    s.Minimize(v[0])
    s.SetTimeLimit(int(time_limit * 1000))
    status = s.Solve()
    if status not in (pywraplp.Solver.OPTIMAL, pywraplp.Solver.FEASIBLE):
        return None
    return ([x.solution_value() for x in v], s.Objective().BestBound(),
            status == pywraplp.Solver.OPTIMAL)


def run_highs(var, rows, time_limit):
    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("time_limit", float(time_limit))
    h.setOptionValue("threads", 1)
    inf = highspy.kHighsInf
    for i, (lo, hi, integer) in enumerate(var):
        h.addVar(lo, min(hi, inf))
        if integer:
            h.changeColIntegrality(i, highspy.HighsVarType.kInteger)
    h.changeColCost(0, 1.0)
    for coef, lo, hi in rows:
        idx = list(coef)
        h.addRow(max(lo, -inf), min(hi, inf), len(idx), idx, [coef[k] for k in idx])
    h.run()
    ms = h.getModelStatus()
    info = h.getInfo()
    if info.primal_solution_status != 2:  # no feasible solution
        return None
    return (list(h.getSolution().col_value), info.mip_dual_bound,
            ms == highspy.HighsModelStatus.kOptimal)


def solve(path, time_limit, solver="scip"):
    m = json.load(open(path))
    var, rows, x0, opts = formulate(m)
    t0 = time.time()
    res = (run_highs if solver == "highs" else run_scip)(var, rows, time_limit)
    secs = time.time() - t0
    if res is None:
        return None, secs
    val, bound, optimal = res
    layout = []
    for i, (g, q, o) in enumerate(opts):
        layout += [[g, q, int(o[0]), int(o[1])]] * int(round(val[x0 + i]))
    return {
        "layout": layout,
        "objective": val[0],
        "bound": bound,
        "status": "optimal" if optimal else "time limit",
        "solver": solver,
        "seconds": secs,
    }, secs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir", help="folder of <name>.model.json (bench_planner_stage1 --export)")
    ap.add_argument("--time-limit", type=float, default=60, help="seconds per model (60)")
    ap.add_argument("--redo", action="store_true", help="solve models that have a layout too")
    ap.add_argument("--solver", choices=["scip", "highs"], default="scip",
                    help="OR-Tools' SCIP (default) or HiGHS (pip install highspy)")
    args = ap.parse_args()
    paths = sorted(glob.glob(os.path.join(args.dir, "*.model.json")))
    if not paths:
        sys.exit(f"stage1_mip: no *.model.json in {args.dir}")
    for i, p in enumerate(paths):
        out = p[: -len(".model.json")] + ".layout.json"
        if os.path.exists(out) and not args.redo:
            continue
        res, secs = solve(p, args.time_limit, args.solver)
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
