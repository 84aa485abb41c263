#!/usr/bin/env bash
# bench/gpu/e2e_host.sh — issue 29's end-to-end measurement on the CPU cores of the GPU
# machine's host (16 cores): bench/e2e.sh at 8 then 16 MPI ranks, one rank pinned per core,
# zellige vs knapformer vs usp vs dp training the C DiT (configs/cpu-small.json) on the paper's
# mixes (`zellige train --mix`), every sequence's tokens divided by DIVISOR so a step takes about
# a second: measured median step time per policy, the profile's prediction for the same
# batches, the measured speedup of zellige over each baseline and over the best one.
#
#   OUT=dir BUDGET=240 bench/gpu/e2e_host.sh            (repository root; exit 0 on success)
#
# Paper settings: 8 ranks with 10 s videos, 16 ranks with 15 s videos, 350K tokens per rank
# (LOAD), divided by DIVISOR (default 256: a 1080p 15 s video of 497,760 tokens becomes 1,944).
# Per NP: one profile of that NP's buckets (`zellige profile --catalog mix:VSEC:DIVISOR`,
# PROFILE_ARGS, default one measured round of the single method, no warm-up round (the
# profiler still runs its largest item and the empty plan once, unmeasured, first): the budget
# allows no more at 16 ranks, and the hybrid method's correction fitted on one noisy round can be
# degenerate and price the mixes' tiny images 0 s, which zellige then piles on one rank —
# docs/results.md §7), then bench/e2e.sh for the first mix of MIXES and, while the budget allows, the
# next ones (same profile). NP=16 is skipped, with a line saying so, when less than NEED16 s
# are left. Ranks are pinned only when NP <= cores; otherwise the run is OVERSUBSCRIBED, says
# so in every output, and is not the issue's measurement.
#
# Binaries: ZELLIGE (default build/bin/zellige) when it was linked with MPI and mpirun is on
# PATH — on the GPU machine, check.sh's build with the OpenMPI that bench/gpu/setup-deps.sh
# supplies (sourced here too when check.sh did not, i.e. ZGDEPS_PREFIX is unset); else BUNDLE (default .dev when it exists), a bundle from bench/remote/pack.sh (binaries
# + libraries + Open MPI 5) for a host without MPI, such as the GPU image (docs/remote.md):
#   make BUILD=build-host NO_CBC=1 NO_CUDA=1 build-host/bin/zellige
#   bench/remote/pack.sh build-host .dev          # here; then carry .dev with the tree
# Writes $OUT/e2e-np8/, $OUT/e2e-np16/ (profile, one folder per mix with e2e.sh's files, logs),
# $OUT/summary.md (the tables; check.sh appends it to its results.md) and $OUT/e2e_host.json.
# Knobs: NPS ("8 16"), MIXES ("V50 V35 V60"), STEPS (3: the first is warm-up), DIVISOR, LOAD,
# MODEL, PROFILE_ARGS, NEED16 (100).
set -u
OUT=${OUT:-./gpu-out}
BUDGET=${BUDGET:-240}
NPS=${NPS:-8 16}
MIXES=${MIXES:-V50 V35 V60}
STEPS=${STEPS:-3}
DIVISOR=${DIVISOR:-256}
LOAD=${LOAD:-350K}
MODEL=${MODEL:-configs/cpu-small.json}
PROFILE_ARGS=${PROFILE_ARGS:---method single --reps 1 --warmup 0}
NEED16=${NEED16:-100}
HERE=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
T0=$(date +%s)
LOG=$OUT/e2e_host.log
: > "$LOG"
log() { echo "[e2e_host +$(($(date +%s) - T0))s] $*" | tee -a "$LOG"; }
left() { echo $((BUDGET - ($(date +%s) - T0))); }

cd "$HERE" || exit 2
if [ -z "${ZGDEPS_PREFIX:-}" ] && [ -z "${BUNDLE:-}" ] && [ -f .gpudeps/MANIFEST ]; then
    # shellcheck source=bench/gpu/setup-deps.sh
    . bench/gpu/setup-deps.sh > "$OUT/deps.log" 2>&1 || log "setup-deps: $(tail -1 "$OUT/deps.log")"
