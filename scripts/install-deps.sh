#!/usr/bin/env bash
# install-deps.sh — installs what zellige needs on Debian 12 (idempotent; quiet when present).
set -e
PKGS="build-essential pkg-config clang libcjson-dev libopenblas-dev openmpi-bin libopenmpi-dev coinor-libcbc-dev python3-pytest chromium"
missing=""
for p in $PKGS; do
    dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO=sudo
    echo "installing:$missing"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi
# Python test tools: pytest, and OR-Tools (CP-SAT, the paper's solver) for the planner
# cross-check. Best effort: without them the Python tests are skipped, the C suite still runs.
# torch (zellige.torch, examples/train_dit.py; PyPI's wheel is the CUDA build, it runs on CPU) and
# JAX (aoizora.jax: XLA partitions and compiles the candidates on fake CPU devices).
for mod in pytest ortools torch jax; do
    if ! python3 -c "import $mod" 2>/dev/null; then
        python3 -m pip install -q "$mod" 2>/dev/null || echo "note: $mod not installed; its tests are skipped"
    fi
done

# The Python packages (python/, docs/pytorch.md, docs/aoizora.md): numpy, then `pip install
# ./python`, which builds the C libraries of zellige (the planner) and aoizora from src/ into
# them. Skipped when both installed packages were built from the current sources. `wheel` lets the tests rebuild it without the registry.
for mod in numpy wheel; do
    if ! python3 -c "import $mod" 2>/dev/null; then
        python3 -m pip install -q "$mod" || echo "note: $mod not installed"
    fi
done
root="$(cd "$(dirname "$0")/.." && pwd)"
want=$(python3 -c "import importlib.util as u, sys; s = u.spec_from_file_location('s', sys.argv[1] + '/python/zellige/_sources.py'); m = u.module_from_spec(s); s.loader.exec_module(m); print(m.source_hash(sys.argv[1]), m.source_hash(sys.argv[1], 'aoizora'))" "$root")
have=$(cd / && python3 -c "import zellige._build_info as b, aoizora._build_info as a; print(b.SOURCE_HASH, a.SOURCE_HASH)" 2>/dev/null || true)
if [ "$want" != "$have" ]; then
    echo "installing the Python packages zellige and aoizora (python -m pip install ./python)"
    python3 -m pip install -q --no-deps --force-reinstall "$root/python" ||
        echo "note: the zellige Python package did not install; its tests are skipped"
fi
