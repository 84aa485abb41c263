"""End-to-end checks of the `zellige` CLI: --help is true, bad input gives a non-zero exit, one
clear line on stderr naming the value, and no output file; good input writes a valid plan.
Binaries: $ZG_BUILD (default "build")."""
import json
import os
import subprocess
import sys

import pytest

BUILD = os.environ.get("ZG_BUILD", "build")
ZELLIGE = os.path.join(BUILD, "bin", "zellige")
AOIZORA = os.path.join(BUILD, "bin", "aoizora")


def run(*args, cwd=None):
    return subprocess.run([ZELLIGE, *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def test_help_lists_every_command_and_each_help_works():
    r = run("--help")
    assert r.returncode == 0
    commands = [l.split()[0] for l in r.stdout.splitlines() if l.startswith("  ")]
    for must in ("plan", "simulate", "workload", "check-engine", "bench"):
        assert must in commands, r.stdout
    for c in commands:
        h = run(c, "--help")
        assert h.returncode == 0, (c, h.stderr)
        assert "usage" in h.stdout.lower(), (c, h.stdout)


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


BAD_BATCHES = {
    "malformed.json": ('{"sequences": [{"tokens": 5},', "malformed JSON"),
    "negative.json": ('{"sequences": [{"tokens": -5}]}', "-5"),
    "zero.json": ('{"sequences": [{"tokens": 0}]}', "tokens"),
    "kind.json": ('{"sequences": [{"tokens": 5, "kind": "audio"}]}', "audio"),
}


@pytest.mark.parametrize("name", sorted(BAD_BATCHES))
def test_bad_batch_fails_cleanly_without_output(tmp_path, name):
    text, needle = BAD_BATCHES[name]
    batch = write(tmp_path, name, text)
    out = tmp_path / "plan.json"
    r = run("plan", "--model", "wan2.1-1.3b", "--cluster", "8xA800", "--batch", batch,
            "--policy", "zellige", "--json", str(out))
    assert r.returncode != 0
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, r.stderr
    assert needle in lines[0], lines[0]
    assert not out.exists()
    assert not any(p.name.startswith("plan.json") for p in tmp_path.iterdir())


@pytest.mark.parametrize("args,needle", [
    (["--model", "wan9"], "wan9"),
    (["--cluster", "0xA800"], "0xA800"),
    (["--policy", "magic"], "magic"),
])
def test_unknown_names_are_named(tmp_path, args, needle):
    batch = write(tmp_path, "b.json", '{"sequences": [{"tokens": 32760}, {"tokens": 1560}]}')
    base = {"--model": "wan2.1-1.3b", "--cluster": "8xA800", "--policy": "dp"}
    base.update(dict(zip(args[::2], args[1::2])))
    flat = [x for kv in base.items() for x in kv]
    out = tmp_path / "p.json"
    r = run("plan", *flat, "--batch", batch, "--json", str(out))
    assert r.returncode != 0
    assert needle in r.stderr
    assert not out.exists()


def test_infeasible_sequence_is_named_and_fallback_marks_the_plan(tmp_path):
    # a 15 s 1080p video cannot run whole on one A800: dp fails naming it; --fallback usp plans
    batch = write(tmp_path, "b.json", '{"sequences": [{"id": 7, "tokens": 497760}, {"tokens": 256}]}')
    out = tmp_path / "p.json"
    r = run("plan", "--model", "wan2.1-1.3b", "--cluster", "8xA800", "--batch", batch,
            "--policy", "dp", "--json", str(out))
    assert r.returncode == 3, r.stderr
    assert "497760" in r.stderr and "sequence 7" in r.stderr
    assert not out.exists()
    r = run("plan", "--model", "wan2.1-1.3b", "--cluster", "8xA800", "--batch", batch,
            "--policy", "dp", "--fallback", "usp", "--json", str(out))
    assert r.returncode == 0, r.stderr
    plan = json.loads(out.read_text())
    assert plan["fallback_from"] == "dp"


def test_good_plan_covers_every_token_once(tmp_path):
    batch = write(tmp_path, "b.json", json.dumps({"sequences": [
        {"tokens": 497760, "kind": "video"}, {"tokens": 75600, "kind": "video"},
        *[{"tokens": 1560, "kind": "image"} for _ in range(40)]]}))
    out = tmp_path / "p.json"
    r = run("plan", "--model", "wan2.1-1.3b", "--cluster", "16xA800", "--batch", batch,
            "--policy", "zellige", "--json", str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    plan = json.loads(out.read_text())
    assert plan["policy"] == "zellige" and plan["world_size"] == 16
    assert len(plan["sequences"]) == 42
    for s in plan["sequences"]:
        c = s["config"]
        assert c["q"] * c["h"] * c["k"] == len(s["ranks"]) == len(s["shards"])
        at = 0
        for sh, rk in zip(s["shards"], s["ranks"]):
            assert sh["rank"] == rk and sh["start"] == at and sh["end"] > at
            at = sh["end"]
        assert at == s["tokens"]
    assert max(r["time"] for r in plan["ranks"]) == pytest.approx(plan["makespan"])


def test_plan_search_budgets(tmp_path):
    # --lns-nodes / --anchor-nodes reach the zellige planner: every budget gives a legal plan
    # (the search only ever improves an incumbent), and a bad budget is named with no output
    batch = write(tmp_path, "b.json", json.dumps({"sequences": [
        {"tokens": 497760}, {"tokens": 219600}, {"tokens": 219600}, {"tokens": 95160},
        *[{"tokens": 1560} for _ in range(60)]]}))
    nodes = {}
    for args in ([], ["--lns-nodes", "0"], ["--lns-nodes", "1250"],
                 ["--first-nodes", "ordinary"], ["--anchor-nodes", "1", "--lns-nodes", "0"]):
        out = tmp_path / "p.json"
        r = run("plan", "--cluster", "32xA6000", "--batch", batch, "--json", str(out), "--quiet",
                *args)
        assert r.returncode == 0, r.stderr
        summary = json.loads(out.read_text())["summary"]  # "... (T*=..., ..., N nodes)"
        nodes[" ".join(args)] = int(summary.split(" nodes)")[0].split()[-1])
    # one node per min-T phase and the split phase's floor of 50: the budgets were applied (the
    # default spends 212 nodes on this batch)
    assert nodes["--anchor-nodes 1 --lns-nodes 0"] <= 60, nodes
    # no sentinels: a budget is a count or absent
    for args, needle in ((["--lns-nodes", "-1"], "--lns-nodes: '-1' is out of range (>= 0)"),
                         (["--anchor-nodes", "0"], "--anchor-nodes: '0' is out of range (>= 1)"),
                         (["--first-nodes", "0"], "--first-nodes: '0' is out of range (>= 1)"),
                         (["--first-nodes", "deep"], "--first-nodes: 'deep' is not an integer"),
                         (["--time-limit", "0"], "--time-limit: '0' is out of range")):
        out = tmp_path / "bad.json"
        r = run("plan", "--cluster", "32xA6000", "--batch", batch, "--json", str(out), *args)
        assert r.returncode != 0 and needle in r.stderr, r.stderr
        assert not out.exists()


def test_plan_explain_tuning():
    r = run("plan", "--explain-tuning")
    assert r.returncode == 0, r.stderr
    rows = {line.split()[0]: line for line in r.stdout.splitlines()[2:]}
    # every tuned constant with its value, unit, file and reason
    assert "LNS_GAP" in rows and "0.0007" in rows["LNS_GAP"] and "search/lns.c" in rows["LNS_GAP"]
    assert "STRICT" in rows and "1e-12" in rows["STRICT"]
    assert "FAST_MIN_RANKS" in rows and " 64 " in rows["FAST_MIN_RANKS"]
    assert len(rows) >= 60


def test_simulate_writes_report_and_json(tmp_path):
    rep = tmp_path / "r.html"
    r = run("simulate", "--cluster", "8xA800", "--video-seconds", "10", "--load", "125K",
            "--mix", "V50", "--steps", "1", "--policies", "zellige,usp,dp",
            "--report", str(rep), "--json")
    assert r.returncode == 0, r.stderr
    line = [l for l in r.stdout.splitlines() if l.startswith("{")][-1]
    j = json.loads(line)
    assert set(j["mixes"]["V50"]) == {"zellige", "usp", "dp"}
    assert j["mixes"]["V50"]["zellige"]["communicators"] == 1
    assert j["mixes"]["V50"]["usp"]["communicators"] >= 1
    html = rep.read_text()
    assert html.startswith("<!DOCTYPE html>") and "<svg" in html and "zellige" in html


@pytest.mark.parametrize("args,needle", [
    (["simulate", "--steps", "0"], "--steps: '0' is out of range (1..100000)"),
    (["simulate", "--steps"], "--steps needs a value"),
    (["simulate", "--load", "12Q"], "--load: '12Q' is not an integer"),
    (["simulate", "--seed", "1", "--seed", "2"], "--seed is given twice ('1', then '2')"),
    (["simulate", "--json", "--json"], "--json is given twice"),
    (["train", "--plan-only", "--video-share", "1.5"], "--video-share: '1.5' is out of range"),
    (["train", "--plan-only", "--steps", "x"], "--steps: 'x' is not an integer"),
    (["profile", "--reps", "5000", "--out", "OUT"], "--reps: '5000' is out of range (1..1000)"),
    (["profile", "--quiet"], "--out FILE is required"),
    (["fidelity", "--profile", "p.json", "--corners", "101", "--out", "OUT"],
     "--corners: '101' is out of range (0..100)"),
    (["bench", "attention", "--heads", "99"], "--heads: '99' is out of range (1..64)"),
    (["bench", "attention", "--max-tokens"], "--max-tokens needs a value"),
    (["train", "--bogus"], "unknown option '--bogus'"),
])
def test_shared_option_parser_names_option_and_value(tmp_path, args, needle):
    # every command parses its options with one table-driven parser (tools/zellige/cli.c):
    # one line on stderr naming the option and the value, exit code 2, no output file
    out = tmp_path / "out.json"
    r = run(*[str(out) if a == "OUT" else a for a in args])
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and needle in lines[0], r.stderr
    assert not out.exists()


def test_help_is_generated_from_the_option_tables():
    for cmd, opts in ((["simulate"], ["--knap-ignore-memory", "--time-limit S", "--report FILE"]),
                      (["train"], ["--plan-only", "--tokens-per-rank N", "--resume FILE"]),
                      (["profile"], ["--no-act-ckpt", "--calib-mirror P", "--out FILE"]),
                      (["fidelity"], ["--profile FILE", "--min-mixed N"]),
                      (["bench", "attention"], ["--torch-script FILE", "--no-torch"])):
        r = run(*cmd, "--help")
        assert r.returncode == 0 and r.stdout.startswith("usage:"), r.stderr
        for o in opts:
            assert "\n  " + o in r.stdout, (cmd, o, r.stdout)
        assert "--sgemm-only" not in r.stdout  # hidden: the benchmark's own re-run


def test_train_plan_only_json_lines():
    r = run("train", "--plan-only", "--policy", "zellige,dp", "--steps", "2", "--json")
    assert r.returncode == 0, r.stderr
    lines = [json.loads(l) for l in r.stdout.splitlines()]
    steps = [l for l in lines if "step" in l]
    summary = [l for l in lines if l.get("summary")]
    assert [(l["step"], l["policy"]) for l in steps] == [(0, "zellige"), (0, "dp"),
                                                         (1, "zellige"), (1, "dp")]
    assert all(l["plan_only"] and l["predicted_s"] > 0 for l in steps)
    assert [l["policy"] for l in summary] == ["zellige", "dp"]
    assert summary[0]["ratio_vs_first"] == 1


def test_aoizora_help_and_bad_topology():
    if not os.path.exists(AOIZORA):
        pytest.skip("aoizora not built")
    r = subprocess.run([AOIZORA, "--help"], capture_output=True, text=True)
    assert r.returncode == 0
    r = subprocess.run([AOIZORA, "plan", "--model", "wan2.1-1.3b", "--topology", "v9x-3"],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "v9x-3" in r.stderr


def test_readme_examples_match_their_commands():
    # the README's example outputs are regenerated by scripts/update-doc-examples.py; here their
    # shape (rows, columns, words; numbers masked) must still be what the commands print
    if not os.path.exists(os.path.join("build", "bin", "zellige")):
        pytest.skip("build/bin/zellige not built (the examples run the default build)")
    r = subprocess.run([sys.executable, "scripts/update-doc-examples.py", "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


# ---- clusters: NxGPU and NODESxGPUSxGPU (src/topo/cluster.c, docs/cost-model.md §1) ----------

CLUSTER_BATCH = '{"sequences": [{"tokens": 32760}, {"tokens": 1560}, {"tokens": 75600}]}'


@pytest.mark.parametrize("cluster,ranks,nodes", [
    ("2x8xH100", 16, 2), ("32xA800", 32, 4), ("4xH100", 4, 1), ("12xB200", 12, 2),
    ("1x4xL40S", 4, 1), ("8xa100", 8, 1),
])
def test_plan_on_gpu_count_forms(tmp_path, cluster, ranks, nodes):
    batch = write(tmp_path, "b.json", CLUSTER_BATCH)
    out = tmp_path / "p.json"
    r = run("plan", "--cluster", cluster, "--batch", batch, "--json", str(out))
    assert r.returncode == 0, r.stderr
    assert f"({ranks} ranks)" in r.stdout.splitlines()[0], r.stdout
    plan = json.loads(out.read_text())
    assert plan["world_size"] == ranks
    used = {s["rank"] for q in plan["sequences"] for s in q["shards"]}
    assert used and max(used) < ranks


@pytest.mark.parametrize("cluster,needle", [
    ("3xV100", "unknown GPU 'V100'"),
    ("0xH100", "GPU count 0 is out of range 1..65536"),
    ("-4xH100", "'-4' is not a whole number"),
    ("99999999999999999999xH100", "out of range"),
    ("2x9xH100", "at most 8"),
    ("2x8x", "missing the GPU"),
    ("garbage", "not NxGPU"),
])
def test_bad_cluster_form_fails_cleanly_without_output(tmp_path, cluster, needle):
    batch = write(tmp_path, "b.json", CLUSTER_BATCH)
    out = tmp_path / "p.json"
    r = run("plan", "--cluster", cluster, "--batch", batch, "--json", str(out))
    assert r.returncode != 0
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, r.stderr
    assert f"'{cluster}'" in lines[0] and needle in lines[0], lines[0]
    for gpu in ("A100", "A800", "A6000", "L40S", "H100", "H200", "B200"):
        assert gpu in lines[0]
    assert "NxGPU" in lines[0] and "NODESxGPUSxGPU" in lines[0]
    assert not out.exists() and list(tmp_path.iterdir()) == [tmp_path / "b.json"]


def test_world_size_without_cluster_plans_on_that_many_default_gpus(tmp_path):
    batch = write(tmp_path, "b.json", CLUSTER_BATCH)
    out = tmp_path / "p.json"
    r = run("plan", "--world-size", "4", "--batch", batch, "--json", str(out))
    assert r.returncode == 0, r.stderr
    assert "--world-size 4 and no --cluster: planned on 4xA800" in r.stdout
    assert json.loads(out.read_text())["world_size"] == 4
    r = run("plan", "--world-size", "100000", "--batch", batch, "--json", str(out) + ".x")
    assert r.returncode != 0
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and "--world-size: '100000' is out of range (1..65536)" in lines[0]
    assert not os.path.exists(str(out) + ".x")


@pytest.mark.parametrize("cmd", ["plan", "simulate", "train", "profile", "fidelity"])
def test_help_lists_cluster_forms_gpus_and_presets(cmd):
    r = run(cmd, "--help")
    assert r.returncode == 0
    for s in ("NxGPU", "NODESxGPUSxGPU", "2x8xH100", "cpu:N", "16xA800", "32xA6000",
              "A100", "A800", "A6000", "L40S", "H100", "H200", "B200"):
        assert s in r.stdout, (cmd, s)


MEGA_BATCH = {"sequences": [{"tokens": 200000}, {"tokens": 120000}, {"tokens": 60000},
                            {"tokens": 32760}, {"tokens": 32760}, {"tokens": 1560},
                            {"tokens": 1560}]}


@pytest.mark.parametrize("cmd", ["plan", "simulate"])
@pytest.mark.parametrize("value,needle", [
    ("0", "--max-seqlen-per-rank: '0' is out of range (>= 1)"),
    ("-5", "--max-seqlen-per-rank: '-5' is out of range (>= 1)"),
    ("1.5", "--max-seqlen-per-rank: '1.5' is not an integer"),
    ("abc", "--max-seqlen-per-rank: 'abc' is not an integer"),
    ("99999999999999999999", "--max-seqlen-per-rank: '99999999999999999999' does not fit"),
])
def test_max_seqlen_per_rank_bad_values(tmp_path, cmd, value, needle):
    out = tmp_path / ("plan.json" if cmd == "plan" else "r.html")
    if cmd == "plan":
        batch = write(tmp_path, "b.json", json.dumps(MEGA_BATCH))
        args = ["plan", "--batch", batch, "--policy", "megatron", "--json", str(out)]
    else:
        args = ["simulate", "--steps", "1", "--report", str(out)]
    r = run(*args, "--max-seqlen-per-rank", value)
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and needle in lines[0], r.stderr
    assert not out.exists()


def test_plan_megatron_writes_rounds(tmp_path):
    batch = write(tmp_path, "b.json", json.dumps(MEGA_BATCH))
    out = tmp_path / "plan.json"
    r = run("plan", "--batch", batch, "--cluster", "8xA800", "--policy", "megatron",
            "--max-seqlen-per-rank", "32K", "--json", str(out))
    assert r.returncode == 0, r.stderr
    assert "max_seqlen_per_rank 32000 (given)" in r.stdout
    p = json.loads(out.read_text())
    assert p["policy"] == "megatron"
    rounds = sorted({s.get("round", 0) for s in p["sequences"]})
    assert len(rounds) > 1 and rounds == list(range(len(rounds))), rounds
    for s in p["sequences"]:  # power-of-two CP sizes, every token once
        n = len(s["ranks"])
        assert n & (n - 1) == 0
        assert sum(sh["end"] - sh["start"] for sh in s["shards"]) == s["tokens"]
    for cmd in ("plan", "simulate"):
        assert "megatron" in run(cmd, "--help").stdout


def test_check_engine_runs_rounds_one_after_another():
    r = run("check-engine", "--rounds", "3", "--random-plans", "4", "--json")
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout.strip().splitlines()[-1])
    assert j["plans"] == 4 and j["passed"] == 4
    bad = run("check-engine", "--rounds", "0")
    assert bad.returncode == 2 and "--rounds: '0' is out of range (1..8)" in bad.stderr
