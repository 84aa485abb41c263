# bench/gpu/setup-deps.sh — run THERE (the GPU machine), first, SOURCED, from the repository root:
#
#     . bench/gpu/setup-deps.sh && OUT=$OUT bench/gpu/check.sh
#
# The GPU machine's image (Ubuntu 24.04, CUDA 13, python3 = /opt/torch/.venv) cannot fetch
# anything and may lack the C build's libraries. For each dependency this uses the image's own
# copy when it works (a test program is compiled, linked and run), and otherwise unpacks the
# Debian 12 .debs that bench/gpu/fetch-deps.sh downloaded HERE into .gpudeps/ (carried to the
# device call: `carry: [".gpudeps"]`) into a private prefix — never over the image's /usr, so
# its python/torch stay as they are — and exports what the Makefile and the programs need:
#
#   cJSON     required  CPATH (cJSON.h), LIBRARY_PATH, LD_LIBRARY_PATH, PKG_CONFIG_PATH
#   OpenBLAS  required  the same (cblas.h, libopenblas; libgfortran5 only if the image lacks it)
#   OpenMPI   optional  PATH (mpicc, mpirun), OPAL_PREFIX, OPAL_SYSCONFDIR, PMIX_PREFIX,
#                       PMIX_MCA_mca_base_component_path, PMIX_PKGDATADIR (Debian's OpenMPI
#                       4.1.4 and PMIx 4.2 relocated), LD_LIBRARY_PATH; plugins whose network
#                       libraries are absent are set aside, so it runs on shared memory and TCP.
#                       Without MPI: no trainer/profiler/check-engine runs, no mpitests, no e2e
#   CBC       optional  reported only (never carried): without it the exact bounds use the DP
#   CUDA      needed    for the GPU parts: nvcc (PATH or /usr/local/cuda), cuBLAS, cudart; when the
#                       toolkit lacks cuBLAS/cudart, torch's nvidia wheels are used
#   NCCL      optional  the image's own (compiler paths or CUDA_HOME), else torch's nvidia-nccl
#                       wheel: NCCL_HOME (the Makefile's override) -> a folder of links to it
#
# It prints one line per dependency (found where / unpacked / missing and what then is not built)
# and returns non-zero only when a required one (cJSON, OpenBLAS, a C compiler) is missing.
# Sourcing it twice is harmless (unpacked packages are stamped; paths are added once).
#
# Settings: ZGDEPS_PREFIX (default /opt/zgdeps), ZGDEPS_DEBS (default <repo>/.gpudeps),
#           PYTHON (default python3: where torch's nvidia wheels are looked up), CC (default cc),
#           ZGDEPS_FORCE=cjson,openblas,openmpi: unpack these groups even where the image has
#           them (an image copy that is there but unfit; the tests use it).
# Proven on the Debian 12 build machine with the libraries hidden: bench/gpu/bare-sim.sh.
#
# The device call (the `run` tool; docs/kernels.md "On a GPU"), in the checkout the session was
# started in, after bench/gpu/fetch-deps.sh ran there:
#   carry: [".gpudeps"]   timeout_s: 540   command:
#   OUT=$OUT bench/gpu/check.sh
#   (check.sh sources this script itself and writes at most 4 files to $OUT)

_zgd_log() { echo "setup-deps: $*"; }

# _zgd_path_add VAR DIR: put DIR first in the colon list VAR (once), exported
_zgd_path_add() {
    local cur
    cur=${!1:-}
    case ":$cur:" in *":$2:"*) return 0 ;; esac
    export "$1=$2${cur:+:$cur}"
}

