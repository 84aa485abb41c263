"""The stage-1 MIP yardstick (bench/stage1_mip.py) models what the planner's stage 1 minimises.

bench_planner_stage1 --export writes the stage-1 models of two batches each at 8xA800 high and
low and 16xA800 low; stage1_mip.py solves them with OR-Tools SCIP; --stage evaluates each
layout with the C objective (zel_sol_eval) and places the fillers. The MIP's T must equal the C objective of its own layout (a formulation that
drifted from zel_objective would not), and the staged plan must exist. Skips cleanly without
ortools (or an ortools without SCIP). Binaries: $ZG_BUILD (default "build").
"""
import importlib.util
import json
import os
import re
import subprocess
import tempfile

import pytest

pywraplp = pytest.importorskip("ortools.linear_solver.pywraplp")

BUILD = os.environ.get("ZG_BUILD", "build")
BENCH = os.path.join(BUILD, "bin", "bench_planner_stage1")
SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "stage1_mip.py")


def load_script():
    spec = importlib.util.spec_from_file_location("stage1_mip", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_mip_objective_is_the_planner_objective():
    if not os.path.exists(BENCH):
        pytest.skip(f"{BENCH} not built (set ZG_BUILD)")
    if pywraplp.Solver.CreateSolver("SCIP") is None:
        pytest.skip("ortools without SCIP")
    mip = load_script()
    with tempfile.TemporaryDirectory() as d:
        args = ["--settings", "8xA800:high,8xA800:low,16xA800:low", "--batches", "2"]
        subprocess.run([BENCH, "--export", d] + args, check=True, capture_output=True)
        objectives = {}
        for name in sorted(os.listdir(d)):
            res, _ = mip.solve(os.path.join(d, name), 60)
            assert res is not None, name
            with open(os.path.join(d, name.replace(".model.", ".layout.")), "w") as f:
                json.dump(res, f)
            objectives[name] = res["objective"]
        assert len(objectives) == 6
        out = subprocess.run([BENCH, "--stage", d] + args, check=True, capture_output=True,
                             text=True).stdout
        rows = re.findall(r"^(\S+):(\S+) batch (\d+) \S+ stage-1 objective (\S+) staged (\S+)",
                          out, re.M)
        assert len(rows) == 6, out
        for cluster, load, k, obj, staged in rows:
            want = objectives[f"{cluster}_{load}_{k}.model.json"]
            assert abs(float(obj) - want) <= 1e-6 * want, (cluster, load, k, obj, want)
            assert float(staged) < float("inf")


def test_relaxation_bound_is_below_every_known_plan():
    """--relax: joint's relaxation model exported, solved by the MIP, read back as a bound. Its
    layout scores the same in C, the bound lies below the best plan known for the batch, and a
    bound tampered above that plan is reported invalid (exit status 1), not recorded."""
    if not os.path.exists(BENCH):
        pytest.skip(f"{BENCH} not built (set ZG_BUILD)")
    if pywraplp.Solver.CreateSolver("SCIP") is None:
        pytest.skip("ortools without SCIP")
    mip = load_script()
    best = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "data",
                        "planner_best.json")
    with tempfile.TemporaryDirectory() as d:
        args = ["--settings", "8xA800:high,16xA800:low", "--batches", "2"]
        subprocess.run([BENCH, "--relax", "--export", d] + args, check=True, capture_output=True)
        for name in sorted(os.listdir(d)):
            res, _ = mip.solve(os.path.join(d, name), 60)
            assert res is not None, name
            with open(os.path.join(d, name.replace(".model.", ".layout.")), "w") as f:
                json.dump(res, f)
        lbf = os.path.join(d, "lb.json")
        out = subprocess.run([BENCH, "--relax", "--stage", d, "--best", best, "--lb", lbf,
                              "--lb-update"] + args, check=True, capture_output=True,
                             text=True).stdout
        rows = re.findall(r"relaxation bound (\S+) \(layout (\S+), C (\S+)\) best plan (\S+)",
                          out)
        assert len(rows) == 4 and "INVALID" not in out, out
        assert len(re.findall(r" staged \d", out)) == 4, out
        for bound, lay, c, plan in rows:
            assert abs(float(lay) - float(c)) <= 1e-6 * float(c)
            assert 0 < float(bound) <= float(plan)
        recorded = json.load(open(lbf))["settings"]
        assert len(recorded["8xA800:high"]) == 2 and min(recorded["8xA800:high"]) > 0
        # a bound above a real plan: a wrong model; reported, and the file left as it was
        path = os.path.join(d, "8xA800_high_0.layout.json")
        res = json.load(open(path))
        res["bound"] = 2 * float(rows[0][3])
        json.dump(res, open(path, "w"))
        bad = subprocess.run([BENCH, "--relax", "--stage", d, "--best", best, "--lb", lbf,
                              "--lb-update"] + args, capture_output=True, text=True)
        assert bad.returncode == 1 and "INVALID" in bad.stdout, bad.stdout
        assert json.load(open(lbf))["settings"] == recorded
        # --search: the same relaxation solved by our own search instead of the MIP solver.
        # Two independent solvers: where ours solves it, its optimum lies between the MIP's
        # proven bound and the MIP's layout.
        out = subprocess.run([BENCH, "--relax", "--search", "5", "--best", best, "--lb", lbf,
                              "--lb-update"] + args, check=True, capture_output=True,
                             text=True).stdout
        found = re.findall(r"batch (\d+) \S+ relaxation search bound (\S+) \((solved|time limit)",
                           out)
        assert len(found) == 4 and "INVALID" not in out, out
        mip_rows = [(float(b), float(lay)) for b, lay, _, _ in rows]
        compared = 0
        for (k, bound, how), (mb, mt), plan in zip(found, mip_rows, [r[3] for r in rows]):
            assert float(bound) <= float(plan) * (1 + 1e-9), out
            if how == "solved":  # the optimum: between the MIP's proven bound and its layout
                assert mb * (1 - 1e-9) <= float(bound) <= mt * (1 + 1e-9), (k, bound, mb, mt)
                compared += 1
        assert compared >= 2, out  # these small relaxations are solved outright
        # a best plan below the searched bound: reported invalid, nothing recorded
        tampered = os.path.join(d, "best.json")
        bj = json.load(open(best))
        bj["settings"]["8xA800:high"][0] = 0.5 * float(found[0][1])
        json.dump(bj, open(tampered, "w"))
        kept = json.load(open(lbf))["settings"]
        bad = subprocess.run([BENCH, "--relax", "--search", "5", "--best", tampered, "--lb", lbf,
                              "--lb-update"] + args, capture_output=True, text=True)
        assert bad.returncode == 1 and "INVALID" in bad.stdout, bad.stdout
        assert json.load(open(lbf))["settings"] == kept
