#!/usr/bin/env bash
# bench/gpu/torch_cuda.sh — zellige.torch on one GPU with NCCL (world size 1), checked against
# the CPU:
#   1. exec:  tests/py/torch_exec_worker.py --device cuda under torch.distributed.run (1 rank,
#             NCCL): random legal plans (every configuration of 1 rank, microbatch rounds, both
#             kernel paths and call groupings), the planner's plans, bf16, the error messages.
#             Forward and q/k/v gradients against the float64 CPU reference (<= 1e-5), dispatch
#             exact, and the same worker on the CPU (gloo) must report the same per-plan counters
#             (bytes, collectives, kernel calls).
#   2. train: examples/train_dit.py --device cuda, 3 steps, zellige (Planner + Executor) and
#             knapformer (zellige.torch.Balancer), against the one-process CPU run
#             (--reference): losses within 1e-4 relative.
#   3. bench: bench/torch_executor.py --device cuda, fp32 and bf16 (timings; verdict = it ran).
# Each part gets a one-line verdict in $OUT/summary.md (check.sh appends it to its results.md)
# and on stdout; logs in $OUT/torch_cuda/. Without a CUDA device (or without torch) it prints
# "skipped: ..." and exits 0.
#
#   OUT=dir BUDGET=90 bench/gpu/torch_cuda.sh      (repository root; PYTHON=... picks python)
#   DEVICE=cpu OUT=dir bench/gpu/torch_cuda.sh      (a dry run of the same flow on the CPU, gloo)
#
# The zellige package: PYTHONPATH as given, else build/python (`python3 -m pip install
# --no-deps --target build/python ./python`), else it is built into a temporary folder, offline
# (--no-build-isolation: the GPU machine cannot fetch setuptools). Its C library needs cJSON:
# bench/gpu/setup-deps.sh (sourced by check.sh, or here when it was not) supplies it where the
# image has none, or BUNDLE=.dev (bench/remote/pack.sh) its libcjson.so.1. Exit 0 when every part passed (or skipped for want of a GPU).
set -u
OUT=${OUT:-./gpu-out}
BUDGET=${BUDGET:-90}
PY=${PYTHON:-python3}
DEV=${DEVICE:-cuda}
HERE=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$OUT/torch_cuda"
D=$(cd "$OUT/torch_cuda" && pwd)
T0=$(date +%s)
V=$(cd "$OUT" && pwd)/summary.md
echo "### zellige.torch on CUDA (bench/gpu/torch_cuda.sh)" > "$V"
echo >> "$V"
say() { echo "torch_cuda: $*"; echo "* $*" >> "$V"; }
sayin() { local l; while IFS= read -r l; do say "$l"; done; }  # say every line of stdin
left() { echo $((BUDGET - ($(date +%s) - T0))); }
cap() { local l; l=$(left); [ "$l" -lt "$1" ] && echo $((l > 5 ? l : 5)) || echo "$1"; }
cd "$HERE" || exit 2

if ! "$PY" -c 'import torch' > /dev/null 2>&1; then
    say "skipped: no CUDA device ($PY cannot import torch)"
    exit 0
fi
if [ "$DEV" = cuda ] && ! "$PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    say "skipped: no CUDA device (torch $("$PY" -c 'import torch; print(torch.__version__)') sees none)"
    exit 0
fi
if [ "$DEV" = cuda ]; then
    "$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl",
".".join(map(str, torch.cuda.nccl.version())), torch.cuda.get_device_name(0))' > "$D/device.txt" 2>&1
else
    echo "DRY RUN on the CPU (DEVICE=cpu, gloo): torch $("$PY" -c 'import torch; print(torch.__version__)')" > "$D/device.txt"
fi
say "device: $(cat "$D/device.txt")"

# the zellige package
if [ -z "${ZGDEPS_PREFIX:-}" ] && [ -z "${BUNDLE:-}" ] && [ -f .gpudeps/MANIFEST ]; then
    # shellcheck source=bench/gpu/setup-deps.sh
    . bench/gpu/setup-deps.sh > "$D/deps.log" 2>&1 || say "setup-deps: $(tail -1 "$D/deps.log")"
