#!/usr/bin/env bash
# bench/gpu/device_row.sh — the GPU's measured device row, and what it changes in the plans.
#   1. `zellige profile-device --backend cuda` on GPU 0 (cluster 1xH100 or 1xH200 from
#      nvidia-smi's name): the bf16 tensor-core attention kernels (Wan2.1-1.3B, 12 heads x 128)
#      forward and backward and the DiT block's cuBLAS bf16 GEMMs at 256..65536 local tokens,
#      fitted into the cost model's row (eff and half-point per family) against 989 TFLOP/s;
#   2. `zellige simulate` of the paper's mixes (V35..V60, 350K tokens per rank, 15 s videos) on
#      16x and 8x that GPU for zellige, knapformer, usp and dp, with the built-in row and with the
#      measured one (--device-row): predicted step times and speed-ups, side by side;
#   3. writes $OUT/device_row.json (the row), $OUT/summary.md (tables; check.sh appends it to its results.md), $OUT/summary.json
#      and the logs.
# Usage (repository root, after `make`):  OUT=dir BUDGET=seconds bench/gpu/device_row.sh
#   OUT defaults to ./gpu-out/device_row, BUDGET to 90 (the measurement gets what is left after
#   ~25 s kept for planning). ROW=file plans with an existing row instead of measuring (e.g.
#   one measured earlier). Without a GPU (or with one that is not an H100/H200) the measurement
#   is skipped and said so, the built-in plans are still made, and the exit status is 0 (a dry
#   run); a failed measurement or simulate run exits 1. Builds with make -j16 when the zellige
#   binary is missing.
set -u
OUT=${OUT:-./gpu-out/device_row}
BUDGET=${BUDGET:-90}
ZG=${ZG_BUILD:-build}/bin/zellige
ROW=${ROW:-}
mkdir -p "$OUT"
T0=$(date +%s)
: >"$OUT/device_row.log"
log() { echo "[device_row +$(($(date +%s) - T0))s] $*" | tee -a "$OUT/device_row.log"; }
left() { echo $((BUDGET - ($(date +%s) - T0))); }
cap() { # timeout for a step: its own cap, or what is left of the budget (at least 5 s)
    local l
    l=$(left)
    [ "$l" -lt "$1" ] && echo $((l > 5 ? l : 5)) || echo "$1"
}
fail=0
status=measured

if [ ! -x "$ZG" ]; then
    log "$ZG missing: make -j16 (log: build.log)"
    if ! timeout "$(cap 300)" make -j16 >"$OUT/build.log" 2>&1; then
        log "BUILD FAILED; last lines:"
        tail -20 "$OUT/build.log" | tee -a "$OUT/device_row.log"
        exit 1
    fi
fi

# 1. the GPU and its row
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
case "$gpu" in
*H200*) dev=H200 ;;
*H100*) dev=H100 ;;
*) dev= ;;
esac
row_file="$OUT/device_row.json"
if [ -n "$ROW" ]; then
    status=given
    dev=${dev:-$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["device"])' "$ROW" 2>/dev/null)}
    log "ROW=$ROW: planning with this row (device ${dev:-unknown}), NOT measured in this run"
    cp "$ROW" "$row_file" || fail=1
elif [ -z "$gpu" ]; then
    status=skipped
    dev=H100
    log "SKIPPED the measurement: no GPU (nvidia-smi lists none); plans below use the built-in $dev row only"
elif [ -z "$dev" ]; then
    status=skipped
    log "SKIPPED the measurement: GPU '$gpu' is not an H100 or H200 (the cost model's rows); plans use the built-in H100 row only"
    dev=H100
else
    t=$(($(left) - 25))
    t=$((t < 20 ? 20 : t))
    toks=() # the default list (256..65536); a short budget stops at 32768
    [ "$t" -lt 40 ] && toks=(--tokens 256,512,1024,2048,4096,8192,16384,32768)
    log "profile-device --backend cuda --cluster 1x$dev ${toks[*]} on '$gpu' (timeout ${t}s; log: profile_device.log)"
    timeout "$t" "$ZG" profile-device --backend cuda --cluster "1x$dev" "${toks[@]}" --out "$row_file" \
        >"$OUT/profile_device.txt" 2>"$OUT/profile_device.log"
    rc=$?
    if [ "$rc" -ne 0 ]; then
        log "profile-device FAILED (exit $rc; 124 = timeout):"
        tail -5 "$OUT/profile_device.log" | tee -a "$OUT/device_row.log"
        status=failed
        fail=1
        rm -f "$row_file"
    else
        cat "$OUT/profile_device.txt" | tee -a "$OUT/device_row.log"
    fi
fi
[ -s "$row_file" ] || row_file=

# 2. the paper's mixes with the built-in row and with the measured one
POL=zellige,knapformer,usp,dp
for n in 16 8; do
    for tag in builtin measured; do
        extra=()
        if [ "$tag" = measured ]; then
            [ -n "$row_file" ] || {
                log "simulate ${n}x$dev with the measured row: SKIPPED (no row)"
                continue
            }
            extra=(--device-row "$row_file")
        fi
        f="$OUT/sim_${n}x${dev}_$tag"
        if timeout "$(cap 60)" "$ZG" simulate --cluster "${n}x$dev" --steps 2 --policies "$POL" \
            --json "${extra[@]}" >"$f.txt" 2>"$f.log"; then
            tail -1 "$f.txt" >"$f.json"
            log "simulate ${n}x$dev ($tag row): ok ($f.txt)"
        else
            log "simulate ${n}x$dev ($tag row) FAILED: $(tail -1 "$f.log")"
            fail=1
        fi
    done