# _zgd_sys_has_so SONAME: the image has this library itself (outside our prefix)
_zgd_sys_has_so() {
    local p
    for p in $($_ZGD_LDCONFIG -p 2>/dev/null | awk -v n="$1" '$1 == n && /x86-64/ { print $NF }') \
        "/usr/lib/x86_64-linux-gnu/$1" "/lib/x86_64-linux-gnu/$1" "/usr/lib64/$1"; do
        case "$p" in "$_ZGD_PREFIX"/*) continue ;; esac
        [ -e "$p" ] && return 0
    done
    return 1
}

# _zgd_try NAME 'C source' [compiler and linker flags...]: compile, link and run a test program
_zgd_try() {
    local name=$1 src=$2
    shift 2
    printf '%s\n' "$src" >"$_ZGD_TMP/$name.c"
    "$_ZGD_CC" "$_ZGD_TMP/$name.c" -o "$_ZGD_TMP/$name" "$@" >"$_ZGD_TMP/$name.log" 2>&1 &&
        "$_ZGD_TMP/$name" >>"$_ZGD_TMP/$name.log" 2>&1
}

# the first line of a failed test's log, for the report
_zgd_why() { grep -m1 -i 'error\|cannot\|not found\|undefined' "$_ZGD_TMP/$1.log" 2>/dev/null | cut -c1-160; }

# .deb access: dpkg-deb, or ar + tar where the image has no dpkg
_zgd_deb_list() {
    if command -v dpkg-deb >/dev/null 2>&1; then
        dpkg-deb -c "$1" | awk '{ print $6 }'
    else
        ar p "$1" "$(ar t "$1" | grep '^data\.tar')" | tar -tJf - 2>/dev/null
    fi
}
_zgd_deb_x() {
    if command -v dpkg-deb >/dev/null 2>&1; then
        dpkg-deb -x "$1" "$2"
    else
        ar p "$1" "$(ar t "$1" | grep '^data\.tar')" | tar -xJf - -C "$2"
    fi
}

# _zgd_unpack GROUP: unpack the group's packages (MANIFEST: group role package version file
# sha256) into the prefix. A "dep" package (a runtime library such as libgfortran5) is skipped
# when the image has all of its sonames, so ours never shadows the image's own.
_zgd_unpack() {
    local group=$1 g role pkg file sum so missing_so
    _ZGD_TOOK="" _ZGD_IMAGE_HAS=""
    if [ ! -r "$_ZGD_DEBS/MANIFEST" ]; then
        _ZGD_ERR="no $_ZGD_DEBS/MANIFEST: run bench/gpu/fetch-deps.sh here and carry .gpudeps"
        return 1
    fi
    mkdir -p "$_ZGD_PREFIX/.unpacked" || {
        _ZGD_ERR="cannot create $_ZGD_PREFIX"
        return 1
    }
    while read -r g role pkg _ file sum; do
        [ "$g" = "$group" ] || continue
        if [ ! -f "$_ZGD_DEBS/$file" ]; then
            _ZGD_ERR="$_ZGD_DEBS/$file is missing: run bench/gpu/fetch-deps.sh here and carry .gpudeps"
            return 1
        fi
        if [ "$role" = dep ]; then
            missing_so=0
            for so in $(_zgd_deb_list "$_ZGD_DEBS/$file" | grep -E '/lib[^/]*\.so\.[0-9]+$' | sed 's|.*/||'); do
                _zgd_sys_has_so "$so" || missing_so=1
            done
            if [ $missing_so -eq 0 ]; then
                _ZGD_IMAGE_HAS="$_ZGD_IMAGE_HAS $pkg"
                continue
            fi
        fi
        if [ ! -e "$_ZGD_PREFIX/.unpacked/$file" ]; then
            if [ "$(sha256sum "$_ZGD_DEBS/$file" | cut -d' ' -f1)" != "$sum" ]; then
                _ZGD_ERR="$_ZGD_DEBS/$file does not match its MANIFEST checksum (run bench/gpu/fetch-deps.sh again)"
                return 1
            fi
            _zgd_deb_x "$_ZGD_DEBS/$file" "$_ZGD_PREFIX" || {
                _ZGD_ERR="could not unpack $file into $_ZGD_PREFIX"
                return 1
            }
            touch "$_ZGD_PREFIX/.unpacked/$file"
        fi
        _ZGD_TOOK="$_ZGD_TOOK $pkg"
    done <"$_ZGD_DEBS/MANIFEST"
    [ -n "$_ZGD_TOOK$_ZGD_IMAGE_HAS" ] || {
        _ZGD_ERR="group $group is not in $_ZGD_DEBS/MANIFEST"
        return 1
    }
}

