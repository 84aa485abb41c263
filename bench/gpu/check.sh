#!/usr/bin/env bash
# bench/gpu/check.sh — THE GPU check: one run on a GPU machine (H100/H200, 16 cores), no network.
# Stages (STAGES picks them, default all; the own stages run in this order, then the others in
# their STAGES order):
#   build     the build dependencies (bench/gpu/setup-deps.sh: the image's own cJSON, OpenBLAS,
#             OpenMPI, else the .debs carried in .gpudeps/; NCCL and cuBLAS from CUDA_HOME, the
#             system or torch's nvidia wheels), then make -k -j;
#   tests     the CUDA kernels against the CPU reference (kernels_test_attention_cuda), the NCCL
#             backend with one rank (comm_test_comm_nccl_cuda) and the CPU kernel tests;
#   memcheck  compute-sanitizer memcheck on the small cases of the CUDA test (a finding fails),
#             then racecheck on one (advisory: hazards are listed, status warn);
#   bench     attention TFLOP/s on the paper's shapes (bench_attn_cuda: Wan2.1-1.3B, 12 heads x
#             128, bf16, 1K..75K single sequences, 1K..32K varlen packs) against the dense bf16
#             peak and a cuBLAS GEMM of the same run; fails when the tensor cores disagree with
#             the simple fp32-math kernel;
#   torch     the same shapes through PyTorch (SDPA flash/cuDNN, FA varlen): attn_torch.py;
#   nccl      GPU memory of one world NCCL communicator vs one per rank set (bench_nccl_mem_cuda);
#   device_row torch_cuda e2e_host (and any NAME with a bench/gpu/NAME.sh): the stage scripts,
#             run as `OUT=dir BUDGET=seconds bench/gpu/NAME.sh` (exit 0 on success) with the
#             budget left split evenly over the stages still to run, except that
#             BUDGET_NAME=seconds gives one stage that much, kept from the stages before it; a
#             stage may write summary.md (appended to results.md) and *.json (in results.json).
# Time: BUDGET seconds (default 490) bound everything: each command runs under `timeout` with at
# most the time left (less a 10 s reserve for the summary), and a stage that cannot get its
# minimum is skipped and reported, so the run ends within BUDGET + ~10 s (hard stop).
#
# Usage, from anywhere (it works in the repository root):
#   OUT=/some/dir [BUDGET=490] [STAGES="build tests ..."] [BUDGET_e2e_host=200] bench/gpu/check.sh
# Before a GPU run, in the checkout the device call sends: bench/gpu/fetch-deps.sh (the .debs
# into .gpudeps/, carried with the call: carry [".gpudeps"]); docs/kernels.md "On a GPU".
# $OUT receives at most 4 files (the GPU tool returns 8): results.md, results.json, check.log
# and logs.tar.gz (build/test/bench logs, every stage's own OUT). Exit status: 0 every stage
# run passed on a GPU; 1 something failed; 2 no GPU visible (a dry run: GPU steps skipped, said
# so, nothing else failed); 3 nothing failed but a measurement ran out of budget (INCOMPLETE).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$ROOT/gpu-out} # a relative OUT is taken from the caller's directory
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || exit 1
cd "$ROOT" || exit 1
PY=${PYTHON:-python3}
BUDGET=${BUDGET:-490}
RESERVE=10
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
OWN_STAGES="build tests memcheck bench torch nccl"
EXTRA_STAGES="device_row torch_cuda e2e_host"
STAGES=${STAGES:-$OWN_STAGES $EXTRA_STAGES}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/zg-gpu-check.XXXXXX")
L=$WORK/logs # everything but the 4 files of $OUT
mkdir -p "$L"
T0=$(date +%s)
: >"$OUT/check.log"
: >"$L/stages.tsv" # stage \t status \t seconds \t note

log() { echo "[check +$(($(date +%s) - T0))s] $*" | tee -a "$OUT/check.log"; }
left() { echo $((BUDGET - RESERVE - ($(date +%s) - T0))); }
# cap N: seconds a command may take: N, or what is left of the budget if less (0 if none)
cap() {
    local l
    l=$(left)
    [ "$l" -lt 0 ] && l=0
    [ "$l" -lt "$1" ] && echo "$l" || echo "$1"
}
# tmo N CMD...: CMD under timeout (TERM, KILL 5 s later) with cap N; 124 when cut off, 125 when
# not started (less than 5 s of the budget left)
tmo() {
    local c
    c=$(cap "$1")
    shift
    [ "$c" -ge 5 ] || return 125
    timeout -k 5 "$c" "$@"
}
# status STAGE STATUS SECONDS NOTE  (STATUS: ok | FAILED | warn | skipped | no-gpu | timeout)
status() {
    printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$L/stages.tsv"
    [ "$2" = timeout ] && incomplete=1
    return 0
}
# a measurement cut off (124) or not started (125) for lack of budget: status timeout
timed_out() { [ "$1" -eq 124 ] || [ "$1" -eq 125 ]; }
why_out() { [ "$1" -eq 125 ] && echo "not started: out of budget" || echo "out of time"; }
want() { case " $STAGES " in *" $1 "*) return 0 ;; esac; return 1; }
fail=0
incomplete=0

