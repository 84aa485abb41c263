"""`zellige profile-device` end to end on the cpu backend (a tiny model, small token counts; a
real measurement, no timing asserted): the row file is valid and complete, and `plan`,
`simulate` and `train --plan-only` take it with --device-row and predict other times than with
the built-in row. Without a GPU, --backend cuda fails in one line and writes nothing.
Binaries: $ZG_BUILD (default "build")."""
import json
import os
import shutil
import subprocess

import pytest

BUILD = os.environ.get("ZG_BUILD", "build")
ZELLIGE = os.path.abspath(os.path.join(BUILD, "bin", "zellige"))
ROW_KEYS = {"attn_fwd_eff", "attn_bwd_eff", "gemm_eff", "attn_half", "gemm_half",
            "framework_bytes"}


def run(*args, cwd=None):
    if not os.access(ZELLIGE, os.X_OK):
        pytest.skip(f"{ZELLIGE} not built (make)")
    return subprocess.run([ZELLIGE, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


@pytest.fixture(scope="module")
def row(tmp_path_factory):
    d = tmp_path_factory.mktemp("devrow")
    out = d / "row.json"
    r = run("profile-device", "--model", "tiny", "--tokens", "32,64,128", "--reps", "2",
            "--min-window", "0.002", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert "wrote " + str(out) in r.stdout and "built-in" in r.stdout
    # progress on stderr: one line per token count
    assert [l for l in r.stderr.splitlines() if "profile-device: [" in l] and "[3/3]" in r.stderr
    return out


def test_row_file_is_complete(row):
    j = json.loads(row.read_text())
    assert j["version"] == 1 and j["kind"] == "device_row"
    assert j["device"] == "cpu" and j["backend"] == "cpu" and j["dtype"] == "fp32"
    assert j["model"] == "tiny" and j["cluster"] == "cpu:1" and j["peak_flops"] > 0
    assert set(j["row"]) == ROW_KEYS and set(j["builtin_row"]) == ROW_KEYS
    for k in ("attn_fwd_eff", "attn_bwd_eff", "gemm_eff"):
        assert 0 < j["row"][k] <= 1
    assert j["row"]["framework_bytes"] == j["builtin_row"]["framework_bytes"]
    for k in ("attn_fwd_max_rel_err", "attn_bwd_max_rel_err", "gemm_max_rel_err"):
        assert j["fit"][k] >= 0
    assert [s["tokens"] for s in j["samples"]] == [32, 64, 128]
    d = j["shape"]["n_heads"] * j["shape"]["head_dim"]
    for s in j["samples"]:
        n = s["tokens"]
        assert s["attn_fwd_flops"] == pytest.approx(4 * n * n * d, rel=1e-12)
        assert s["attn_bwd_flops"] == pytest.approx(2.5 * s["attn_fwd_flops"], rel=1e-12)
        assert s["attn_fwd_flops_per_s"] == pytest.approx(s["attn_fwd_flops"] / s["attn_fwd_s"])
        assert s["gemm_of_peak"] == pytest.approx(s["gemm_flops_per_s"] / j["peak_flops"])
    names = [g["name"] for g in j["shape"]["gemms"]]
    assert names == ["q", "k", "v", "o", "cross_q", "cross_o", "ffn_up", "ffn_down"]
    assert j["machine"]["cpu"] and j["settings"]["reps"] == 2


def test_consumers_take_the_row_and_predict_differently(row, tmp_path):
    batch = tmp_path / "b.json"
    batch.write_text(json.dumps({"sequences": [{"tokens": t} for t in (4000, 1200, 300, 256)]}))
    span = {}
    for tag, extra in (("builtin", []), ("measured", ["--device-row", str(row)])):
        out = tmp_path / f"{tag}.json"
        r = run("plan", "--model", "tiny", "--cluster", "cpu:4", "--batch", str(batch),
                "--json", str(out), "--quiet", *extra)
        assert r.returncode == 0, r.stderr
        span[tag] = json.loads(out.read_text())["makespan"]
    assert span["measured"] > 0 and span["measured"] != span["builtin"]
    sim = {}
    for tag, extra in (("builtin", []), ("measured", ["--device-row", str(row)])):
        r = run("simulate", "--model", "tiny", "--cluster", "cpu:4", "--mix", "V50", "--steps",
                "1", "--load", "100K", "--policies", "zellige,dp", "--json", *extra)
        assert r.returncode == 0, r.stderr
        sim[tag] = json.loads(r.stdout.strip().splitlines()[-1])
    assert sim["measured"]["device_row"] == str(row) and "device_row" not in sim["builtin"]
    assert "device row: measured" in r.stdout
    z = [sim[t]["mixes"]["V50"]["zellige"]["makespan_s"] for t in ("builtin", "measured")]
    assert z[0] != z[1]
    tr = {}
    for tag, extra in (("builtin", []), ("measured", ["--device-row", str(row)])):
        r = run("train", "--plan-only", "--model", "tiny", "--cluster", "cpu:2", "--steps", "1",
                "--json", *extra)
        assert r.returncode == 0, r.stderr
        tr[tag] = json.loads(r.stdout.strip().splitlines()[-1])
    assert tr["measured"] != tr["builtin"]


def _gpu_visible():
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False
    r = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30)
    return r.returncode == 0 and "GPU" in r.stdout


def test_cuda_backend_without_gpu_fails_in_one_line(tmp_path):
    if _gpu_visible():
        pytest.skip("a GPU is visible: bench/gpu/device_row.sh measures it")
    out = tmp_path / "row.json"
    r = run("profile-device", "--backend", "cuda", "--out", str(out))
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("zellige profile-device: --backend cuda")
    assert not out.exists() and os.listdir(tmp_path) == []
