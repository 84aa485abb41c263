"""bench/gpu/e2e_host.sh end to end at the smallest size: one MPI rank, the paper's V50 mix with
every sequence's tokens / 4096, 2 steps per policy. The flow the 16-core host runs (profile of
the mix's buckets, `zellige train --mix` under every policy, plan-only prediction, the summary
table and JSON) must finish and report every policy with equal losses. Skipped without mpirun
or a built zellige. Timing is never asserted."""
import json
import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
ZELLIGE = os.path.join(BUILD, "bin", "zellige")


def test_e2e_host_flow_one_rank(tmp_path):
    if not os.access(ZELLIGE, os.X_OK):
        pytest.skip(f"{ZELLIGE} not built (make)")
    if shutil.which("mpirun") is None:
        pytest.skip("no mpirun")
    if "libmpi" not in subprocess.run(["ldd", ZELLIGE], capture_output=True, text=True).stdout:
        pytest.skip("zellige built without MPI")
    # under `make asan`: Open MPI's own leaks inside MPI_Init/MPI_Finalize are suppressed, ours
    # still fail the run (ignored by a binary built without the sanitizer)
    supp = os.path.join(ROOT, "tests", "lsan-openmpi.supp")
    env = dict(os.environ, OUT=str(tmp_path / "out"), BUDGET="300", NPS="1", MIXES="V50",
               DIVISOR="4096", STEPS="2", ZELLIGE=ZELLIGE, OMP_NUM_THREADS="1",
               LSAN_OPTIONS=f"fast_unwind_on_malloc=0:suppressions={supp}")
    env.pop("BUNDLE", None)
    r = subprocess.run(["bash", os.path.join(ROOT, "bench", "gpu", "e2e_host.sh")], cwd=ROOT,
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    out = tmp_path / "out"
    md = (out / "summary.md").read_text()
    assert "#### 1 ranks, V50 (pinned)" in md, md
    for p in ("zellige", "knapformer", "usp", "dp"):
        assert f"| {p} |" in md, md
    assert "best baseline" in md and "losses equal across policies at every step: True" in md
    res = json.loads((out / "e2e_host.json").read_text())
    assert res["divisor"] == 4096 and len(res["runs"]) == 1
    run = res["runs"][0]
    assert run["complete"] and run["same_loss"] and run["mode"] == "pinned", run
    assert set(run["policies"]) == {"zellige", "knapformer", "usp", "dp"}
    for p, d in run["policies"].items():
        assert d["measured_s"] > 0 and d["predicted_s"] > 0, (p, d)
    assert abs(run["policies"]["zellige"]["speedup"] - 1.0) < 1e-12
    # the profile measured the mix's buckets: 10 s videos at 8 ranks or fewer, tokens / 4096
    prof = json.loads((out / "e2e-np1" / "profile.json").read_text())
    buckets = {(e["bucket"], e["tokens"]) for e in prof["prices"]}
    assert ("1080p-10s", 82) in buckets and ("256p-img", 1) in buckets, sorted(buckets)
    assert "phases: profile" in (out / "e2e_host.log").read_text()