{
    timeout 20 nvidia-smi 2>&1 || echo "nvidia-smi not found (or no answer in 20 s)"
    ls /usr/local/cuda*/bin/nvcc 2>&1
    nvcc --version 2>&1 || /usr/local/cuda/bin/nvcc --version 2>&1 || echo "nvcc not found"
    cc --version 2>&1 | head -1
    grep PRETTY_NAME /etc/os-release 2>/dev/null
    uname -a
    echo "cpus: $(nproc)"
    echo "stages: $STAGES; budget ${BUDGET}s"
    git log -1 --oneline 2>/dev/null || echo "(no git metadata)"
} >"$L/machine.txt" 2>&1
GPU=$(timeout 20 nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1)
if [ -n "$GPU" ]; then HAVE_GPU=1; else HAVE_GPU=0; fi
log "machine: ${GPU:-NO GPU VISIBLE (nvidia-smi lists none): GPU steps will be skipped}; $(nproc) cpus; stages: $STAGES"

# ---------------------------------------------------------------------------------------------
# build: dependencies, then make -k (as much as builds; each stage checks its own binaries)
# The libraries the GPU image may lack (cJSON, OpenBLAS, OpenMPI, NCCL from torch's wheel):
# bench/gpu/setup-deps.sh uses the image's own copy when it works, else unpacks the .debs that
# bench/gpu/fetch-deps.sh put into .gpudeps/ here (carried with the call) into /opt/zgdeps and
# exports the paths; the later stages (mpirun for e2e_host) inherit them. Sourcing it again after
# the caller did is harmless (unpacked packages are stamped, paths added once).
find_deps() {
    if [ -f bench/gpu/setup-deps.sh ]; then
        # shellcheck disable=SC1091
        . bench/gpu/setup-deps.sh >"$L/deps.log" 2>&1 ||
            log "deps: a REQUIRED library is missing (cJSON, OpenBLAS or cc): the build will fail"
        sed 's/^/deps: /' "$L/deps.log" | tee -a "$OUT/check.log"
    fi
}
find_deps # every stage needs them (the build, the binaries' libraries, mpirun for e2e_host)

if want build; then
    t=$(date +%s)
    log "build: make -k -j$JOBS (log: build.log)"
    if tmo 240 make -k -j"$JOBS" >"$L/build.log" 2>&1; then
        log "build ok in $(($(date +%s) - t)) s: $(grep -m1 'CUDA ' "$L/build.log" | sed 's/^ *//')"
        status build ok $(($(date +%s) - t)) "$(grep -m1 'CUDA ' "$L/build.log" | sed 's/^ *//')"
    else
        rc=$?
        log "BUILD FAILED (exit $rc; 124 = out of time); first errors:"
        grep -m12 -E 'error|Error|undefined reference|No such file' "$L/build.log" | tee -a "$OUT/check.log"
        status build FAILED $(($(date +%s) - t)) "make exit $rc"
        fail=1
    fi
    grep -m1 'CUDA ' "$L/build.log" | grep -q 'CUDA yes' ||
        log "build: the Makefile found no CUDA: $(grep -m1 'CUDA ' "$L/build.log")"
fi

