"""zellige.torch: plans executed with torch.distributed (gloo, CPU) under
``python3 -m torch.distributed.run --nproc-per-node N`` for N = 1..4 (tests/py/torch_exec_worker.py
runs on every rank). Checks, over >= 30 random legal plans built as plan dicts (every
configuration of N ranks, overlapping rank sets, idle ranks, whole sequences next to shards),
one even single-sequence plan per configuration of degree N, and the C planner's plans for a
seeded batch (as a dict and as a zellige.Plan):

* forward output and q/k/v gradients (through dispatch -> attention -> undispatch) equal a
  single-process reference (SDPA per whole sequence, float64) within 1e-5 relative (fp32);
* dispatch puts exactly the plan layout's rows and positions on each rank, and
  undispatch(dispatch(x)) is x bit for bit;
* bytes sent per rank (forward + backward) equal the cost model's to the byte per class (the
  Ulysses all-to-all also carries the forward's LSE, counted apart as the C engine's is), and
  the kernel calls are the C engine's: one per step and direction.

Also: ``import zellige`` works without torch. Skipped with a message when torch is missing.
"""
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "torch_exec_worker.py")
H = 12  # the worker's head count


def _load_zellige():
    spec = importlib.util.spec_from_file_location("_zg_pkg_loader",
                                                  os.path.join(HERE, "test_python_planner.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod._load_zellige()


@pytest.fixture(scope="module")
def site():
    pytest.importorskip("torch", reason="torch is not installed (zellige.torch needs it)")
    import torch.distributed as dist
    if not dist.is_available():
        pytest.skip("this torch build has no torch.distributed")
    zg = _load_zellige()
    return os.path.dirname(os.path.dirname(zg.__file__))


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _legal(P):
    return {(q, h, k) for q in range(1, P + 1) for h in range(1, P + 1) for k in range(1, P + 1)
            if q * h * k <= P and H % h == 0}


PLANS = {1: 3, 2: 9, 3: 9, 4: 13}  # random plans per world size: 34 in all


@pytest.fixture(scope="module", params=[1, 2, 3, 4])
def run(request, site):
    n = request.param
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "res.jsonl")
        env = dict(os.environ, PYTHONPATH=site + os.pathsep + os.environ.get("PYTHONPATH", ""),
                   OMP_NUM_THREADS="1")
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(n),
               "--master-addr", "127.0.0.1", "--master-port", str(_free_port()), WORKER,
               "--out", out, "--plans", str(PLANS[n]), "--seed", "3"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, cwd=tmp)
        assert r.returncode == 0, f"torchrun -n {n} failed:\n{(r.stdout + r.stderr)[-6000:]}"
        with open(out) as f:
            return n, [json.loads(line) for line in f]


def test_matches_reference_and_dispatch_is_exact(run):
    n, lines = run
    for r in lines:
        if r["kind"] == "errors":
            continue
        what = f"N={n} {r['kind']} {r.get('index', '')} configs {r['configs']}"
        assert r["err_fwd"] <= 1e-5, f"{what}: forward rel err {r['err_fwd']:.3e}"
        assert r["err_bwd"] <= 1e-5, f"{what}: backward rel err {r['err_bwd']:.3e}"
        assert r["dispatch_exact"], f"{what}: dispatch put other rows in the plan layout"
        assert r["identity"], f"{what}: undispatch(dispatch(x)) != x"


def test_one_padded_call_per_step(run):
    """calls="step": one kernel call per step and direction, as the C engine."""
    n, lines = run
    step = [r for r in lines if r.get("calls") == "step"]
    assert step
    for r in step:
        for s in r["stats"]:
            want = 2 * s["k_max"] if s["plan_tokens"] else 0
            assert s["kernel_calls"] == want, (n, r["index"], s)


def test_random_plans_cover_every_configuration(run):
    n, lines = run
    rnd = [r for r in lines if r["kind"] == "random"]
    assert len(rnd) == PLANS[n]
    seen = {tuple(c) for r in rnd for c in r["configs"]}
    assert seen == _legal(n), f"N={n}: configs run {sorted(seen)}"
    if n >= 2:
        assert any(r["idle_ranks"] > 0 for r in rnd), "no plan with an idle rank"
        assert any(r["overlap"] for r in rnd), "no plan where rank sets overlap"
    assert sum(PLANS.values()) >= 30


def test_bytes_equal_the_cost_model(run):
    n, lines = run
    even = [r for r in lines if r["kind"] == "even"]
    assert len(even) == sum(1 for c in _legal(n) if c[0] * c[1] * c[2] == n)
    for r in even:
        q, h, k = r["config"]
        m = r["model"]
        for rank, s in enumerate(r["stats"]):
            what = f"N={n} config {r['config']} rank {rank}"
            assert s["bytes_alltoall"] - s["bytes_lse"] == m["alltoall"], (what, s, m)
            assert s["bytes_allgather"] == m["allgather"], (what, s, m)
            assert s["bytes_ring"] == m["ring"], (what, s, m)
            # the forward's LSE rides the inverse all-to-all: 4 bytes per (token, head) sent
            lse = 4 * (h - 1) * (r["tokens"] // (q * k)) * (H // h) // h if h > 1 else 0
            assert s["bytes_lse"] == lse, (what, s["bytes_lse"], lse)
            # one kernel call per step and direction (a single sequence: one slice shape)
            assert s["kernel_calls"] == 2 * k, (what, s)


def test_planner_plans_run(run):
    n, lines = run
    kinds = [r["kind"] for r in lines]
    assert "planner_dict" in kinds and "planner_plan" in kinds
    if n >= 3:  # the seeded batch's long sequence is split on 3 and 4 ranks
        assert any(c != [1, 1, 1] for r in lines if r["kind"] == "planner_plan"
                   for c in r["configs"])


def test_errors_are_clear(run):
    n, lines = run
    err = [r for r in lines if r["kind"] == "errors"]
    assert len(err) == 1
    for msg, want in zip(err[0]["messages"], err[0]["want"]):
        assert want in msg, (msg, want)


def test_import_zellige_without_torch(site):
    code = ("import sys; sys.modules['torch'] = None\n"
            "import zellige\n"
            "p = zellige.Planner(model='tiny', cluster={'preset': '8xA800', 'world_size': 2})\n"
            "print(len(p.plan([100, 50])))\n"
            "try:\n    import zellige.torch\nexcept ImportError as e:\n    print('no torch')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PYTHONPATH=site))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["2", "no", "torch"], r.stdout
