"""examples/train_dit.py: a DiT trained with zellige plans in PyTorch (docs/pytorch.md).

Checks: under `torchrun --nproc-per-node 4` (gloo, CPU) the example's losses for the zellige and
dp plans (Planner + Executor) and the knapformer plans (through zellige.torch.Balancer) equal a
one-process run of the same model and batches (`--reference`) to 1e-5 after 3 steps, with
zellige splitting at least one sequence over ranks (so the distributed attention, dispatch of
positions and the gradient all-reduce are all in the numbers); every step logs the
planned and measured makespan; `--help` documents the options; bad arguments exit 2 with one
clear line. Tiny dims keep the run to a few seconds of compute (process start-up dominates).
Skipped with a message when torch is missing.
"""
import importlib.util
import json
import os
import socket
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install torch)")

from test_python_planner import ROOT, _load_zellige  # noqa: E402  (same package discovery)

EXAMPLE = os.path.join(ROOT, "examples", "train_dit.py")
TINY = ["--dim", "24", "--heads", "2", "--layers", "1", "--ffn", "32", "--channels", "4",
        "--tokens-per-rank", "160", "--seed", "3", "--steps", "3", "--json"]


@pytest.fixture(scope="module")
def env():
    zg = _load_zellige()
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join(
        [os.path.dirname(os.path.dirname(zg.__file__))] +
        ([e["PYTHONPATH"]] if e.get("PYTHONPATH") else []))
    e["OMP_NUM_THREADS"] = "1"
    return e


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _steps(out):
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def test_distributed_losses_equal_the_single_process_run(env, capsys):
    # the one-process run in this process (torch is loaded already), then torchrun
    assert _example().main(["--reference", "--world-size", "4", *TINY]) == 0
    want = [s["loss"] for s in _steps(capsys.readouterr().out)]
    assert len(want) == 3

    port = _free_port()
    r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "4",
                        "--master-addr", "127.0.0.1", "--master-port", str(port), EXAMPLE,
                        "--policy", "zellige,dp,knapformer", *TINY],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    got = _steps(r.stdout)
    assert [(s["policy"], s["step"]) for s in got] == \
        [(p, i) for p in ("zellige", "dp", "knapformer") for i in range(3)], r.stdout
    # zellige and dp through Planner + Executor, knapformer through zellige.torch.Balancer
    # (KnapFormer's plan_routing/route/reverse_route; --api auto)
    assert "policy zellige, via Planner + Executor" in r.stdout, r.stdout
    assert "via zellige.torch.Balancer" in r.stdout, r.stdout
    for s in got:
        assert abs(s["loss"] - want[s["step"]]) <= 1e-5, (s, want)
        assert s["planned_ms"] > 0 and s["measured_ms"] > 0 and s["step_ms"] > 0, s
        assert s["slowest_ms"] >= s["fastest_ms"] > 0, s
        assert s["sequences"] >= 4 and s["tokens"] >= 4 * 160, s
    # dp runs every sequence whole; zellige splits at least one across ranks in these batches
    # (and then attention moves bytes between ranks; dp's only move in dispatch/undispatch)
    assert all(s["split"] == 0 and s["attn_kb"] == 0 for s in got if s["policy"] == "dp")
    assert sum(s["split"] for s in got if s["policy"] == "zellige") >= 1, got
    assert all((s["attn_kb"] > 0) == (s["split"] > 0) for s in got), got
    assert all(s["dispatch_kb"] > 0 for s in got), got
    # the step t+1 plan was made on the planner's thread while step t trained
    assert all(s["plan_wait_ms"] >= 0 for s in got)


def _example():
    """examples/train_dit.py as a module (for its parser, in this process: no torch start-up)."""
    spec = importlib.util.spec_from_file_location("train_dit_example", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def test_help_documents_the_options(capsys):
    with pytest.raises(SystemExit) as e:
        _example().main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for opt in ("--steps", "--policy", "--reference", "--world-size", "--cluster", "--bags",
                "--tokens-per-rank", "--json", "torchrun", "zellige, knapformer, usp or dp"):
        assert opt in out, opt


@pytest.mark.parametrize("args, message", [
    (["--policy", "ring"], "unknown policy 'ring'"),
    (["--policy", "dp,dp"], "names one policy twice"),
    (["--reference", "--dim", "30", "--heads", "4"], "--dim 30 is not a multiple of --heads 4"),
    (["--reference", "--dim", "16", "--heads", "4"], "3D RoPE needs an even head_dim"),
    (["--reference", "--steps", "0"], "--steps: 0 must be at least 1"),
    (["--reference", "--video-share", "2"], "2.0 is outside 0..1"),
])
def test_bad_arguments_exit_2_with_one_clear_line(capsys, args, message):
    with pytest.raises(SystemExit) as e:
        _example().main(args)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert message in err, err


def test_outside_torchrun_it_asks_for_torchrun_or_reference(capsys, monkeypatch):
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    with pytest.raises(SystemExit) as e:
        _example().main(["--steps", "2"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "run it under torchrun" in err and "--reference" in err, err
