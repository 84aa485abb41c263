#!/usr/bin/env bash
# bench/gpu/pack-deps.sh [DEST] — the build dependencies the GPU machine's image lacks, for
# bench/gpu/check.sh to build with there: cJSON and OpenBLAS (headers, and the shared libraries
# with what OpenBLAS needs beyond glibc: libgfortran, libquadmath), taken from THIS machine's
# installed packages (Debian 12: libcjson-dev, libopenblas-pthread-dev). The GPU image (a CUDA
# image, nothing can be installed there) has gcc, nvcc, cuBLAS and NCCL but, like the CPU bench
# machines (bench/remote/pack.sh), no cJSON or OpenBLAS: without this bundle `make` fails there
# at the first #include <cJSON.h>. The libraries need glibc >= 2.34 (Ubuntu 22.04 and later).
#
#   bench/gpu/pack-deps.sh .gpudeps     # ~5 MB (OpenBLAS xz-compressed); .gpudeps is ignored
#   then carry .gpudeps with the tree; check.sh finds it and unpacks it when the build needs it.
set -euo pipefail
DEST=${1:-.gpudeps}
cflags=$(pkg-config --cflags libcjson openblas 2>/dev/null) || {
    echo "pack-deps.sh: pkg-config finds no libcjson/openblas here (scripts/install-deps.sh)" >&2
    exit 2
}
rm -rf "$DEST.tmp" && mkdir -p "$DEST.tmp/include" "$DEST.tmp/lib"
# headers: cJSON.h, cblas.h and what it includes (openblas_config.h)
for d in $(printf '%s\n' $cflags | sed -n 's/^-I//p'); do
    for h in cJSON.h cblas.h openblas_config.h; do
        [ -f "$d/$h" ] && cp "$d/$h" "$DEST.tmp/include/"
    done
done
for h in cJSON.h cblas.h openblas_config.h; do
    [ -f "$DEST.tmp/include/$h" ] || { echo "pack-deps.sh: $h not found in $cflags" >&2; exit 2; }
done
# libraries: resolved through a test link, so they are the ones the Makefile's flags pick
probe=$(mktemp -d)
printf '#include <cJSON.h>\n#include <cblas.h>\nint main(void){float a=1,b=1,c=0;'\
'cblas_sgemm(CblasRowMajor,CblasNoTrans,CblasNoTrans,1,1,1,1,&a,1,&b,1,0,&c,1);'\
'cJSON_Delete(cJSON_CreateObject());return c!=1;}\n' >"$probe/p.c"
# shellcheck disable=SC2046
cc $cflags "$probe/p.c" -o "$probe/p" $(pkg-config --libs libcjson openblas)
"$probe/p"
ldd "$probe/p" | awk '/=>/ {print $1 " " $3}' | grep -E '^lib(cjson|openblas|gfortran|quadmath)' |
    while read -r name path; do
        if [ "$name" = libopenblas.so.0 ]; then
            xz -T2 -6 -c "$(readlink -f "$path")" >"$DEST.tmp/lib/libopenblas.so.0.xz"
        else
            cp -L "$path" "$DEST.tmp/lib/$name"
        fi
    done
rm -rf "$probe"
[ -f "$DEST.tmp/lib/libcjson.so.1" ] && [ -f "$DEST.tmp/lib/libopenblas.so.0.xz" ] || {
    echo "pack-deps.sh: libcjson.so.1 or libopenblas.so.0 not found by ldd" >&2
    exit 2
}
{
    echo "made by bench/gpu/pack-deps.sh on $(uname -n), $(date -u +%F)"
    grep PRETTY_NAME /etc/os-release 2>/dev/null
    dpkg-query -W libcjson1 libopenblas0-pthread 2>/dev/null || true
} >"$DEST.tmp/MANIFEST"
rm -rf "$DEST" && mv "$DEST.tmp" "$DEST"
du -sh "$DEST"