# ---------------------------------------------------------------------------------------------
# tests: each prints PASS/FAIL lines; the CUDA test prints the worst error/tolerance per case
run_test() { # run_test NAME CAP [ARGS...]
    local t=$1 c=$2 s rc p f
    shift 2
    s=$(date +%s)
    if [ ! -x "build/tests/$t" ]; then
        log "test $t: NOT BUILT"
        status "test:$t" FAILED 0 "not built"
        fail=1
        return
    fi
    tmo "$c" "build/tests/$t" "$@" >"$L/test_$t.log" 2>&1
    rc=$?
    if [ "$rc" -eq 125 ]; then # (124, a test cut off, is a failure: a hang is a bug)
        log "test $t: not started, out of budget"
        status "test:$t" timeout 0 "not started: out of budget"
        return
    fi
    p=$(grep -c '^PASS' "$L/test_$t.log")
    f=$(grep -c '^FAIL' "$L/test_$t.log")
    if grep -q '(skipped' "$L/test_$t.log"; then
        log "test $t SKIPPED: $(grep -m1 '(skipped' "$L/test_$t.log")"
        if [ "$HAVE_GPU" = 1 ]; then
            status "test:$t" FAILED $(($(date +%s) - s)) "skipped on a GPU machine"
            fail=1
        else
            status "test:$t" no-gpu $(($(date +%s) - s)) "skipped: no GPU"
        fi
        return
    fi
    log "test $t: exit $rc, $p passed, $f failed, $(($(date +%s) - s)) s"
    if [ "$rc" -ne 0 ] || [ "$f" -ne 0 ]; then
        fail=1
        status "test:$t" FAILED $(($(date +%s) - s)) "exit $rc, $f failed$([ "$rc" = 124 ] && echo ', out of time')"
        grep -A4 '^FAIL\|rror' "$L/test_$t.log" | head -30 | tee -a "$OUT/check.log"
        # an asynchronous kernel fault names the sync, not the kernel: rerun with blocking
        # launches so the launch that faulted reports it (and every later call its own state)
        if grep -qi 'illegal\|misaligned\|launch failure\|exception' "$L/test_$t.log"; then
            CUDA_LAUNCH_BLOCKING=1 tmo 60 "build/tests/$t" "$@" >"$L/test_${t}_blocking.log" 2>&1
            log "test $t rerun with CUDA_LAUNCH_BLOCKING=1: first error:"
            grep -m3 -A3 '^FAIL' "$L/test_${t}_blocking.log" | tee -a "$OUT/check.log"
        fi
    else
        status "test:$t" ok $(($(date +%s) - s)) "$p passed"
    fi
}
if want tests; then
    run_test kernels_test_attention_cuda 120
    grep '^  \|^CUDA device' "$L/test_kernels_test_attention_cuda.log" 2>/dev/null | head -40 >>"$OUT/check.log"
    run_test comm_test_comm_nccl_cuda 60
    run_test kernels_test_attention 90
fi

# ---------------------------------------------------------------------------------------------
# memcheck: out-of-bounds / misaligned accesses and shared-memory races on small problems
if want memcheck; then
    s=$(date +%s)
    CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
    T=build/tests/kernels_test_attention_cuda
    if [ "$HAVE_GPU" = 0 ]; then
        log "memcheck skipped: no GPU"
        status memcheck no-gpu 0 "skipped: no GPU"
    elif [ -z "$CS" ] || [ ! -x "$T" ]; then
        log "memcheck skipped: ${CS:+}$([ -z "$CS" ] && echo 'compute-sanitizer not found')$([ -x "$T" ] || echo " $T not built")"
        status memcheck skipped 0 "no compute-sanitizer or test binary"
    else
        # every kernel (tensor-core fwd/bwd at D 64/128, simple, merge, copies, convert), small
        tmo 120 "$CS" --tool memcheck --error-exitcode 86 --print-limit 20 "$T" \
            mixed_slices_match_reference split_keys_merge_equals_whole merge_matches_cpu \
            pack_unpack_heads convert_rounds_like_the_host >"$L/memcheck.log" 2>&1
        rc=$?
        e=$(grep -m1 'ERROR SUMMARY' "$L/memcheck.log")
        log "memcheck: exit $rc; ${e:-no summary}"
        if timed_out "$rc"; then
            status memcheck timeout $(($(date +%s) - s)) "$(why_out "$rc"): inconclusive"
        elif [ "$rc" -ne 0 ]; then
            fail=1
            status memcheck FAILED $(($(date +%s) - s)) "exit $rc; $e"
            grep -m20 -B2 -A8 'Invalid\|Error\|FAIL' "$L/memcheck.log" | head -40 | tee -a "$OUT/check.log"
        else
            status memcheck ok $(($(date +%s) - s)) "$e"
        fi
        # racecheck: shared-memory hazards of the tensor-core kernels (cp.async double buffers).
        # Advisory: a hazard it reports is listed (status warn), it does not fail the check; a
        # real race would also show as wrong or non-deterministic results in the tests.
        s=$(date +%s)
        tmo 60 "$CS" --tool racecheck --error-exitcode 86 --print-limit 10 "$T" \
            split_keys_merge_equals_whole >"$L/racecheck.log" 2>&1
        rc=$?
        r=$(grep -m1 'RACECHECK SUMMARY\|ERROR SUMMARY' "$L/racecheck.log")
        log "racecheck (advisory): exit $rc; ${r:-no summary}"
        if [ "$rc" -eq 0 ]; then
            status racecheck ok $(($(date +%s) - s)) "$r"
        else
            status racecheck warn $(($(date +%s) - s)) "exit $rc$([ $rc = 124 ] && echo ': out of time'); $r (advisory)"
            grep -m20 -A6 'hazard\|Race\|ERROR' "$L/racecheck.log" | head -30 >>"$OUT/check.log"
        fi
    fi
