#!/bin/bash
# run.sh BUNDLE OUTDIR [STEP ...] — runs zellige's CPU checks and benchmarks on another x86-64
# machine from a bundle made by bench/remote/pack.sh, from the repository root (the model and
# the torch helper are read from the tree). Steps run in the order given (default: all, in
# this order, most important first); ZG_REMOTE_BUDGET_S (default 520) bounds the whole run:
# every command gets at most the time left, so a slow step cannot eat the rest's.
#   machine   CPU, memory, load, GPU names                       -> OUTDIR/machine.txt
#   tests     kernel/engine/DiT tests (every ISA the CPU has) + MPI engine check
#                                                                 -> OUTDIR/tests.log
#   fid2      profile (hybrid) + fidelity, 2 ranks pinned to cores -> OUTDIR/fid2.log,
#             prof2.json, fid2.json
#   bench2    zellige bench attention --json, 2 threads, torch beside it -> OUTDIR/bench.jsonl
#   fid2b     the same fidelity again (repeatability)             -> OUTDIR/fid2.log
#   benchall  the benchmark with all threads, widest ISA and AVX2  -> OUTDIR/bench.jsonl
#   planner   bench_planner_latency at 8/16/32 ranks              -> OUTDIR/extra.log
#   e2e4      bench/e2e.sh on 4 pinned ranks (not in the default list) -> OUTDIR/extra.log
# At most 8 files are written to OUTDIR.
set -u
B=$(readlink -f "${1:?usage: run.sh BUNDLE OUTDIR [STEP ...]}")
O=$(mkdir -p "${2:?usage: run.sh BUNDLE OUTDIR}" && readlink -f "$2")
shift 2
steps=${*:-machine tests fid2 bench2 fid2b benchall planner}
R=/tmp/zg-remote
log() { echo "[$(date +%T)] $*" | tee -a "$O/run.log"; }

# the bundle's libraries and Open MPI on the paths, OPENBLAS_CORETYPE (bench/remote/env.sh)
# shellcheck source=bench/remote/env.sh
. "$(dirname "$0")/env.sh"
ZG_REMOTE_DIR=$R zg_remote_env "$B" || { log "cannot unpack the bundle $B"; exit 2; }
PROF_REPS=${PROF_REPS:-5} FID_REPS=${FID_REPS:-7}
Z="$B/bin/zellige"
NCPU=$(nproc)
MPIRUN="mpirun --bind-to core --map-by core"

DEADLINE=$(( $(date +%s) + ${ZG_REMOTE_BUDGET_S:-520} ))
# lim CAP: seconds a command may take: CAP, or what is left of the budget if less.
lim() { local l=$(( DEADLINE - $(date +%s) )); [ "$l" -lt "$1" ] && echo $(( l > 1 ? l : 1 )) || echo "$1"; }
bench() {  # bench ISA THREADS
    ZG_KERNELS_ISA=$1 timeout "$(lim 300)" "$Z" bench attention --json --threads "$2" \
        --python python3 --torch-script tools/zellige/bench_attention_torch.py \
        2>>"$O/run.log" | sed "s/^{/{\"threads_req\":$2,\"isa_req\":\"$1\",/" >> "$O/bench.jsonl"
}

for s in $steps; do
    [ "$(( DEADLINE - $(date +%s) ))" -gt 5 ] || { log "out of time before step $s"; break; }
    log "step $s: $(uptime)"
    case $s in
    machine)
        { uname -a; nproc; lscpu; free -g; uptime; cat "$B/COMMIT";
          nvidia-smi -L 2>&1 | head -2; python3 -c 'import torch; print("torch", torch.__version__)' 2>&1; } \
            > "$O/machine.txt" 2>&1 ;;
    tests)
        for t in "$B"/bin/*_test_*; do
            echo "== $(basename "$t")"
            timeout "$(lim 120)" "$t" 2>&1 | grep -v '^PASS' | tail -40
            echo "rc=${PIPESTATUS[0]}"
        done > "$O/tests.log" 2>&1
        { echo "== mpirun -np 4 zellige check-engine";
          timeout "$(lim 60)" $MPIRUN -np 4 "$Z" check-engine --random-plans 20 --seed 2 --json 2>&1 | tail -5;
        } >> "$O/tests.log" ;;
    fid2)
        { timeout "$(lim 240)" $MPIRUN -np 2 "$Z" profile --model configs/cpu-small.json \
              --out "$O/prof2.json" --reps "$PROF_REPS" --method hybrid 2>&1 | tail -15
          timeout "$(lim 200)" $MPIRUN -np 2 "$Z" fidelity --profile "$O/prof2.json" --reps "$FID_REPS" \
              --out "$O/fid2.json" 2>&1 | tail -40
        } >> "$O/fid2.log" 2>&1 ;;
    fid2b)
        { echo "rerun:"
          timeout "$(lim 200)" $MPIRUN -np 2 "$Z" fidelity --profile "$O/prof2.json" --reps "$FID_REPS" --json 2>&1 | tail -3
        } >> "$O/fid2.log" 2>&1 ;;
    bench2) bench avx512 2 ;;
    benchall) bench avx512 "$NCPU"; bench avx2 "$NCPU" ;;
    planner)
        [ -x "$B/bin/bench_planner_latency" ] || { log "no planner bench in the bundle (it links CBC)"; continue; }
        timeout "$(lim 200)" "$B/bin/bench_planner_latency" --clusters 8xA800,16xA800,32xA6000 --steps 5 \
            >> "$O/extra.log" 2>&1 ;;
    e2e4)
        ZELLIGE="$Z" NP=4 STEPS=6 timeout "$(lim 400)" bench/e2e.sh "$R/e2e4" >> "$O/extra.log" 2>&1 ;;
    *) log "unknown step $s" ;;
    esac
    log "step $s done"
done
log "all done: $(uptime)"
