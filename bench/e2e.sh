#!/usr/bin/env bash
# e2e.sh — end-to-end benchmark of placement policies on real ranks, plus the modelled
# comparison with the same measured prices.
#
#   BUILD=build NP=2 MODEL=configs/cpu-small.json STEPS=8 bench/e2e.sh [OUTDIR]
#
# 1. Profiles the model on NP ranks (zellige profile, default method: mixed calibration plans;
#    PROFILE_ARGS adds options), unless OUTDIR/profile-npNP.json exists. Ranks are pinned to
#    cores (--bind-to core) when NP <= cores, and run unpinned and oversubscribed otherwise.
# 2. Measured: `zellige train --policy zellige,knapformer,usp,dp --profile ...` on NP real
#    ranks: every step's batch (synthetic image+video mix) runs under each policy in turn, each
#    with its own trainer (same seed, so losses must agree); median step time per policy,
#    first step excluded. Ratios are measured in the same run (the machine is shared: absolute
#    times are noisy, ratios less so).
# 3. Modelled: the same batches planned with --plan-only on cpu:NP with the same profile
#    (predicted makespan + host overhead). With NP_BIG=N (> NP) it also profiles on N ranks
#    (oversubscribed if N exceeds the cores: the prices then describe that oversubscribed
#    machine) and plans NP_BIG-rank batches with it: the largest "cluster" this machine can
#    price from measurements. Degrees above the profiled world size cannot be priced from a
#    measured table (the table pricer refuses unmeasured configurations).
# 4. Cluster scale: BIG_CLUSTER (default cpu:16) planned with the NP-rank profile and
#    --max-degree NP (only measured degrees), TPR tokens per rank: the modelled comparison at a
#    scale this machine cannot run (zellige, knapformer, dp; usp always uses all ranks).
# Batches: the synthetic image+video mix (TPR tokens per rank, SHARE video share), or with
# MIX=V50 (any of V35..V60) the paper's mix at LOAD tokens per rank (default 350K) with VSEC-s
# videos (default 15) and every sequence's tokens divided by DIVISOR (default 256): `train
# --mix`. The profile then measures exactly those buckets (--catalog mix:VSEC:DIVISOR).
# PROFILE=FILE uses (or writes) that profile instead of OUTDIR/profile-npNP.json, so several
# mixes can share one; BIG_CLUSTER= (empty) skips step 4.
# Prints a table and one JSON line.
set -euo pipefail
BUILD=${BUILD:-build}
NP=${NP:-2}
MODEL=${MODEL:-configs/cpu-small.json}
STEPS=${STEPS:-8}
TPR=${TPR:-512}
SHARE=${SHARE:-0.5}
NP_BIG=${NP_BIG:-0}
BIG_CLUSTER=${BIG_CLUSTER-cpu:16}
PROFILE_ARGS=${PROFILE_ARGS:-}
MIX=${MIX:-}
LOAD=${LOAD:-350K}
VSEC=${VSEC:-15}
DIVISOR=${DIVISOR:-256}
OUT=${1:-${BUILD}/e2e}
Z=${ZELLIGE:-$BUILD/bin/zellige}
CORES=$(nproc)
mpi() {  # mpi NP args...: pinned when the ranks fit the cores
    local n=$1; shift
    if [ "$n" -le "$CORES" ]; then
        mpirun --allow-run-as-root --bind-to core --map-by core -np "$n" "$@"
    else
        mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$n" "$@"
    fi
}
POL=zellige,knapformer,usp,dp
if [ -n "$MIX" ]; then
    BATCH=(--mix "$MIX" --mix-load "$LOAD" --video-seconds "$VSEC" --mix-divisor "$DIVISOR")
    CATALOG=(--catalog "mix:$VSEC:$DIVISOR")
else
    BATCH=(--tokens-per-rank "$TPR" --video-share "$SHARE")
    CATALOG=()
fi
mkdir -p "$OUT"

prof=${PROFILE:-$OUT/profile-np$NP.json}
uptime > "$OUT/load.txt"
T=$(date +%s.%N)
phase() {  # phase NAME: seconds since the last phase, into OUT/phases.txt
    local now
    now=$(date +%s.%N)
    awk -v a="$now" -v b="$T" -v n="$1" 'BEGIN { printf "%s %.1f\n", n, a - b }' >> "$OUT/phases.txt"
    T=$now
}
: > "$OUT/phases.txt"
# shellcheck disable=SC2086
if [ ! -f "$prof" ]; then
    mpi "$NP" "$Z" profile --model "$MODEL" --out "$prof" --quiet "${CATALOG[@]}" $PROFILE_ARGS
    phase profile