fi

# ---------------------------------------------------------------------------------------------
# bench: our kernels on the paper's shapes (exit 3: tensor cores disagree with the simple kernel)
if want bench; then
    s=$(date +%s)
    if [ ! -x build/bin/bench_attn_cuda ]; then
        log "bench_attn_cuda: NOT BUILT"
        status bench FAILED 0 "not built"
        fail=1
    else
        log "bench_attn_cuda (log: attn_cuda.txt)"
        tmo 150 build/bin/bench_attn_cuda --json "$L/attn_cuda.json" --shapes "$L/shapes.json" \
            >"$L/attn_cuda.txt" 2>&1
        rc=$?
        tee -a "$OUT/check.log" <"$L/attn_cuda.txt" >/dev/null
        case $rc in
        0) status bench ok $(($(date +%s) - s)) "" ;;
        2) status bench no-gpu $(($(date +%s) - s)) "$(tail -1 "$L/attn_cuda.txt")" ;;
        124 | 125) status bench timeout $(($(date +%s) - s)) "$(why_out "$rc")" ;;
        *)
            fail=1
            status bench FAILED $(($(date +%s) - s)) "exit $rc$([ $rc = 124 ] && echo ': out of time')$([ $rc = 3 ] && echo ': tensor cores disagree with the simple kernel')"
            ;;
        esac
        log "bench_attn_cuda: exit $rc"
    fi
fi

# torch baselines on the same shapes (the shapes file comes from bench_attn_cuda)
if want torch; then
    s=$(date +%s)
    if [ ! -s "$L/shapes.json" ] && [ -x build/bin/bench_attn_cuda ]; then
        build/bin/bench_attn_cuda --shapes-only "$L/shapes.json" >/dev/null 2>&1
    fi
    if [ "$HAVE_GPU" = 0 ]; then
        log "attn_torch.py skipped: no GPU"
        status torch no-gpu 0 "skipped: no GPU"
    elif [ ! -s "$L/shapes.json" ] || ! command -v "$PY" >/dev/null 2>&1; then
        log "attn_torch.py skipped (no shapes file or no $PY)"
        status torch skipped 0 "no shapes file or no $PY"
    else
        log "attn_torch.py with $PY (log: attn_torch.log)"
        PYTHONUNBUFFERED=1 tmo 120 "$PY" bench/gpu/attn_torch.py --shapes "$L/shapes.json" \
            >"$L/attn_torch.json" 2>"$L/attn_torch.log"
        rc=$?
        log "attn_torch.py: exit $rc; $(head -c 300 "$L/attn_torch.json")"
        if [ "$rc" -eq 0 ]; then
            status torch ok $(($(date +%s) - s)) ""
        elif timed_out "$rc"; then
            status torch timeout $(($(date +%s) - s)) "$(why_out "$rc")"
        else
            status torch FAILED $(($(date +%s) - s)) "exit $rc (a baseline; not a test)"
            fail=1
        fi
    fi
fi

# NCCL communicator memory
if want nccl; then
    s=$(date +%s)
    if [ ! -x build/bin/bench_nccl_mem_cuda ]; then
        log "bench_nccl_mem_cuda: NOT BUILT"
        status nccl FAILED 0 "not built"
        fail=1
    else
        log "bench_nccl_mem_cuda"
        tmo 60 build/bin/bench_nccl_mem_cuda --json "$L/nccl_mem.json" >"$L/nccl_mem.txt" 2>&1
        rc=$?
        tee -a "$OUT/check.log" <"$L/nccl_mem.txt" >/dev/null
        log "bench_nccl_mem_cuda: exit $rc"
        case $rc in
        0) status nccl ok $(($(date +%s) - s)) "" ;;
        2) status nccl no-gpu $(($(date +%s) - s)) "$(tail -1 "$L/nccl_mem.txt")" ;;
        124 | 125) status nccl timeout $(($(date +%s) - s)) "$(why_out "$rc")" ;;
        *)
            fail=1
            status nccl FAILED $(($(date +%s) - s)) "exit $rc"
            ;;
        esac
    fi
