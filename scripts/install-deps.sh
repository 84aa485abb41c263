#!/usr/bin/env bash
# install-deps.sh — installs what zellige needs on Debian 12 (idempotent; quiet when present).
set -e
PKGS="build-essential pkg-config clang libcjson-dev libopenblas-dev openmpi-bin libopenmpi-dev coinor-libcbc-dev python3-pytest"
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
for mod in pytest ortools; do
    if ! python3 -c "import $mod" 2>/dev/null; then
        python3 -m pip install -q "$mod" 2>/dev/null || echo "note: $mod not installed; its tests are skipped"
    fi
done