fi

mpi "$NP" "$Z" train --model "$MODEL" --policy $POL --profile "$prof" \
    --steps "$STEPS" "${BATCH[@]}" --json > "$OUT/measured.jsonl"
phase train
"$Z" train --model "$MODEL" --policy $POL --profile "$prof" --cluster "cpu:$NP" --plan-only \
    --steps "$STEPS" "${BATCH[@]}" --json > "$OUT/modelled.jsonl"
phase plan-only
if [ "$NP_BIG" -gt "$NP" ]; then
    big=$OUT/profile-np$NP_BIG.json
    # shellcheck disable=SC2086
    [ -f "$big" ] || mpi "$NP_BIG" "$Z" profile --model "$MODEL" --out "$big" --quiet \
        "${CATALOG[@]}" $PROFILE_ARGS
    "$Z" train --model "$MODEL" --policy $POL --profile "$big" --cluster "cpu:$NP_BIG" \
        --plan-only --steps "$STEPS" "${BATCH[@]}" --json > "$OUT/modelled-big.jsonl"
fi

# usp splits every sequence over all ranks (it ignores --max-degree), so a measured NP-rank
# table cannot price it on BIG_CLUSTER: it is left out there
if [ -n "$BIG_CLUSTER" ]; then
    "$Z" train --model "$MODEL" --policy zellige,knapformer,dp --profile "$prof" \
        --cluster "$BIG_CLUSTER" --max-degree "$NP" --plan-only --steps "$STEPS" "${BATCH[@]}" \
        --json > "$OUT/modelled-cluster.jsonl"
fi
phase modelled-larger
uptime >> "$OUT/load.txt"

python3 - "$OUT" "$NP" "$NP_BIG" "$BIG_CLUSTER" <<'PY'
import json, sys, os
out, np_, big, bigc = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
def summ(path):
    if not os.path.exists(path): return {}
    return {d["policy"]: d for d in map(json.loads, open(path)) if d.get("summary")}
meas, mod = summ(f"{out}/measured.jsonl"), summ(f"{out}/modelled.jsonl")
bigm = summ(f"{out}/modelled-big.jsonl")
clu = summ(f"{out}/modelled-cluster.jsonl")
losses = {}
for d in map(json.loads, open(f"{out}/measured.jsonl")):
    if not d.get("summary"): losses.setdefault(d["step"], []).append(d["loss"])
# same loss within fp32 tolerance: placements change the order of the reductions
same_loss = all(max(v) - min(v) <= 1e-5 * max(1.0, abs(max(v))) for v in losses.values())
z = meas["zellige"]["median_step_s"]; zm = mod["zellige"]["median_predicted_s"]
print(f"{'policy':<11} {'measured ms':>12} {'vs zellige':>10} {'modelled ms':>12} {'vs zellige':>10}"
      + (f" {'cpu:%d model ms' % big:>16} {'vs zellige':>10}" if bigm else ""))
res = {"ranks": np_, "same_loss_all_policies": same_loss, "policies": {}}
for p, d in meas.items():
    m = mod[p]["median_predicted_s"]
    row = f"{p:<11} {1e3*d['median_step_s']:12.2f} {d['median_step_s']/z:10.3f} {1e3*m:12.2f} {m/zm:10.3f}"
    r = {"measured_s": d["median_step_s"], "measured_ratio": d["median_step_s"]/z,
         "modelled_s": m, "modelled_ratio": m/zm}
    if bigm:
        b, bz = bigm[p]["median_predicted_s"], bigm["zellige"]["median_predicted_s"]
        row += f" {1e3*b:16.2f} {b/bz:10.3f}"
        r.update({"big_ranks": big, "big_modelled_s": b, "big_modelled_ratio": b/bz})
    if p in clu:
        c, cz = clu[p]["median_predicted_s"], clu["zellige"]["median_predicted_s"]
        r.update({"cluster": bigc, "cluster_modelled_s": c, "cluster_modelled_ratio": c/cz})
    print(row); res["policies"][p] = r
if clu:
    cz = clu["zellige"]["median_predicted_s"]
    print(f"modelled on {bigc} (measured {np_}-rank prices, degree <= {np_}):")
    for p, d in clu.items():
        print(f"  {p:<11} {1e3*d['median_predicted_s']:12.2f} ms {d['median_predicted_s']/cz:10.3f}")
print(f"losses equal across policies at every step (rel. 1e-5): {same_loss}")
res["load"] = [l.strip() for l in open(f"{out}/load.txt")]
print(json.dumps(res))
PY
