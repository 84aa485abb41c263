#!/usr/bin/env bash
# test.sh — the test command of the README and of CI: installs what is missing, builds and runs
# the whole suite (C tests, MPI tests, the layering check, the fuzz targets, pytest), ending with
# "N passed, N failed".
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
make -j2 test