fi
# shellcheck source=bench/remote/env.sh
. bench/remote/env.sh
Z=${ZELLIGE:-build/bin/zellige}
if [ -z "${BUNDLE:-}" ] && { ! command -v mpirun >/dev/null 2>&1 || ! ldd "$Z" 2>/dev/null | grep -q libmpi; }; then
    if [ -x .dev/bin/zellige ]; then
        BUNDLE=.dev
        log "no MPI build here ($Z without libmpi, or no mpirun): using the carried bundle .dev"
    else
        log "FAILED: no MPI here ($Z not linked with MPI, or no mpirun) and no bundle: make one" \
            "(make BUILD=build-host NO_CBC=1 NO_CUDA=1 build-host/bin/zellige &&" \
            "bench/remote/pack.sh build-host .dev) and carry .dev"
        exit 2
    fi
fi
if [ -n "${BUNDLE:-}" ]; then
    zg_remote_env "$BUNDLE" || { log "FAILED: cannot use the bundle $BUNDLE"; exit 2; }
    Z=$ZG_BUNDLE_BIN/zellige
else
    zg_openblas_coretype
fi
Z=$(readlink -f "$Z" 2>/dev/null || echo "$Z")
if ! command -v mpirun >/dev/null 2>&1; then
    log "FAILED: no mpirun on PATH; give BUNDLE=.dev (bench/remote/pack.sh) on a host without MPI"
    exit 2
fi
if ! "$Z" --help >/dev/null 2>&1; then
    log "FAILED: $Z does not run here ($("$Z" --help 2>&1 | head -1)); build it or give BUNDLE"
    exit 2
fi
CORES=$(nproc)
log "host: $CORES cores, $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'); $(uptime)"
log "zellige: $Z; mpirun: $(command -v mpirun) ($(mpirun --version 2>&1 | head -1)); OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}"
log "settings: NPS '$NPS', MIXES '$MIXES', STEPS $STEPS, LOAD $LOAD / DIVISOR $DIVISOR, model $MODEL, profile '$PROFILE_ARGS', budget ${BUDGET}s"

fail=0
for np in $NPS; do
    vsec=$([ "$np" -le 8 ] && echo 10 || echo 15)
    dir=$OUT/e2e-np$np
    mkdir -p "$dir"
    if [ "$np" -le "$CORES" ]; then
        mode=pinned
        log "NP=$np: $np ranks pinned one per core ($CORES cores), ${vsec} s videos"
    else
        mode=oversubscribed
        log "NP=$np: OVERSUBSCRIBED: $np ranks on $CORES cores, unpinned; these numbers are NOT the issue's measurement (it needs >= $np cores)"
    fi
    echo "$mode $np $CORES" > "$dir/mode.txt"
    # the largest NP needs NEED16 s; a smaller one leaves that much for it
    reserve=0
    for n2 in $NPS; do [ "$n2" -gt "$np" ] && reserve=$NEED16; done
    if [ "$np" -ge 16 ] && [ "$(left)" -lt "$NEED16" ]; then
        log "NP=$np SKIPPED: $(left) s left of the ${BUDGET} s budget, NP=$np needs about ${NEED16} s (raise BUDGET)"
        echo "skipped: $(left) s left, needs ${NEED16} s" > "$dir/skipped.txt"
        continue
    fi
    last=0
    first=1
    for mix in $MIXES; do
        avail=$(($(left) - reserve))
        if [ "$first" -eq 0 ] && [ "$avail" -lt $((last * 13 / 10 + 5)) ]; then
            log "NP=$np $mix skipped: $(left) s left, $reserve s of them kept for the larger NP, the last mix took $last s"
            continue
        fi
        [ "$avail" -lt 20 ] && avail=20
        t=$(date +%s)
        log "NP=$np $mix: bench/e2e.sh (timeout ${avail}s; log $dir/$mix.log)"
        MIX=$mix VSEC=$vsec LOAD=$LOAD DIVISOR=$DIVISOR NP=$np STEPS=$STEPS MODEL=$MODEL \
            ZELLIGE=$Z PROFILE=$dir/profile.json PROFILE_ARGS="$PROFILE_ARGS" BIG_CLUSTER="" \
            timeout "$avail" bench/e2e.sh "$dir/$mix" > "$dir/$mix.log" 2>&1
        rc=$?
        last=$(($(date +%s) - t))
        [ "$first" -eq 1 ] && [ -f "$dir/$mix/phases.txt" ] &&
            log "NP=$np phases: $(tr '\n' ' ' < "$dir/$mix/phases.txt")"
        if [ "$rc" -ne 0 ]; then
            log "NP=$np $mix FAILED (exit $rc$([ $rc -eq 124 ] && echo ': out of time')) after $last s; last lines:"
            tail -5 "$dir/$mix.log" | tee -a "$LOG"
            fail=1
        else
            log "NP=$np $mix done in $last s: $(grep -m1 '^zellige' "$dir/$mix.log")"
        fi
        first=0
    done
