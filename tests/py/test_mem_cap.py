"""One memory cap (issue 25): for a given cluster, `zellige plan` (summary and plan JSON),
`zellige simulate` (stdout and --json), the HTML report and the planners' messages all give the
same cap, device memory x usable fraction (docs/cost-model.md, "The memory cap"), and each output
prints it once. A KnapFormer plan over that cap is written, marked, warned about and exits 5.
Binaries: $ZG_BUILD (default "build")."""
import json
import os
import re
import subprocess

import pytest

BUILD = os.environ.get("ZG_BUILD", "build")
ZELLIGE = os.path.join(BUILD, "bin", "zellige")
GIB = 1024.0 ** 3

# cluster, its world size, a load zellige plans there, the cap in bytes (GPU memory x 0.95,
# docs/cost-model.md §1)
CLUSTERS = [("8xA800", 8, "350K", 80 * GIB * 0.95), ("32xA6000", 32, "175K", 48 * GIB * 0.95)]


def run(*args, cwd=None):
    return subprocess.run([ZELLIGE, *args], capture_output=True, text=True, cwd=cwd, timeout=300)


def gib(text, pattern):
    """Every number the pattern's group captures in text, as floats (GiB)."""
    return [float(x) for x in re.findall(pattern, text)]


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    if not os.path.exists(ZELLIGE):
        pytest.skip(f"{ZELLIGE} not built (set ZG_BUILD)")
    d = tmp_path_factory.mktemp("cap")
    out = {}
    for name, world, load, _ in CLUSTERS:
        batch = d / f"b{world}.json"
        r = run("workload", "mix", "--mix", "V50", "--world-size", str(world), "--load", load,
                "--out", str(batch))
        assert r.returncode == 0, r.stderr
        plan_json = d / f"p{world}.json"
        plan = run("plan", "--batch", str(batch), "--cluster", name, "--json", str(plan_json))
        assert plan.returncode == 0, plan.stderr
        dp = run("plan", "--batch", str(batch), "--cluster", name, "--policy", "dp")
        report = d / f"r{world}.html"
        sim = run("simulate", "--cluster", name, "--mix", "V50", "--load", load, "--steps", "1",
                  "--policies", "usp,dp", "--json", "--report", str(report))
        assert sim.returncode == 0, sim.stderr
        out[name] = {"plan": plan.stdout, "plan_json": json.loads(plan_json.read_text()),
                     "dp": dp, "sim": sim.stdout, "report": report.read_text()}
    return out


@pytest.mark.parametrize("name,world,load,cap", CLUSTERS)
def test_the_cap_is_one_number_everywhere(outputs, name, world, load, cap):
    o = outputs[name]
    want = round(cap / GIB, 1)
    # plan: the summary names it once; the plan JSON carries it in bytes, as the one field
    assert gib(o["plan"], r"of the ([\d.]+) GiB cap per rank") == [want], o["plan"]
    assert o["plan"].count(" cap") == 1, o["plan"]
    assert o["plan_json"]["mem_cap"] == pytest.approx(cap, rel=1e-15)
    peak = max(r["memory"] for r in o["plan_json"]["ranks"])
    assert o["plan_json"]["mem_base"] < peak <= o["plan_json"]["mem_cap"]
    # simulate: the stdout line once, the JSON field, the report's text from the result's field
    sim_lines = [l for l in o["sim"].splitlines() if not l.startswith("{")]
    sim_text = "\n".join(sim_lines)
    assert gib(sim_text, r"memory cap ([\d.]+) GiB per rank") == [want], sim_text
    js = json.loads([l for l in o["sim"].splitlines() if l.startswith("{")][-1])
    # (cJSON prints 15 significant digits where they read back within its tolerance)
    assert js["mem_cap"] == pytest.approx(o["plan_json"]["mem_cap"], rel=1e-14)
    assert js["mem_base"] == pytest.approx(o["plan_json"]["mem_base"], rel=1e-14)
    # the report (its text without tags): the setting line names the cap once, and every other
    # mention of a cap (Gantt captions, reasons) is the same number
    text = re.sub(r"<[^>]+>", "", o["report"])
    assert gib(text, r"memory cap ([\d.]+) GiB per rank") == [want], text[:2000]
    others = gib(text, r"([\d.]+) GiB (?:memory )?cap") + gib(text, r"cap (?:of )?([\d.]+) GiB")
    assert others and set(others) == {want}, others
    # messages: dp cannot hold a 15 s 1080p video whole; it names the same cap and the total
    assert o["dp"].returncode == 3, o["dp"].stderr
    assert gib(o["dp"].stderr, r"cap ([\d.]+) GiB") == [want], o["dp"].stderr
    need = gib(o["dp"].stderr, r"needs ([\d.]+) GiB \(")
    assert len(need) == 1 and need[0] > want, o["dp"].stderr
    # simulate's dp row fails with the same message and cap
    assert gib(sim_text, r"on one rank, cap ([\d.]+) GiB") == [want], sim_text


def test_two_clusters_have_different_caps(outputs):
    a, b = (outputs[n]["plan_json"]["mem_cap"] for n, _, _, _ in CLUSTERS)
    assert a != b


def test_knapformer_over_the_cap_is_written_marked_and_exits_5(tmp_path):
    if not os.path.exists(ZELLIGE):
        pytest.skip(f"{ZELLIGE} not built (set ZG_BUILD)")
    batch, plan = tmp_path / "b.json", tmp_path / "p.json"
    assert run("workload", "mix", "--mix", "V50", "--world-size", "8", "--out",
               str(batch)).returncode == 0
    r = run("plan", "--batch", str(batch), "--policy", "knapformer", "--bags", "g4n2", "--json",
            str(plan))
    assert r.returncode == 5, r.stderr
    assert len(r.stderr.splitlines()) == 1, r.stderr
    assert "warning: knapformer ignores memory and its plan is over the cap" in r.stderr
    assert "4 of 8 ranks over the memory cap of 76.0 GiB per rank: rank 4 peaks at" in r.stderr
    assert "OVER THE CAP" in r.stdout
    p = json.loads(plan.read_text())
    assert p["over_cap_ranks"] == [4, 5, 6, 7]
    assert all((r["memory"] > p["mem_cap"]) == (r["rank"] in p["over_cap_ranks"])
               for r in p["ranks"])
    # with a fallback the over-cap plan counts as none: zellige's plan, within the cap, exit 0
    r = run("plan", "--batch", str(batch), "--policy", "knapformer", "--bags", "g4n2",
            "--fallback", "zellige", "--json", str(plan))
    assert r.returncode == 0, r.stderr
    p = json.loads(plan.read_text())
    assert p["policy"] == "zellige" and p["fallback_from"] == "knapformer"
    assert "over_cap_ranks" not in p
    assert max(r["memory"] for r in p["ranks"]) <= p["mem_cap"]