# the library folders of the prefix: first in LIBRARY_PATH (link) and LD_LIBRARY_PATH (run)
_zgd_use_prefix_libs() {
    local d
    for d in "$_ZGD_PREFIX/lib/x86_64-linux-gnu" "$_ZGD_PREFIX/usr/lib/x86_64-linux-gnu" "$@"; do
        [ -d "$d" ] || continue
        _zgd_path_add LIBRARY_PATH "$d"
        _zgd_path_add LD_LIBRARY_PATH "$d"
    done
}

# Debian's .pc files say prefix=/usr: rewritten to the prefix, then PKG_CONFIG_PATH
_zgd_use_pc() {
    local pc
    for pc in "$@"; do
        [ -f "$pc" ] || continue
        sed -i "s|=/usr/|=$_ZGD_PREFIX/usr/|; s|=/usr\$|=$_ZGD_PREFIX/usr|" "$pc"
        _zgd_path_add PKG_CONFIG_PATH "$(dirname "$pc")"
    done
}

_zgd_pkgconfig() { command -v pkg-config >/dev/null 2>&1 && pkg-config "$@" 2>/dev/null; }

# _zgd_forced GROUP: ZGDEPS_FORCE names the group, so the image's own copy is not looked at
_zgd_forced() { case ",${ZGDEPS_FORCE:-}," in *",$1,"*) return 0 ;; esac; return 1; }

_ZGD_CJSON_SRC='#include <cJSON.h>
int main(void) { cJSON *o = cJSON_Parse("{\"a\":1}"); int ok = o && cJSON_GetObjectItem(o, "a"); cJSON_Delete(o); return !ok; }'
_ZGD_BLAS_SRC='#include <cblas.h>
int main(void) { float a = 2, b = 3, c = 0; cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 1, 1, 1, 1.0f, &a, 1, &b, 1, 0.0f, &c, 1); return c != 6.0f; }'
_ZGD_MPI_SRC='#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) { int r, n; MPI_Init(&argc, &argv); MPI_Comm_rank(MPI_COMM_WORLD, &r); MPI_Comm_size(MPI_COMM_WORLD, &n); int s = 0; MPI_Allreduce(&r, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD); if (r == 0) printf("ranks %d sum %d\n", n, s); MPI_Finalize(); return s != n * (n - 1) / 2; }'
_ZGD_NCCL_SRC='#include <nccl.h>
int main(void) { int v; return ncclGetVersion(&v) != ncclSuccess; }'

_zgd_cjson() {
    local f
    f=$(_zgd_pkgconfig --cflags --libs libcjson)
    if _zgd_forced cjson; then
        :
    elif [ -n "$f" ] && _zgd_try cjson "$_ZGD_CJSON_SRC" $f; then
        _zgd_log "cJSON     image's own (pkg-config libcjson: $f)"
        return 0
    # the image's -dev package without pkg-config: the Makefile then passes no -I for <cJSON.h>
    elif [ -f /usr/include/cjson/cJSON.h ] && _zgd_try cjson "$_ZGD_CJSON_SRC" -I/usr/include/cjson -lcjson; then
        _zgd_path_add CPATH /usr/include/cjson
        _zgd_log "cJSON     image's own (/usr/include/cjson; no pkg-config, so CPATH+=/usr/include/cjson)"
        return 0
    fi
    if ! _zgd_unpack cjson; then
        _zgd_log "cJSON     MISSING: $_ZGD_ERR — nothing builds without it"
        return 1
    fi
    _zgd_path_add CPATH "$_ZGD_PREFIX/usr/include/cjson"
    _zgd_use_prefix_libs
    _zgd_use_pc "$_ZGD_PREFIX/usr/lib/x86_64-linux-gnu/pkgconfig/libcjson.pc"
    if _zgd_try cjson "$_ZGD_CJSON_SRC" -lcjson; then
        _zgd_log "cJSON     unpacked (${_ZGD_TOOK# }) into $_ZGD_PREFIX"
        return 0
    fi
    _zgd_log "cJSON     FAILED after unpacking: $(_zgd_why cjson) — nothing builds without it"
    return 1
}