fi
if [ -n "${BUNDLE:-}" ] && [ -d "$BUNDLE/lib" ]; then
    blib=$(cd "$BUNDLE/lib" && pwd)
    export LD_LIBRARY_PATH="$blib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
if ! "$PY" -c 'import zellige.torch' > /dev/null 2>&1; then
    export PYTHONPATH="$HERE/build/python${PYTHONPATH:+:$PYTHONPATH}"
fi
if ! "$PY" -c 'import zellige.torch' > /dev/null 2>&1; then
    site=$(mktemp -d)
    "$PY" -m pip install -q --no-deps --no-build-isolation --target "$site" ./python > "$D/pip.log" 2>&1
    export PYTHONPATH="$site:$PYTHONPATH"
fi
if ! "$PY" -c 'import zellige.torch' > "$D/import.log" 2>&1; then
    say "FAILED: cannot import zellige.torch ($(tail -1 "$D/import.log")); build it with pip install --target build/python ./python, give BUNDLE for libcjson"
    exit 1
fi
export OMP_NUM_THREADS=1
port=$((29500 + RANDOM % 2000))
fail=0

# 1. the executor worker on cuda (NCCL) and on the CPU (gloo): same plans, same counters
run_worker() {  # DEVICE NAME: results in exec_NAME.jsonl, log in exec_NAME.log
    port=$((port + 1))
    timeout "$(cap 45)" "$PY" -m torch.distributed.run --nproc-per-node 1 --master-addr 127.0.0.1 \
        --master-port "$port" tests/py/torch_exec_worker.py --out "$D/exec_$2.jsonl" --plans 6 \
        --seed 3 --device "$1" > "$D/exec_$2.log" 2>&1
}
if run_worker "$DEV" "$DEV" && run_worker cpu cpuref; then
    "$PY" - "$D" "$DEV" <<'PY' | sayin
import json, sys
d, dev = sys.argv[1], sys.argv[2]
def load(dev):
    return [json.loads(l) for l in open(f"{d}/exec_{dev}.jsonl")]
cu, cp = load(dev), load("cpuref")
bad, worst_f, worst_b, n = [], 0.0, 0.0, 0
for a, b in zip(cu, cp):
    if a["kind"] == "errors":
        bad += [f"message {m!r} lacks {w!r}" for m, w in zip(a["messages"], a["want"]) if w not in m]
    elif a["kind"] == "bf16":
        bad += [f"bf16 {k} rel err {e:.3g} > 3e-2" for k, e in a["errs"].items() if e > 3e-2]
    else:
        n += 1
        worst_f, worst_b = max(worst_f, a["err_fwd"]), max(worst_b, a["err_bwd"])
        what = f"{a['kind']} {a.get('index', '')} configs {a['configs']}"
        if a.get("device", "").split(":")[0] != dev:
            bad.append(f"{what}: ran on {a.get('device')}, not {dev}")
        if a["err_fwd"] > 1e-5 or a["err_bwd"] > 1e-5:
            bad.append(f"{what}: rel err fwd {a['err_fwd']:.3g} bwd {a['err_bwd']:.3g} > 1e-5")
        if not (a["dispatch_exact"] and a["identity"]):
            bad.append(f"{what}: dispatch not exact")
        if a["stats"] != b["stats"]:
            bad.append(f"{what}: counters differ from the CPU run: {a['stats']} vs {b['stats']}")
if len(cu) != len(cp):
    bad.append(f"{len(cu)} results on {dev}, {len(cp)} on the CPU")
print(("exec: PASS" if not bad else "exec: FAIL") + f": {n} plans on 1 rank on {dev}, worst rel "
      f"err fwd {worst_f:.2e} bwd {worst_b:.2e} vs the float64 CPU reference, counters equal "
      f"to the CPU (gloo) run: {not any('counters' in x for x in bad)}"
      + ("" if not bad else "; " + "; ".join(bad[:5])))
