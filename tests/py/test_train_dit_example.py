"""examples/train_dit.py: a DiT trained with zellige plans in PyTorch (docs/pytorch.md).

Checks: under `torchrun --nproc-per-node 4` (gloo, CPU) the example's losses for the zellige and
dp plans (Planner + Executor) and the knapformer plans (through zellige.torch.Balancer) equal a
one-process run of the same model and batches (`--reference`) to 1e-5 after 3 steps, with
zellige splitting at least one sequence over ranks (so the distributed attention, dispatch of
positions and the gradient all-reduce are all in the numbers); every step logs the
planned and measured makespan; with `--compile` (torch.compile on a fixed capacity) 5 steps on
2 ranks have the eager losses and compile no graph after step 0; `--help` documents the
options; bad arguments exit 2 with one clear line. Tiny dims keep the run to a few seconds of
compute (process start-up and, with --compile, dynamo's tracing dominate).
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


def test_compiled_model_trains_like_eager_and_does_not_recompile(env, capsys):
    """--compile (torch.compile, dynamic=False) on 2 ranks over 5 steps of different batches with
    a fixed capacity of 1024 token rows: the losses equal the eager one-process run's to 1e-5,
    and dynamo compiles its graphs in step 0 and none after, although every step's batch has a
    different size and its plan puts a different number of tokens on each rank. The backend is
    aot_eager (dynamo + AOTAutograd trace the model and guard on shapes as for inductor, but no
    C++ is generated: inductor's first compile takes minutes here, docs/pytorch.md);
    ZG_TEST_INDUCTOR=1 runs it with inductor, losses to 1e-4."""
    i = TINY.index("--steps")
    tiny = TINY[:i] + TINY[i + 2:] + ["--steps", "5"]
    assert _example().main(["--reference", "--world-size", "2", *tiny]) == 0
    want = [s["loss"] for s in _steps(capsys.readouterr().out)]
    assert len(want) == 5

    inductor = os.environ.get("ZG_TEST_INDUCTOR") == "1"
    backend, tol = ("inductor", 1e-4) if inductor else ("aot_eager", 1e-5)
    port = _free_port()
    r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                        "--master-addr", "127.0.0.1", "--master-port", str(port), EXAMPLE,
                        "--compile", "--compile-backend", backend, "--capacity-tokens", "1024",
                        *tiny], capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    got = _steps(r.stdout)
    assert [s["step"] for s in got] == list(range(5)), r.stdout
    for s in got:
        assert abs(s["loss"] - want[s["step"]]) <= tol, (s, want)
    # exact shapes would be new shapes at every step: 5 batch sizes, and plans that split
    # sequences in some steps and not in others
    assert len({s["tokens"] for s in got}) == 5, got
    assert len({s["split"] > 0 for s in got}) == 2, got
    assert all(s["capacity"] == 1024 for s in got), got
    graphs = [s["graphs"] for s in got]
    assert graphs[0] >= 3 and graphs == [graphs[0]] * 5, graphs


def test_auto_capacity_is_a_power_of_two_raised_only_when_a_plan_needs_more():
    """--capacity-tokens auto (the default with --compile): one row count for every rank, the
    power of two above the most tokens any rank holds in either layout, at least 2 x tokens per
    rank, kept while plans fit (so the compiled graphs keep their shapes)."""
    ex = _example()

    class _Plan:   # what _Capacity reads of a zellige.Plan
        def __init__(self, rank_tokens):
            import numpy as np

            class _A:
                pass
            self.arrays = _A()
            self.arrays.rank_tokens = np.array(rank_tokens)

    def batch(*held):  # one sample per loader rank holding `held` tokens
        return [ex.Sample(i, r, "image", 1, 1, n) for i, (r, n) in enumerate(enumerate(held))]

    c = ex._Capacity("auto", 256, 2)
    assert c.for_plan(_Plan([300, 200]), batch(250, 250)) == 512     # the floor 2 x 256
    assert c.for_plan(_Plan([511, 100]), batch(300, 311)) == 512     # fits: kept
    assert c.for_plan(_Plan([100, 100]), batch(700, 10)) == 1024     # a loader rank holds more
    assert c.for_plan(_Plan([200, 200]), batch(200, 200)) == 1024    # never lowered
    assert c.for_plan(_Plan([1025, 0]), batch(600, 425)) == 2048     # a plan rank holds more
    assert ex._Capacity(700, 256, 2).for_plan(_Plan([1, 1]), batch(1, 1)) == 700
    assert ex._Capacity("pow2", 256, 2).for_plan(_Plan([1, 1]), batch(1, 1)) == "pow2"
    assert ex._Capacity("exact", 256, 2).for_plan(_Plan([1, 1]), batch(1, 1)) is None
    assert ex._sample_rows(4, 256) == 256 and ex._sample_rows(2, 161) == 82


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
                "--tokens-per-rank", "--json", "torchrun", "zellige, knapformer, usp or dp",
                "--compile", "--compile-backend", "--capacity-tokens"):
        assert opt in out, opt


@pytest.mark.parametrize("args, message", [
    (["--policy", "ring"], "unknown policy 'ring'"),
    (["--policy", "dp,dp"], "names one policy twice"),
    (["--reference", "--dim", "30", "--heads", "4"], "--dim 30 is not a multiple of --heads 4"),
    (["--reference", "--dim", "16", "--heads", "4"], "3D RoPE needs an even head_dim"),
    (["--reference", "--steps", "0"], "--steps: 0 must be at least 1"),
    (["--reference", "--video-share", "2"], "2.0 is outside 0..1"),
    (["--capacity-tokens", "lots"], "'lots': expected a token count, pow2, auto or exact"),
    (["--reference", "--compile"], "--compile and --capacity-tokens are for the distributed run"),
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