_zgd_openblas() {
    local f d
    f=$(_zgd_pkgconfig --cflags --libs openblas)
    if ! _zgd_forced openblas && _zgd_try blas "$_ZGD_BLAS_SRC" ${f:--lopenblas}; then
        _zgd_log "OpenBLAS  image's own (${f:+pkg-config openblas: }${f:--lopenblas})"
        return 0
    fi
    if ! _zgd_unpack openblas; then
        _zgd_log "OpenBLAS  MISSING: $_ZGD_ERR — nothing builds without it"
        return 1
    fi
    d=$_ZGD_PREFIX/usr/lib/x86_64-linux-gnu/openblas-pthread
    # libblas.so.3/liblapack.so.3 of the pthread variant would shadow any the image has: not ours to offer
    rm -f "$d"/libblas.so* "$d"/liblapack.so*
    _zgd_path_add CPATH "$_ZGD_PREFIX/usr/include/x86_64-linux-gnu/openblas-pthread"
    _zgd_use_prefix_libs "$d"
    _zgd_use_pc "$d/pkgconfig/openblas.pc"
    if _zgd_try blas "$_ZGD_BLAS_SRC" -lopenblas; then
        _zgd_log "OpenBLAS  unpacked (${_ZGD_TOOK# }) into $_ZGD_PREFIX${_ZGD_IMAGE_HAS:+; the image has}${_ZGD_IMAGE_HAS}"
        return 0
    fi
    _zgd_log "OpenBLAS  FAILED after unpacking: $(_zgd_why blas) — nothing builds without it"
    return 1
}

# runs the MPI test program on 2 ranks; prints its verdict
_zgd_mpi_run2() {
    local cf lf
    cf=$(mpicc --showme:compile 2>/dev/null)
    lf=$(mpicc --showme:link 2>/dev/null)
    printf '%s\n' "$_ZGD_MPI_SRC" >"$_ZGD_TMP/mpi.c"
    if ! "$_ZGD_CC" "$_ZGD_TMP/mpi.c" -o "$_ZGD_TMP/mpi" $cf $lf >"$_ZGD_TMP/mpi.log" 2>&1; then
        echo "mpicc flags do not build an MPI program: $(_zgd_why mpi)"
        return 1
    fi
    if timeout 60 mpirun --allow-run-as-root --oversubscribe -np 2 "$_ZGD_TMP/mpi" >>"$_ZGD_TMP/mpi.log" 2>&1 &&
        grep -q 'ranks 2 sum 1' "$_ZGD_TMP/mpi.log"; then
        if grep -qi 'sorry\|warning\|unable\|error' "$_ZGD_TMP/mpi.log"; then
            echo "mpirun -np 2 ran an allreduce, but printed: $(grep -i -m2 'sorry\|warning\|unable\|error' "$_ZGD_TMP/mpi.log" | tr '\n' ' ' | cut -c1-200)"
        else
            echo "mpirun -np 2 ran an allreduce"
        fi
        return 0
    fi
    echo "mpirun -np 2 FAILED: $(grep -v '^ *$' "$_ZGD_TMP/mpi.log" | head -3 | tr '\n' ' ' | cut -c1-300)"
    return 1
}

