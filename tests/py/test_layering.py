"""scripts/check-layering.py on small synthetic trees: each kind of breakage is caught."""
import os
import subprocess
import sys

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "check-layering.py")


def tree(tmp_path, files):
    for name, text in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return subprocess.run([sys.executable, SCRIPT, "--root", str(tmp_path)],
                          capture_output=True, text=True)


BASE = {
    "src/core/deps": "",
    "src/core/core.h": "// May include: nothing.\n#pragma once\n",
    "src/core/core.c": '#include "core/core.h"\n',
    "src/plan/deps": "core",
    "src/plan/plan.h": '// May include: core.\n#include "core/core.h"\n',
    "src/plan/plan_internal.h": '#include "plan/plan.h"\n',
    "src/plan/plan.c": '#include "plan/plan_internal.h"\n',
}


def test_clean_tree_passes(tmp_path):
    r = tree(tmp_path, BASE)
    assert r.returncode == 0, r.stdout
    assert "clean" in r.stdout


def test_upward_include_fails(tmp_path):
    r = tree(tmp_path, {**BASE, "src/core/core.c": '#include "plan/plan.h"\n'})
    assert r.returncode == 1
    assert "upward include" in r.stdout and "src/core/core.c" in r.stdout


def test_private_header_from_another_module_fails(tmp_path):
    r = tree(tmp_path, {**BASE, "src/sim/deps": "plan core",
                        "src/sim/sim.h": "// May include: plan, core.\n",
                        "src/sim/sim.c": '#include "plan/plan_internal.h"\n'})
    assert r.returncode == 1
    assert "private header" in r.stdout


def test_include_cycle_fails(tmp_path):
    r = tree(tmp_path, {**BASE, "src/plan/a.h": '#include "plan/b.h"\n',
                        "src/plan/b.h": '#include "plan/a.h"\n'})
    assert r.returncode == 1
    assert "include cycle" in r.stdout


def test_deps_not_transitive_or_cyclic_fails(tmp_path):
    r = tree(tmp_path, {**BASE, "src/sim/deps": "plan", "src/sim/sim.c": "\n",
                        "src/sim/sim.h": "// May include: plan.\n"})
    assert r.returncode == 1 and "deps are transitive" in r.stdout
    r = tree(tmp_path, {**BASE, "src/core/deps": "plan"})
    assert r.returncode == 1 and "DAG" in r.stdout


def test_header_contract_must_match_deps(tmp_path):
    r = tree(tmp_path, {**BASE, "src/plan/plan.h": '// May include: nothing.\n'})
    assert r.returncode == 1 and "src/plan/deps says [core]" in r.stdout
    files = dict(BASE)
    del files["src/plan/plan.h"]
    files["src/plan/plan_internal.h"] = "\n"
    r = tree(tmp_path / "x", files)
    assert r.returncode == 1 and "no module header" in r.stdout