done

OUT="$OUT" DIVISOR="$DIVISOR" LOAD="$LOAD" STEPS="$STEPS" python3 - <<'PY' 2>&1 | tee -a "$LOG"
import glob, json, os
out = os.environ["OUT"]
BASE = ("knapformer", "usp", "dp")
def summ(path):
    if not os.path.exists(path):
        return {}
    return {d["policy"]: d for d in map(json.loads, open(path)) if d.get("summary")}
res = {"divisor": int(os.environ["DIVISOR"]), "load": os.environ["LOAD"],
       "steps": int(os.environ["STEPS"]), "runs": []}
L = ["### End to end on the host CPUs (bench/gpu/e2e_host.sh)", "",
     f"C DiT configs/cpu-small.json, the paper's mixes at {os.environ['LOAD']} tokens per rank "
     f"with every sequence's tokens / {os.environ['DIVISOR']}, {os.environ['STEPS']} steps per "
     "policy (first excluded), median step of the slowest rank; predicted = the NP-rank "
     "profile's makespan + host overhead for the same batches. Speedup = baseline time / "
     "zellige time.", ""]
for d in sorted(glob.glob(f"{out}/e2e-np*"), key=lambda p: int(p.rsplit("np", 1)[1])):
    np_ = int(d.rsplit("np", 1)[1])
    mode = open(f"{d}/mode.txt").read().split()[0] if os.path.exists(f"{d}/mode.txt") else "?"
    if os.path.exists(f"{d}/skipped.txt"):
        L += [f"#### {np_} ranks: skipped ({open(f'{d}/skipped.txt').read().strip()})", ""]
        res["runs"].append({"ranks": np_, "skipped": True})
        continue
    for m in sorted(p for p in os.listdir(d) if os.path.isdir(os.path.join(d, p))):
        meas, mod = summ(f"{d}/{m}/measured.jsonl"), summ(f"{d}/{m}/modelled.jsonl")
        head = f"#### {np_} ranks, {m} ({mode}{'' if mode == 'pinned' else ': NOT the issue measurement'})"
        if "zellige" not in meas or "zellige" not in mod:
            L += [head, "", "no result (failed or out of time: see the log)", ""]
            res["runs"].append({"ranks": np_, "mix": m, "mode": mode, "complete": False})
            continue
        losses = {}
        for x in map(json.loads, open(f"{d}/{m}/measured.jsonl")):
            if not x.get("summary"):
                losses.setdefault(x["step"], []).append(x["loss"])
        same = all(max(v) - min(v) <= 1e-5 * max(1.0, abs(max(v))) for v in losses.values())
        z, zp = meas["zellige"]["median_step_s"], mod["zellige"]["median_predicted_s"]
        L += [head, "", "| policy | measured step s | predicted s | measured speedup of zellige "
              "| predicted speedup |", "|---|---|---|---|---|"]
        r = {"ranks": np_, "mix": m, "mode": mode, "complete": True, "same_loss": same,
             "policies": {}}
        for p in ("zellige",) + BASE:
            if p not in meas:
                continue
            t, pr = meas[p]["median_step_s"], mod[p]["median_predicted_s"]
            sp = "—" if p == "zellige" else f"{t / z:.3f}x"
            pp = "—" if p == "zellige" else f"{pr / zp:.3f}x"
            L.append(f"| {p} | {t:.3f} | {pr:.3f} | {sp} | {pp} |")
            r["policies"][p] = {"measured_s": t, "predicted_s": pr, "speedup": t / z,
                                "predicted_speedup": pr / zp}
        have = [p for p in BASE if p in meas]
        if have:
            best = min(have, key=lambda p: meas[p]["median_step_s"])
            bt = meas[best]["median_step_s"]
            L.append(f"| best baseline ({best}) | {bt:.3f} | | {bt / z:.3f}x | |")
            r["best_baseline"], r["speedup_vs_best"] = best, bt / z
        L += ["", f"losses equal across policies at every step: {same}; "
              f"load: {' / '.join(l.strip() for l in open(f'{d}/{m}/load.txt'))}", ""]
        res["runs"].append(r)
with open(f"{out}/summary.md", "w") as f:
    f.write("\n".join(L) + "\n")
with open(f"{out}/e2e_host.json", "w") as f:
    json.dump(res, f, indent=1)
print("\n".join(L))
PY
log "done in $(($(date +%s) - T0)) s; $([ $fail -eq 0 ] && echo 'every run finished' || echo 'SOMETHING FAILED: see above')"
exit $fail