sys.exit(1 if bad else 0)
PY
    [ "${PIPESTATUS[0]}" -eq 0 ] || fail=1
else
    say "exec: FAIL: the worker exited non-zero; last lines of $D/exec_$DEV.log / exec_cpuref.log:"
    tail -8 "$D/exec_$DEV.log" "$D/exec_cpuref.log" 2>/dev/null | sayin
    fail=1
fi

# 2. the training example on cuda vs the one-process CPU run
TINY=(--steps 3 --tokens-per-rank 192 --dim 48 --heads 4 --layers 2 --ffn 96 --json)
port=$((port + 1))
if timeout "$(cap 40)" "$PY" -m torch.distributed.run --nproc-per-node 1 --master-addr 127.0.0.1 \
    --master-port "$port" examples/train_dit.py --device "$DEV" --policy zellige,knapformer \
    "${TINY[@]}" > "$D/train_$DEV.log" 2>&1 &&
    timeout "$(cap 30)" "$PY" examples/train_dit.py --reference --world-size 1 "${TINY[@]}" \
        > "$D/train_ref.log" 2>&1; then
    "$PY" - "$D" "$DEV" <<'PY' | sayin
import json, sys
d, dev = sys.argv[1], sys.argv[2]
steps = lambda f: [json.loads(l) for l in open(f"{d}/{f}") if l.startswith("{")]
got, ref = steps(f"train_{dev}.log"), steps("train_ref.log")
want = {s["step"]: s["loss"] for s in ref}
err = max((abs(s["loss"] - want[s["step"]]) / abs(want[s["step"]]) for s in got), default=1.0)
ok = len(got) == 6 and len(want) == 3 and err <= 1e-4
ms = {p: [round(s["step_ms"], 1) for s in got if s["policy"] == p] for p in ("zellige", "knapformer")}
print(f"train: {'PASS' if ok else 'FAIL'}: examples/train_dit.py on {dev}, {len(got)} steps "
      f"(zellige via Planner+Executor, knapformer via Balancer), losses vs the CPU one-process "
      f"run max rel err {err:.2e} (<= 1e-4); step ms {ms}")
sys.exit(0 if ok else 1)
PY
    [ "${PIPESTATUS[0]}" -eq 0 ] || fail=1
else
    say "train: FAIL: a run exited non-zero; last lines:"
    tail -8 "$D/train_$DEV.log" "$D/train_ref.log" 2>/dev/null | sayin
    fail=1
fi

# 3. the executor benchmark on cuda (timings only)
if [ "$(left)" -gt 15 ]; then
    : > "$D/torch_executor.log"
    ok=1
    seqs=24 reps=3 dts="fp32 bf16"
    [ "$DEV" = cpu ] && seqs=6 reps=1 dts=fp32  # the dry run: the CPU is slow
    for dt in $dts; do
        timeout "$(cap 25)" "$PY" bench/torch_executor.py --device "$DEV" --dtype "$dt" \
            --reps "$reps" --seqs "$seqs" --no-comm >> "$D/torch_executor.log" 2>&1
        rc=$?
        [ $rc -eq 0 ] || ok=0
        [ $rc -eq 124 ] && echo "(timed out after its $(cap 25) s cap)" >> "$D/torch_executor.log"
    done
    if [ $ok -eq 1 ]; then
        say "bench: ran: bench/torch_executor.py --device $DEV ($dts); plan/sdpa ratios $(grep -o '"ratio": [0-9.]*' "$D/torch_executor.log" | awk '{printf "%.2f ", $2}')"
    else
        say "bench: FAIL: bench/torch_executor.py --device $DEV exited non-zero (see $D/torch_executor.log)"
        tail -5 "$D/torch_executor.log" | sayin
        fail=1
    fi
else
    say "bench: skipped: $(left) s left of the ${BUDGET} s budget"
fi
say "done in $(($(date +%s) - T0)) s: $([ $fail -eq 0 ] && echo 'all passed' || echo 'SOMETHING FAILED')"
exit $fail