_zgd_openmpi() {
    local v res p so dropped kept plugdir
    if ! _zgd_forced openmpi && command -v mpicc >/dev/null 2>&1 && mpicc --showme:link >/dev/null 2>&1 &&
        command -v mpirun >/dev/null 2>&1; then
        v=$(mpirun --version 2>/dev/null | head -1)
        if res=$(_zgd_mpi_run2); then
            _zgd_log "OpenMPI   image's own ($(command -v mpicc); $v): $res"
            return 0
        fi
        # an MPI that cannot run 2 local ranks (one built for a fabric that is not here, say)
        _zgd_log "OpenMPI   image's own ($(command -v mpicc); $v) does not work: $res — using the carried one"
    fi
    if ! _zgd_unpack openmpi; then
        _zgd_log "OpenMPI   MISSING: $_ZGD_ERR — no trainer, profiler or check-engine runs, no mpitests, no bench/e2e.sh"
        return 0
    fi
    p=$_ZGD_PREFIX
    # Debian installs mpicc/mpirun through update-alternatives (postinst), which dpkg-deb -x skips
    mkdir -p "$p/bin"
    ln -sfn ../usr/bin/mpicc.openmpi "$p/bin/mpicc"
    ln -sfn ../usr/bin/mpirun.openmpi "$p/bin/mpirun"
    ln -sfn ../usr/bin/mpiexec.openmpi "$p/bin/mpiexec"
    ln -sfn ../usr/bin/ompi_info "$p/bin/ompi_info"
    _zgd_path_add PATH "$p/bin"
    # OpenMPI 4.1 relocates every install folder under OPAL_PREFIX, except Debian's sysconfdir
    # (/etc/openmpi, its MCA defaults); the external PMIx has its own prefix
    export OPAL_PREFIX=$p/usr
    export OPAL_SYSCONFDIR=$p/etc/openmpi
    # PMIx 4.2 takes PMIX_PREFIX but still looks for its plugins and help texts in the folders
    # compiled in (/usr/lib/x86_64-linux-gnu/pmix2/...): without these two, mpirun warns that
    # it has no compression plugin and cannot open help-pcompress.txt
    export PMIX_PREFIX=$p/usr/lib/x86_64-linux-gnu/pmix2
    export PMIX_MCA_mca_base_component_path=$PMIX_PREFIX/lib/pmix
    export PMIX_PKGDATADIR=$PMIX_PREFIX/share/pmix
    _zgd_use_prefix_libs
    # set aside the plugins that need network libraries not carried (ofi, ucx, verbs, psm...)
    mkdir -p "$p/mca-set-aside"
    for plugdir in "$p/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3" "$p/usr/lib/x86_64-linux-gnu/pmix2/lib/pmix"; do
        for so in "$plugdir"/*mca_*.so; do
            [ -e "$so" ] || continue
            if ldd "$so" 2>/dev/null | grep -q 'not found'; then
                mv "$so" "$p/mca-set-aside/"
            fi
        done
    done
    dropped=$(ls "$p/mca-set-aside" 2>/dev/null | sed 's/^\(pmix_\)\{0,1\}mca_//; s/\.so$//' | tr '\n' ' ')
    kept=$(ls "$p/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3"/mca_*.so 2>/dev/null | wc -l)
    res=$(_zgd_mpi_run2)
    _zgd_log "OpenMPI   unpacked (4.1.4: ${_ZGD_TOOK# }) into $p${_ZGD_IMAGE_HAS:+; the image has}${_ZGD_IMAGE_HAS}; $kept plugins, set aside (libraries not here): ${dropped:-none}; $res"
    return 0
}

_zgd_cbc() {
    if _zgd_pkgconfig --exists cbc; then
        _zgd_log "CBC       image's own (pkg-config cbc)"
    else
        _zgd_log "CBC       missing (optional, not carried): exact bounds and AoiZora's ILP use their non-CBC paths"
    fi
}

# the folder of an nvidia wheel's package (nvidia.nccl, nvidia.cu13) in $PYTHON's site-packages
_zgd_wheel_dir() {
    local d
    d=$(cd / && timeout 60 "${PYTHON:-python3}" -c "import importlib, sys
m = importlib.import_module(sys.argv[1]); print(list(m.__path__)[0])" "$1" 2>/dev/null)
    if [ -z "$d" ]; then
        for d in /opt/torch/.venv/lib/python3*/site-packages/${1//.//}; do :; done
    fi
    [ -d "$d" ] && echo "$d"
}

_zgd_cuda() {
    local nvcc here lib w d f missing=""
    nvcc=$(command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
    if [ -z "$nvcc" ]; then
        _zgd_log "CUDA      MISSING: no nvcc on PATH or in /usr/local/cuda/bin — CPU build only, every GPU check fails"
        return 0
    fi
    # nvcc may be a wrapper script (/usr/local/bin/nvcc: exec /usr/local/cuda-13.0/bin/nvcc):
    # the toolkit is where nvcc says it runs from (_HERE_ of its dry run), not where the wrapper is
    here=$("$nvcc" --dryrun -x cu /dev/null 2>&1 | sed -n 's/^#\$ _HERE_=//p' | head -n1)
    [ -d "$here" ] || here=$(dirname "$(realpath "$nvcc")")
    _ZGD_CUDA_HOME=$(dirname "$(realpath "$here")")
    for lib in cudart cublas; do
        ls "$_ZGD_CUDA_HOME"/lib64/lib$lib.so "$_ZGD_CUDA_HOME"/lib/lib$lib.so >/dev/null 2>&1 ||
            missing="$missing $lib"
    done
    [ -f "$_ZGD_CUDA_HOME/include/cublas_v2.h" ] || missing="$missing cublas_v2.h"
    if [ -z "$missing" ]; then
        _zgd_log "CUDA      $nvcc ($("$nvcc" --version | grep -o 'release [0-9.]*')), CUDA_HOME $_ZGD_CUDA_HOME with cudart and cuBLAS"
        return 0
    fi
    # the toolkit lacks them: torch's nvidia wheels (nvidia/cu13/{include,lib}) have both. Only
    # the missing pieces are linked into a folder of ours (cuBLAS headers + libraries, or
    # libcudart): the wheel's own cuda_runtime.h is newer than nvcc's and must not shadow it
    w=$(_zgd_wheel_dir nvidia.cu13)
    if [ -n "$w" ] && [ -f "$w/lib/libcublas.so.13" ] && [ -f "$w/include/cublas_v2.h" ]; then
        d=$_ZGD_PREFIX/cuda-wheel
        mkdir -p "$d/lib" "$d/include"
        for lib in $missing; do
            case $lib in
            cudart) set -- "$w"/lib/libcudart.so.* ;;
            cublas) set -- "$w"/lib/libcublas.so.* "$w"/lib/libcublasLt.so.* ;;
            cublas_v2.h) set -- "$w"/include/cublas*.h ;;
            esac
            for f in "$@"; do
                [ -e "$f" ] || continue
                case $f in
                */include/*) ln -sfn "$f" "$d/include/$(basename "$f")" ;;
                *)
                    ln -sfn "$f" "$d/lib/$(basename "$f")"
                    ln -sfn "$f" "$d/lib/$(basename "$f" | sed 's/\.so\..*/.so/')"
                    ;;
                esac
            done
        done
        _zgd_path_add CPATH "$d/include"
        _zgd_path_add LIBRARY_PATH "$d/lib"
        _zgd_path_add LD_LIBRARY_PATH "$d/lib"
        _zgd_log "CUDA      $nvcc, CUDA_HOME $_ZGD_CUDA_HOME lacks${missing}: linked from torch's wheel $w into $d"
        return 0
    fi
    _zgd_log "CUDA      $nvcc, but CUDA_HOME $_ZGD_CUDA_HOME lacks${missing} and no nvidia.cu13 wheel has them — the CUDA link will fail"
}

