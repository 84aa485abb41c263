#!/usr/bin/env bash
# bench/gpu/fetch-deps.sh — run HERE (the Debian 12 build machine) before a GPU device call.
#
# The GPU machine runs an image we do not control (Ubuntu 24.04, CUDA 13, python at
# /opt/torch/.venv) and cannot reach any registry. The C build needs cJSON and OpenBLAS, and the
# trainer, the profiler, the MPI tests and bench/e2e.sh need OpenMPI. This script downloads the
# Debian 12 .debs that provide them into .gpudeps/ (git-ignored), so that the device call can carry
# them (`carry: [".gpudeps"]`) and bench/gpu/setup-deps.sh can unpack, THERE, only what the image
# lacks into a private prefix. Nothing is installed here.
#
# Usage (repository root):   bench/gpu/fetch-deps.sh          # idempotent; ~17 MiB
#   ZGDEPS_DIR=dir  download somewhere else (default .gpudeps)
#
# The device call (the `run` tool; docs/kernels.md "On a GPU"), in the checkout the session was
# started in, after bench/gpu/fetch-deps.sh ran there:
#   carry: [".gpudeps"]   timeout_s: 540   command:
#   OUT=$OUT bench/gpu/check.sh
#   (check.sh sources this script itself and writes at most 4 files to $OUT)
#
# What is fetched (groups; setup-deps.sh unpacks a group only when the image lacks it):
#   cjson     libcjson1 libcjson-dev
#   openblas  libopenblas0-pthread libopenblas-pthread-dev, and libgfortran5 libquadmath0 (its
#             runtime needs; dropped THERE when the image has its own)
#   openmpi   openmpi-bin libopenmpi3 libopenmpi-dev openmpi-common (OpenMPI 4.1.4) with the
#             libraries libmpi/libopen-pal/libopen-rte/libpmix link against: libhwloc15,
#             libevent-core-2.1-7, libevent-pthreads-2.1-7, libpmix2, libmunge2, libudev1, zlib1g
# Not fetched, on purpose: the network plugins' libraries that libopenmpi3 also Depends on
# (libfabric1, libucx0, libibverbs1, libpsm2-2, libpsm-infinipath1, libnl-3-200, libhwloc-plugins):
# only OpenMPI's ofi/ucx/openib/psm/usnic plugins load them, Debian's own MCA defaults turn ofi,
# ucx and openib off, and setup-deps.sh removes the plugins whose libraries are missing, so OpenMPI
# runs on shared memory (vader) and TCP alone, as on the build machine. Nor CBC (optional: the
# build leaves its exact bounds out without it), nor NCCL (setup-deps.sh finds the image's own,
# in the CUDA toolkit or torch's nvidia-nccl-cu13 wheel).
#
# The script checks the dependency closure with apt-cache: a Depends of a fetched package that is
# neither fetched, nor in the base set every Ubuntu 24.04 image has (libc6, libgcc-s1, libstdc++6),
# nor in the plugin list above, is reported, so a Debian update that adds one does not go unseen.
set -u
cd "$(dirname "$0")/../.." || exit 1
DIR=${ZGDEPS_DIR:-.gpudeps}

GROUPS_PKGS="
cjson libcjson1 libcjson-dev
openblas libopenblas0-pthread libopenblas-pthread-dev libgfortran5 libquadmath0
openmpi openmpi-bin libopenmpi3 libopenmpi-dev openmpi-common libhwloc15 libevent-core-2.1-7 libevent-pthreads-2.1-7 libpmix2 libmunge2 libudev1 zlib1g
"
# runtime libraries of the packages above; THERE the image's own copy wins (same soname)
RUNTIME_DEPS="libgfortran5 libquadmath0 libhwloc15 libevent-core-2.1-7 libevent-pthreads-2.1-7 libmunge2 libudev1 zlib1g"
BASE="libc6 libgcc-s1 libstdc++6 gcc-12-base"
PLUGIN_ONLY="libfabric1 libucx0 libibverbs1 libpsm2-2 libpsm-infinipath1 libnl-3-200 libhwloc-plugins"
# libopenmpi-dev's Depends are for building Fortran/Java/verbs programs against OpenMPI; the C
# wrapper (mpicc) needs none of them
DEV_ONLY="gfortran-12 gfortran-mod-15 libibverbs-dev libhwloc-dev libevent-dev libpmix-dev libjs-jquery libjs-jquery-ui zlib1g-dev ssh-client openssh-client"

