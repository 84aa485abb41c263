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