done

# 3. tables
if ! command -v python3 >/dev/null 2>&1; then
    log "no python3: tables not written (the JSON files above hold everything)"
    exit "$fail"
fi
OUT="$OUT" DEV="$dev" GPU="$gpu" STATUS="$status" ROWF="$row_file" FAIL="$fail" \
    python3 - <<'EOF' 2>&1 | tee -a "$OUT/device_row.log"
import glob, json, os
out, dev, status = os.environ["OUT"], os.environ["DEV"], os.environ["STATUS"]
row = json.load(open(os.environ["ROWF"])) if os.environ["ROWF"] else None
md = [f"# Measured device row: {dev}", ""]
md.append(f"GPU: {os.environ['GPU'] or 'none'}; row: {status}"
          + (" (not measured in this run)" if status == "given" else "")
          + (" — the measurement was skipped, built-in row only" if status == "skipped" else ""))
summary = {"device": dev, "gpu": os.environ["GPU"], "status": status, "row": None, "plans": {}}
if row:
    summary["row"] = row["row"]
    summary["fit"] = row.get("fit")
    b = row.get("builtin_row", {})
    md += ["", f"Peak {row['peak_flops'] / 1e12:.0f} TFLOP/s ({row['backend']}, {row['dtype']}, "
           f"attention {row['shape']['attn_kernel']}); model {row['model']}.", "",
           "| tokens | attn fwd TFLOP/s | of peak | attn bwd TFLOP/s | of peak | GEMMs TFLOP/s | of peak |",
           "|---:|---:|---:|---:|---:|---:|---:|"]
    for s in row["samples"]:
        md.append(f"| {s['tokens']} | {s['attn_fwd_flops_per_s'] / 1e12:.1f} | {s['attn_fwd_of_peak']:.3f} "
                  f"| {s['attn_bwd_flops_per_s'] / 1e12:.1f} | {s['attn_bwd_of_peak']:.3f} "
                  f"| {s['gemm_flops_per_s'] / 1e12:.1f} | {s['gemm_of_peak']:.3f} |")
    md += ["", "| row | attn_fwd_eff | attn_bwd_eff | gemm_eff | attn_half | gemm_half |",
           "|---|---:|---:|---:|---:|---:|"]
    for name, r in (("measured", row["row"]), ("built-in", b)):
        if r:
            md.append(f"| {name} | {r['attn_fwd_eff']:.3f} | {r['attn_bwd_eff']:.3f} | {r['gemm_eff']:.3f} "
                      f"| {r['attn_half']:.0f} | {r['gemm_half']:.0f} |")
    f = row.get("fit", {})
    md.append(f"\nFit, largest relative residual: attention fwd {100 * f.get('attn_fwd_max_rel_err', 0):.1f}%, "
              f"bwd {100 * f.get('attn_bwd_max_rel_err', 0):.1f}%, GEMMs {100 * f.get('gemm_max_rel_err', 0):.1f}%.")
for n in (16, 8):
    runs = {}
    for tag in ("builtin", "measured"):
        p = os.path.join(out, f"sim_{n}x{dev}_{tag}.json")
        if os.path.exists(p):
            try:
                runs[tag] = json.load(open(p))
            except ValueError:
                pass
    if not runs:
        continue
    cl = f"{n}x{dev}"
    summary["plans"][cl] = {t: {m: {p: c.get("makespan_s") for p, c in pol.items()}
                                for m, pol in r["mixes"].items()} for t, r in runs.items()}
    md += ["", f"## {cl}: predicted step time (s), built-in row → measured row", "",
           "| mix | zellige | knapformer | usp | dp | zellige vs usp | zellige vs knapformer |",
           "|---|---:|---:|---:|---:|---:|---:|"]
    mixes = next(iter(runs.values()))["mixes"]
    def cell(t, m, p):
        c = runs.get(t, {}).get("mixes", {}).get(m, {}).get(p, {})
        v = c.get("makespan_s")
        if v is None:
            return None, "failed"
        return v, f"{v:.1f}" + (" (over cap)" if c.get("over_cap") else "")
    def both(m, p):
        return " → ".join(cell(t, m, p)[1] for t in ("builtin", "measured") if t in runs)
    def speed(m, other):
        parts = []
        for t in ("builtin", "measured"):
            if t not in runs:
                continue
            z, _ = cell(t, m, "zellige")
            o, _ = cell(t, m, other)
            over = runs[t]["mixes"].get(m, {}).get(other, {}).get("over_cap")
            parts.append(f"{o / z:.2f}x" if z and o and not over else "-")
        return " → ".join(parts)
    for m in mixes:
        md.append(f"| {m} | {both(m, 'zellige')} | {both(m, 'knapformer')} | {both(m, 'usp')} "
                  f"| {both(m, 'dp')} | {speed(m, 'usp')} | {speed(m, 'knapformer')} |")
md += ["", "Predicted by `zellige simulate` (2 seeded batches per mix, analytic cost model); "
       "knapformer cells over the memory cap are not a speed-up's reference (\"-\")."]
open(os.path.join(out, "summary.md"), "w").write("\n".join(md) + "\n")
json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=1)
print("\n".join(md))
EOF
log "done in $(($(date +%s) - T0)) s (budget $BUDGET s); status: $status; results: $OUT/summary.md"
exit "$fail"