_zgd_nccl() {
    local h d w v
    h=${_ZGD_CUDA_HOME:-/usr/local/cuda}
    if [ -n "${NCCL_HOME:-}" ] && [ -f "$NCCL_HOME/include/nccl.h" ] &&
        _zgd_try nccl "$_ZGD_NCCL_SRC" -I"$NCCL_HOME/include" -L"$NCCL_HOME/lib" -Wl,-rpath,"$NCCL_HOME/lib" -lnccl; then
        _zgd_log "NCCL      NCCL_HOME=$NCCL_HOME (set before)"
        return 0
    fi
    # what the Makefile's test link finds by itself: the compiler's paths or CUDA_HOME
    if _zgd_try nccl "$_ZGD_NCCL_SRC" -I"$h/include" -L"$h/lib" -L"$h/lib64" -Wl,-rpath,"$h/lib" -Wl,-rpath,"$h/lib64" -lnccl; then
        d=$(echo '#include <nccl.h>' | "$_ZGD_CC" -E -I"$h/include" -x c - 2>/dev/null | grep -m1 -o '"/[^"]*nccl\.h"')
        _zgd_log "NCCL      image's own (${d:-nccl.h} via the compiler's paths or CUDA_HOME $h)"
        return 0
    fi
    w=$(_zgd_wheel_dir nvidia.nccl)
    if [ -n "$w" ] && [ -f "$w/include/nccl.h" ] && [ -f "$w/lib/libnccl.so.2" ]; then
        # the wheel has libnccl.so.2 only; -lnccl needs libnccl.so: a folder of links
        d=$_ZGD_PREFIX/nccl
        mkdir -p "$d/lib"
        ln -sfn "$w/include" "$d/include"
        ln -sfn "$w/lib/libnccl.so.2" "$d/lib/libnccl.so.2"
        ln -sfn "$w/lib/libnccl.so.2" "$d/lib/libnccl.so"
        if _zgd_try nccl "$_ZGD_NCCL_SRC" -I"$d/include" -L"$d/lib" -Wl,-rpath,"$d/lib" -lnccl; then
            export NCCL_HOME=$d
            v=$(grep -m1 -o 'NCCL_VERSION_CODE [0-9]*' "$w/include/nccl.h" | cut -d' ' -f2)
            _zgd_log "NCCL      torch's wheel $w (version code ${v:-?}): NCCL_HOME=$d"
            return 0
        fi
        _zgd_log "NCCL      torch's wheel $w does not link: $(_zgd_why nccl) — no NCCL backend (comm_test_comm_nccl_cuda, bench_nccl_mem_cuda not built)"
        return 0
    fi
    _zgd_log "NCCL      missing (no nccl.h + libnccl in the compiler's paths, $h, or an nvidia.nccl wheel of ${PYTHON:-python3}) — no NCCL backend (comm_test_comm_nccl_cuda, bench_nccl_mem_cuda not built)"
}

