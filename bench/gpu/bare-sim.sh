#!/usr/bin/env bash
# bench/gpu/bare-sim.sh — HERE (the Debian 12 build machine, as root): runs a command in a sandbox
# in which this machine's copies of what bench/gpu/setup-deps.sh may have to supply are hidden,
# so that setup-deps.sh + make can be proven before the GPU machine's bare image sees them.
#
# Usage:  bench/gpu/bare-sim.sh [--no-pkg-config] [--hide-nccl] [--hide-cublas] -- COMMAND [ARGS...]
#
# Hidden (bubblewrap binds hard-linked copies of /usr/lib/x86_64-linux-gnu, /usr/include and
# /usr/bin, without these, over the real ones; nothing on the machine changes):
#   cJSON; OpenBLAS and every other BLAS/LAPACK (netlib too), libgfortran, libquadmath; OpenMPI
#   (libraries, headers, mpicc/mpirun/orted..., /etc/openmpi, /usr/share/openmpi) and the
#   libraries it links or loads (hwloc, libevent, PMIx, munge, libudev, libfabric, UCX, verbs,
#   PSM, libnl); COIN-OR CBC/CLP/CGL/OSI/CoinUtils.
#   --no-pkg-config  pkg-config too (the image may have none: then only CPATH/LIBRARY_PATH work)
#   --hide-nccl      nccl.h/libnccl in /usr, /usr/local and the CUDA toolkit (/usr/local/cuda), so
#                    that NCCL can only come from torch's nvidia-nccl wheel of `python3`
#   --hide-cublas    cuBLAS (headers, libraries) in the CUDA toolkit: it must come from torch's
#                    nvidia/cu13 wheel
# Not hidden: libc, gcc, make, zlib (every image has them), CUDA's nvcc/cudart/cuBLAS, python.
# Inside, ZGDEPS_PREFIX is a fresh folder (not /opt/zgdeps), removed at the end with the copies.
#
# Example (what was run for the commit that added it, in a scratch copy of the tree):
#   bench/gpu/bare-sim.sh --no-pkg-config --hide-nccl -- bash -c \
#     '. bench/gpu/setup-deps.sh && make -j2 && build/tests/core_test_json && \
#      mpirun --allow-run-as-root --oversubscribe -np 2 build/tests/comm_mpitest_comm'
set -eu
hide_pc=0
hide_nccl=0
hide_cublas=0
while [ $# -gt 0 ]; do
    case "$1" in
    --no-pkg-config) hide_pc=1 ;;
    --hide-nccl) hide_nccl=1 ;;
    --hide-cublas) hide_cublas=1 ;;
    --) shift; break ;;
    *) echo "bare-sim: unknown option '$1' (usage: $0 [--no-pkg-config] [--hide-nccl] [--hide-cublas] -- COMMAND...)" >&2; exit 2 ;;
    esac
    shift
done
[ $# -gt 0 ] || { echo "bare-sim: no command given (usage: $0 [--no-pkg-config] [--hide-nccl] [--hide-cublas] -- COMMAND...)" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "bare-sim: needs root (bubblewrap binds over /usr)" >&2; exit 2; }
command -v bwrap >/dev/null || { echo "bare-sim: needs bubblewrap (apt-get install bubblewrap)" >&2; exit 2; }

W=$(mktemp -d /tmp/zg-bare.XXXXXX)
trap 'rm -rf "$W"' EXIT
# hard links: no data is copied, and deleting a link here leaves the real file alone
cp -al /usr/lib/x86_64-linux-gnu "$W/lib"
cp -al /usr/include "$W/include"
cp -al /usr/bin "$W/bin"
mkdir -p "$W/zgdeps" "$W/empty"

(
    cd "$W/lib"
    rm -rf libcjson* cmake/cJSON \
        libopenblas* openblas-pthread openblas-openmp openblas-serial cmake/openblas \
        libblas.* libblas.so* liblapack.* liblapack.so* blas lapack libcblas* \
        libgfortran* libquadmath* \
        libmpi* libopen-pal* libopen-rte* libmca_common* liboshmem* libompitrace* openmpi libcaf* fortran \
        libhwloc* hwloc libevent* libpmix* pmix2 libmunge* libudev* \
        libfabric* libucx* libucp* libucs* libuct* libucm* ucx libpsm* libibverbs* librdmacm* libnl-* \
        libefa* libmlx* libmana* \
        libCbc* libCgl* libClp* libCoinUtils* libOsi* libcoin* \
        libnccl*
    cd pkgconfig
    rm -f libcjson.pc openblas*.pc blas*.pc lapack*.pc ompi*.pc orte.pc opal.pc mpi*.pc hwloc.pc \
        libevent*.pc pmix.pc cbc.pc cgl.pc clp.pc coin*.pc osi*.pc libibverbs.pc libnl*.pc \
        caf-openmpi.pc libudev.pc
)
(
    cd "$W/include"
    rm -rf cjson x86_64-linux-gnu/openblas* x86_64-linux-gnu/cblas* x86_64-linux-gnu/f77blas.h \
        x86_64-linux-gnu/mpi x86_64-linux-gnu/openmpi cblas*.h coin coin-or hwloc hwloc.h event.h \
        event2 evdns.h evhttp.h evrpc.h evutil.h pmix* infiniband rdma libnl3 libudev.h mpi.h nccl*
)
(
    cd "$W/bin"
    rm -f mpi* orte* ompi* opal* oshmem_info oshrun oshcc oshCC oshc++ oshcxx oshfort shmem* \
        aggregate_profile profile2mat cbc clp
    [ $hide_pc -eq 0 ] || rm -f pkg-config pkgconf ./*-pkg-config
)

binds=(--dev-bind / / --bind "$W/lib" /usr/lib/x86_64-linux-gnu --bind "$W/include" /usr/include
    --bind "$W/bin" /usr/bin --bind "$W/empty" /etc/openmpi --bind "$W/empty" /usr/share/openmpi)
cuda=$(realpath /usr/local/cuda 2>/dev/null || true)
if [ -n "$cuda" ] && [ $((hide_nccl + hide_cublas)) -gt 0 ]; then
    for d in include lib lib64; do
        [ -d "$cuda/$d" ] && [ ! -L "$cuda/$d" ] || continue
        cp -al "$cuda/$d" "$W/cuda-$d"
        [ $hide_nccl -eq 0 ] || rm -rf "$W/cuda-$d"/nccl* "$W/cuda-$d"/libnccl*
        [ $hide_cublas -eq 0 ] || rm -rf "$W/cuda-$d"/cublas* "$W/cuda-$d"/libcublas*
        binds+=(--bind "$W/cuda-$d" "$cuda/$d")
    done
fi
if [ $hide_nccl -eq 1 ]; then
    if ls /usr/local/include/nccl* >/dev/null 2>&1; then
        cp -al /usr/local/include "$W/local-include"
        rm -rf "$W/local-include"/nccl*
        binds+=(--bind "$W/local-include" /usr/local/include)
    fi
fi
echo "bare-sim: hidden cJSON, BLAS/LAPACK, gfortran, OpenMPI+deps, CBC$([ $hide_pc -eq 1 ] && echo ', pkg-config')$([ $hide_nccl -eq 1 ] && echo ', NCCL outside torch wheels')$([ $hide_cublas -eq 1 ] && echo ', cuBLAS in the CUDA toolkit'); ZGDEPS_PREFIX=$W/zgdeps"
set +e
bwrap "${binds[@]}" --setenv ZGDEPS_PREFIX "$W/zgdeps" -- "$@"
rc=$?
echo "bare-sim: command exited $rc"
exit $rc
