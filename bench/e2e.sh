#!/usr/bin/env bash
# e2e.sh — end-to-end benchmark of placement policies on real ranks, plus the modelled
# comparison with the same measured prices.
#
#   BUILD=build NP=2 MODEL=tiny STEPS=8 bench/e2e.sh [OUTDIR]
#
# 1. Profiles the model on NP ranks (zellige profile), unless OUTDIR/profile-npNP.json exists.
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
# Prints a table and one JSON line.
set -euo pipefail
BUILD=${BUILD:-build}
NP=${NP:-2}
MODEL=${MODEL:-tiny}
STEPS=${STEPS:-8}
TPR=${TPR:-512}
SHARE=${SHARE:-0.5}
NP_BIG=${NP_BIG:-0}
OUT=${1:-${BUILD}/e2e}
Z=${ZELLIGE:-$BUILD/bin/zellige}
MPI=(mpirun --allow-run-as-root --oversubscribe)
POL=zellige,knapformer,usp,dp
mkdir -p "$OUT"

prof=$OUT/profile-np$NP.json
[ -f "$prof" ] || "${MPI[@]}" -np "$NP" "$Z" profile --model "$MODEL" --out "$prof" --quiet

"${MPI[@]}" -np "$NP" "$Z" train --model "$MODEL" --policy $POL --profile "$prof" \
    --steps "$STEPS" --tokens-per-rank "$TPR" --video-share "$SHARE" --json > "$OUT/measured.jsonl"
"$Z" train --model "$MODEL" --policy $POL --profile "$prof" --cluster "cpu:$NP" --plan-only \
    --steps "$STEPS" --tokens-per-rank "$TPR" --video-share "$SHARE" --json > "$OUT/modelled.jsonl"
if [ "$NP_BIG" -gt "$NP" ]; then
    big=$OUT/profile-np$NP_BIG.json
    [ -f "$big" ] || "${MPI[@]}" -np "$NP_BIG" "$Z" profile --model "$MODEL" --out "$big" --quiet
    "$Z" train --model "$MODEL" --policy $POL --profile "$big" --cluster "cpu:$NP_BIG" \
        --plan-only --steps "$STEPS" --tokens-per-rank "$TPR" --video-share "$SHARE" --json \
        > "$OUT/modelled-big.jsonl"
fi

python3 - "$OUT" "$NP" "$NP_BIG" <<'PY'
import json, sys, os
out, np_, big = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def summ(path):
    if not os.path.exists(path): return {}
    return {d["policy"]: d for d in map(json.loads, open(path)) if d.get("summary")}
meas, mod = summ(f"{out}/measured.jsonl"), summ(f"{out}/modelled.jsonl")
bigm = summ(f"{out}/modelled-big.jsonl")
losses = {}
for d in map(json.loads, open(f"{out}/measured.jsonl")):
    if not d.get("summary"): losses.setdefault(d["step"], set()).add(round(d["loss"], 6))
same_loss = all(len(v) == 1 for v in losses.values())
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
    print(row); res["policies"][p] = r
print(f"losses identical across policies at every step: {same_loss}")
print(json.dumps(res))
PY