_zgd_main() {
    local root rc=0
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
    _ZGD_DEBS=${ZGDEPS_DEBS:-$root/.gpudeps}
    _ZGD_PREFIX=${ZGDEPS_PREFIX:-/opt/zgdeps}
    if ! mkdir -p "$_ZGD_PREFIX" 2>/dev/null || [ ! -w "$_ZGD_PREFIX" ]; then
        _ZGD_PREFIX=${TMPDIR:-/tmp}/zgdeps
        mkdir -p "$_ZGD_PREFIX"
    fi
    _ZGD_LDCONFIG=$(command -v ldconfig 2>/dev/null || echo /sbin/ldconfig)
    _ZGD_CC=${CC:-cc}
    if ! command -v "$_ZGD_CC" >/dev/null 2>&1; then
        _zgd_log "C compiler MISSING: no '$_ZGD_CC' on PATH — nothing builds"
        return 1
    fi
    _ZGD_TMP=$(mktemp -d)
    _zgd_log "prefix $_ZGD_PREFIX, .debs from $_ZGD_DEBS, $("$_ZGD_CC" --version | head -1), pkg-config $(command -v pkg-config >/dev/null 2>&1 && echo yes || echo no)"
    _zgd_cjson || rc=1
    _zgd_openblas || rc=1
    _zgd_openmpi
    _zgd_cbc
    _zgd_cuda
    _zgd_nccl
    export ZGDEPS_PREFIX=$_ZGD_PREFIX
    rm -rf "$_ZGD_TMP"
    [ $rc -eq 0 ] || _zgd_log "a REQUIRED dependency is missing: make will fail (see above)"
    return $rc
}

_zgd_main
_zgd_rc=$?
unset -f _zgd_log _zgd_path_add _zgd_sys_has_so _zgd_try _zgd_why _zgd_deb_list _zgd_deb_x \
    _zgd_unpack _zgd_use_prefix_libs _zgd_use_pc _zgd_pkgconfig _zgd_forced _zgd_cjson _zgd_openblas \
    _zgd_mpi_run2 _zgd_openmpi _zgd_cbc _zgd_wheel_dir _zgd_cuda _zgd_nccl _zgd_main
unset _ZGD_CJSON_SRC _ZGD_BLAS_SRC _ZGD_MPI_SRC _ZGD_NCCL_SRC _ZGD_TOOK _ZGD_IMAGE_HAS _ZGD_ERR \
    _ZGD_DEBS _ZGD_PREFIX _ZGD_LDCONFIG _ZGD_CC _ZGD_TMP _ZGD_CUDA_HOME
if (return 0 2>/dev/null); then
    return $_zgd_rc
fi
echo "setup-deps: run it sourced ('. bench/gpu/setup-deps.sh'): its exports do not outlive this process" >&2
exit $_zgd_rc