if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg >/dev/null 2>&1; then
    echo "fetch-deps: needs apt-get and dpkg (a Debian 12 machine); none here" >&2
    exit 1
fi
if [ "$(dpkg --print-architecture)" != amd64 ]; then
    echo "fetch-deps: this machine is $(dpkg --print-architecture); the GPU machine is amd64." >&2
    echo "  Fetch amd64 .debs with apt-get -oAPT::Architecture=amd64 (see the device README)." >&2
    exit 1
fi
mkdir -p "$DIR" || exit 1

all_pkgs=$(echo "$GROUPS_PKGS" | awk 'NF { for (i = 2; i <= NF; i++) printf "%s ", $i }')
# the closure check (one local apt-cache call; no download)
problems=0
while read -r p d; do
    case " $all_pkgs $BASE $PLUGIN_ONLY $DEV_ONLY " in
    *" $d "*) ;;
    *)
        echo "fetch-deps: WARNING: $p depends on $d, which is neither fetched nor known to be unneeded"
        problems=1
        ;;
    esac
done < <(apt-cache depends $all_pkgs 2>/dev/null |
    awk '/^[^ ]/ { p = $1 } $1 ~ /^\|?(Pre)?Depends:$/ { gsub(/[<>]/, "", $2); print p, $2 }')

# download what is not there yet (apt-get download takes the candidate version)
missing=""
for p in $all_pkgs; do
    ls "$DIR/${p}_"*.deb >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "fetch-deps: downloading$missing"
    # apt runs the download as user _apt when it can; a root-only folder only draws a warning
    if ! (cd "$DIR" && apt-get download $missing >/dev/null 2>&1); then
        echo "fetch-deps: apt-get download failed; running apt-get update and trying again"
        apt-get update -qq >/dev/null 2>&1
        if ! (cd "$DIR" && apt-get download $missing); then
            echo "fetch-deps: FAILED to download:$missing" >&2
            exit 1
        fi
    fi
fi

# keep one version per package (an older download left beside a newer one would unpack both)
for p in $all_pkgs; do
    n=$(ls "$DIR/${p}_"*.deb 2>/dev/null | wc -l)
    if [ "$n" -ne 1 ]; then
        echo "fetch-deps: $n files for $p in $DIR; remove the stale ones:" >&2
        ls "$DIR/${p}_"*.deb >&2
        exit 1
    fi
done

# MANIFEST: group role package version file sha256 — setup-deps.sh unpacks by group from it. Role
# "dep": a runtime library that setup-deps.sh takes from the image when the image has its soname
tmp=$(mktemp)
echo "$GROUPS_PKGS" | while read -r group pkgs; do
    [ -n "$group" ] || continue
    for p in $pkgs; do
        f=$(ls "$DIR/${p}_"*.deb)
        v=$(dpkg-deb -f "$f" Version)
        s=$(sha256sum "$f" | cut -d' ' -f1)
        case " $RUNTIME_DEPS " in *" $p "*) role=dep ;; *) role=main ;; esac
        echo "$group $role $p $v $(basename "$f") $s"
    done
done >"$tmp"
mv "$tmp" "$DIR/MANIFEST"
echo "fetch-deps: $(wc -l <"$DIR/MANIFEST") packages in $DIR ($(du -sh "$DIR" | cut -f1)); closure check $([ $problems -eq 0 ] && echo ok || echo 'has WARNINGS (above)')"
