"""Cross-check of the Zellige exact anchor solver against OR-Tools CP-SAT (the paper's solver).

bench_planner_quality --export writes small anchor-stage problems (8xA800, low load) with the
optimum our ECF branch-and-bound proved. CP-SAT solves the same ECF model (integer counts
u[g,o] in [0, n_g], sum_o u[g,o] = n_g, per-rank load <= T, per-rank memory <= cap, min T) on
times scaled to integer nanoseconds; the optima must agree to the scaling error.
Skips cleanly when ortools is not installed. Binaries: $ZG_BUILD (default "build").
"""
import json
import os
import subprocess
import tempfile

import pytest

cp_model = pytest.importorskip("ortools.sat.python.cp_model")

BUILD = os.environ.get("ZG_BUILD", "build")
BENCH = os.path.join(BUILD, "bin", "bench_planner_quality")
SCALE = 1e9  # seconds -> integer nanoseconds


def solve_cpsat(prob):
    n = prob["world_size"]
    m = cp_model.CpModel()
    load = [[] for _ in range(n)]
    mem = [[] for _ in range(n)]
    for g in prob["groups"]:
        cnt = g["count"]
        us = []
        for o in g["options"]:
            u = m.NewIntVar(0, cnt, "")
            us.append(u)
            t, b = int(round(o["time"] * SCALE)), int(round(o["mem"]))
            for r in range(o["start"], o["start"] + o["degree"]):
                load[r].append((t, u))
                mem[r].append((b, u))
        m.Add(sum(us) == cnt)
    horizon = sum(g["count"] * max(int(round(o["time"] * SCALE)) for o in g["options"])
                  for g in prob["groups"])
    T = m.NewIntVar(0, horizon, "T")
    cap = int(prob["mem_cap"] - prob["mem_base"])  # what placements may use: the cap - the base
    for r in range(n):
        if load[r]:
            m.Add(sum(c * u for c, u in load[r]) <= T)
            m.Add(sum(c * u for c, u in mem[r]) <= cap)
    m.Minimize(T)
    s = cp_model.CpSolver()
    s.parameters.max_time_in_seconds = 60.0
    s.parameters.num_workers = 2
    st = s.Solve(m)
    assert st == cp_model.OPTIMAL, s.StatusName(st)
    return s.Value(T) / SCALE


def test_anchor_optimum_matches_cpsat():
    if not os.path.exists(BENCH):
        pytest.skip(f"{BENCH} not built (set ZG_BUILD)")
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([BENCH, "--export", d, "--export-count", "4"], check=True,
                       capture_output=True)
        files = sorted(f for f in os.listdir(d) if f.endswith(".json"))
        assert len(files) == 4
        for f in files:
            with open(os.path.join(d, f)) as fh:
                prob = json.load(fh)
            ours = prob["optimum"]
            ref = solve_cpsat(prob)
            units = sum(g["count"] for g in prob["groups"])
            assert abs(ours - ref) <= units * 1.0 / SCALE + 1e-9 * ours, (f, ours, ref)
