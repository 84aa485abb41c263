"""zellige.torch.Balancer, the KnapFormer-shaped drop-in (python/zellige/torch/balancer.py).

Runs tests/py/torch_balancer_worker.py under `torchrun --nproc-per-node 2` (gloo, CPU): for the
zellige, usp, knapformer (g2n1) and dp policies, route/reverse_route is the identity (float
hidden states and int64 positions), the routed rows are exactly the plan's shards in plan order,
and attention over the routed layout plus its gradients equal each whole sequence's reference
attention (1e-5 relative); bad input and a wrong-size cluster raise with clear messages.
Skipped with a message when torch is missing.
"""
import os
import socket
import subprocess
import sys

import pytest

pytest.importorskip("torch", reason="torch is not installed (pip install torch)")

from test_python_planner import _load_zellige  # noqa: E402  (same package discovery)

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_balancer_worker.py")


def test_balancer_routes_and_attends_like_the_reference_on_2_ranks():
    zg = _load_zellige()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(zg.__file__))
    env["OMP_NUM_THREADS"] = "1"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                        "--master-addr", "127.0.0.1", "--master-port", str(port), WORKER],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-4000:]
    passed = [line for line in r.stdout.splitlines() if line.startswith("PASS ")]
    for case in ("zellige", "usp", "knapformer", "dp", "errors"):
        assert any(line.startswith(f"PASS {case}") for line in passed), r.stdout


def test_knapformer_policy_routes_to_knapformers_layout():
    """With policy="knapformer", what `route` puts on each rank (its shards in plan order, as the
    2-rank test checks row by row) is KnapFormer's own routed layout: reference vector V2
    (shared/reference/knapformer.md §2.11: spec g1n2+g2n1, γ 0.4, d 3072, lengths per GPU
    [[20001], [101, 7], [102], [103, 50]]): GPU 0 receives chunks of 7, 103, 50 tokens
    (sequences 2, 4, 5), GPU 1 of 101, 102 (sequences 1, 3), and sequence 0 is cut
    [10001, 10000] over GPUs 2 and 3 (remainder at 0 mod 2)."""
    zg = _load_zellige()
    planner = zg.Planner("tiny", "cpu:4", policy="knapformer", bags="g1n2+g2n1", gamma=0.4,
                         d_model=3072)
    plan = planner.plan([20001, 101, 7, 102, 103, 50], origin_ranks=[0, 1, 1, 2, 3, 3])
    routed = {r: [(s.index, sh.end - sh.start) for s in plan.sequences for sh in s.shards
                  if sh.rank == r] for r in range(4)}
    assert routed == {0: [(2, 7), (4, 103), (5, 50)], 1: [(1, 101), (3, 102)],
                      2: [(0, 10001)], 3: [(0, 10000)]}