fi

# ---------------------------------------------------------------------------------------------
# the stage scripts: bench/gpu/NAME.sh, OUT and BUDGET in the environment
extras=()
for st in $STAGES; do
    case " $OWN_STAGES " in *" $st "*) continue ;; esac
    extras+=("$st")
done
# BUDGET_<stage>=seconds gives a stage that much (at most what is left) and keeps it from the
# stages before it; the others share what is left evenly (what one leaves flows to the next)
fixed_of() { local v=BUDGET_$1; echo "${!v:-}"; }
for st in "${extras[@]}"; do
    s=$(date +%s)
    sh=bench/gpu/$st.sh
    later_fixed=0 n_free=0 seen=0
    for o in "${extras[@]}"; do
        [ "$o" = "$st" ] && seen=1 && continue
        [ $seen = 1 ] || continue
        [ -f "bench/gpu/$o.sh" ] || continue
        if [ -n "$(fixed_of "$o")" ]; then later_fixed=$((later_fixed + $(fixed_of "$o")))
        else n_free=$((n_free + 1)); fi
    done
    if [ -n "$(fixed_of "$st")" ]; then
        share=$(cap "$(fixed_of "$st")")
    else
        share=$((($(left) - later_fixed) / (n_free + 1)))
    fi
    if [ ! -f "$sh" ]; then
        log "stage $st: $sh not present (skipped)"
        status "$st" skipped 0 "$sh not present"
        continue
    fi
    if [ "$share" -lt 20 ]; then
        log "stage $st: SKIPPED, only ${share}s of the budget left for it"
        status "$st" timeout 0 "not started: out of budget (${share}s left)"
        continue
    fi
    mkdir -p "$L/stage-$st"
    log "stage $st: OUT=logs/stage-$st BUDGET=$((share - 5)) (timeout ${share}s)"
    OUT="$L/stage-$st" BUDGET=$((share - 5)) JOBS="$JOBS" PYTHON="$PY" HAVE_GPU="$HAVE_GPU" \
        tmo "$share" bash "$sh" >"$L/stage-$st.log" 2>&1
    rc=$?
    log "stage $st: exit $rc in $(($(date +%s) - s)) s$([ $rc = 124 ] && echo ' (out of time)')"
    tail -5 "$L/stage-$st.log" | sed 's/^/    /' | tee -a "$OUT/check.log"
    if [ "$rc" -eq 0 ]; then
        status "$st" ok $(($(date +%s) - s)) ""
    else
        fail=1
        status "$st" FAILED $(($(date +%s) - s)) "exit $rc$([ $rc = 124 ] && echo ': out of time')"
    fi
done

# ---------------------------------------------------------------------------------------------
# summary: results.md, results.json; the logs as one archive (the GPU tool returns <= 8 files)
if [ "$fail" -ne 0 ]; then
    verdict=FAILED
elif [ "$HAVE_GPU" = 0 ]; then
    verdict=NO-GPU
elif [ "$incomplete" -ne 0 ]; then
    verdict=INCOMPLETE
else
    verdict=PASSED
fi
OUT="$OUT" L="$L" VERDICT="$verdict" GPU="${GPU:-none}" ELAPSED=$(($(date +%s) - T0)) \
    timeout 20 "$PY" bench/gpu/summary.py 2>&1 | tee -a "$OUT/check.log" ||
    log "summary.py failed (python: $PY)"
tar -C "$WORK" -czf "$OUT/logs.tar.gz" logs 2>/dev/null ||
    log "could not write logs.tar.gz"
if [ "$(stat -c %s "$OUT/logs.tar.gz" 2>/dev/null || echo 0)" -gt 15000000 ]; then
    log "logs.tar.gz over 15 MB: keeping only *.log, *.txt, *.json, *.md"
    (cd "$WORK" && find logs -type f \( -name '*.log' -o -name '*.txt' -o -name '*.json' -o -name '*.md' -o -name '*.tsv' \) -size -2M -print0 |
        tar --null -czf "$OUT/logs.tar.gz" -T -)
fi
log "done in $(($(date +%s) - T0)) s: $verdict$([ "$verdict" = NO-GPU ] && echo ' (no GPU visible: the GPU tests and benchmarks were SKIPPED, not run)')"
rm -rf "$WORK"
case $verdict in PASSED) exit 0 ;; NO-GPU) exit 2 ;; INCOMPLETE) exit 3 ;; *) exit 1 ;; esac
