#!/usr/bin/env python3
"""summary.py — bench/gpu/check.sh's last step: $OUT/results.json and $OUT/results.md from the
logs directory $L (stages.tsv, attn_cuda.json, attn_torch.json, nccl_mem.json, machine.txt and
each extra stage's folder stage-NAME/ with its summary.md and *.json). Every input may be missing
or broken (a dry run without a GPU, a stage out of time): the table then says so."""
import glob
import json
import os


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return {"error": f"not run ({os.path.basename(path)} absent; see the stage table)"}
    except Exception as e:  # noqa: BLE001 - report any unreadable input
        return {"error": f"{os.path.basename(path)}: {type(e).__name__}: {e}"}


def read(path, limit=20000):
    try:
        with open(path, errors="replace") as f:
            return f.read(limit)
    except OSError:
        return ""


def main():
    out, logs = os.environ["OUT"], os.environ["L"]
    verdict, gpu = os.environ.get("VERDICT", "?"), os.environ.get("GPU", "?")
    stages = []
    for line in read(os.path.join(logs, "stages.tsv")).splitlines():
        f = (line.split("\t") + ["", "", "", ""])[:4]
        stages.append({"stage": f[0], "status": f[1], "seconds": f[2], "note": f[3]})
    ours = load(os.path.join(logs, "attn_cuda.json"))
    torch = load(os.path.join(logs, "attn_torch.json"))
    mem = load(os.path.join(logs, "nccl_mem.json"))
    extra = {}
    for d in sorted(glob.glob(os.path.join(logs, "stage-*"))):
        if not os.path.isdir(d):
            continue
        name = os.path.basename(d)[len("stage-"):]
        extra[name] = {"summary_md": read(os.path.join(d, "summary.md")),
                       "files": {os.path.basename(j): load(j)
                                 for j in sorted(glob.glob(os.path.join(d, "*.json")))}}
    res = {"verdict": verdict, "gpu": gpu, "elapsed_s": os.environ.get("ELAPSED"),
           "stages": stages, "attn_cuda": ours, "attn_torch": torch, "nccl_mem": mem,
           "extra_stages": extra, "machine": read(os.path.join(logs, "machine.txt"), 6000)}
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(res, f, indent=1)

    L = [f"# GPU check: {verdict}", "",
         f"GPU: {gpu}; {os.environ.get('ELAPSED', '?')} s", ""]
    if verdict == "INCOMPLETE":
        L += ["**Nothing failed, but some stages ran out of the time budget (status timeout).**", ""]
    if verdict == "NO-GPU":
        L += ["**No GPU was visible: the CUDA tests, sanitizers and benchmarks were SKIPPED "
              "(not run, not passed).**", ""]
    L += ["| stage | status | s | note |", "|---|---|---|---|"]
    L += [f"| {s['stage']} | {s['status']} | {s['seconds']} | {s['note']} |" for s in stages]
    L.append("")

    trows = {(r.get("kind"), r.get("tokens")): r for r in torch.get("rows", [])}

    def best(r, side):
        c = [(v, k[:-len("_" + side + "_tflops")]) for k, v in r.items()
             if k.endswith("_" + side + "_tflops") and isinstance(v, (int, float))
             and "per_seq" not in k and "fwdbwd" not in k]
        return max(c) if c else (None, None)

    if ours.get("rows"):
        peak = ours.get("peak_tflops") or 0
        L += [f"## Attention, {ours.get('device', '?')}: {ours.get('heads')} heads x "
              f"{ours.get('dim')}, {ours.get('dtype')}", "",
              f"dense bf16 peak {peak} TFLOP/s; cuBLAS bf16 GEMM {ours.get('cublas_bf16_tflops')} "
              f"TFLOP/s (same run); torch {torch.get('torch')}", "",
              "| kind | tokens | seqs | ours fwd TF/s | % peak | ours bwd TF/s | best torch fwd "
              "(which) | ours / best | torch bwd TF/s | per-seq SDPA fwd | max rel err |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in ours["rows"]:
            t = trows.get((r["kind"], r["tokens"]), {})
            bf, bn = best(t, "fwd")
            bb, _ = best(t, "bwd")
            ratio = f"{r['fwd_tflops'] / bf:.2f}x" if bf else "-"
            pct = f"{100 * r['fwd_tflops'] / peak:.1f}%" if peak else "-"
            L.append(f"| {r['kind']} | {r['tokens']} | {r['seqs']} | {r['fwd_tflops']} | {pct} | "
                     f"{r['bwd_tflops']} | {bf if bf else '-'} ({bn or '-'}) | {ratio} | "
                     f"{bb if bb else '-'} | {t.get('sdpa_per_seq_fwd_tflops', '-')} | "
                     f"{r.get('max_rel_err')} |")
        L += ["", "FA3 anchors (published, H100, bf16, D 128, non-causal varlen): ~605 TFLOP/s "
              "forward at 32K total tokens, ~125 at 1K total tokens of many short sequences.", ""]
    else:
        L += [f"Attention benchmark: {ours.get('error', 'no rows')}", ""]
    if torch.get("notes"):
        L += ["torch notes: " + "; ".join(torch["notes"]), ""]
    if "world_used_mib" in mem:
        L += ["## NCCL communicator memory (one GPU, 1-rank communicators: fixed cost only)", "",
              f"NCCL {mem['nccl_version']}: world comm {mem['world_used_mib']} MiB after first "
              f"use; each ncclCommSplit comm {mem['split_used_mib']} MiB; zellige's comm "
              f"{mem['zellige_comm_mib']} MiB", "",
              "| world W | blocks per rank | one world comm (MiB) | one per block (MiB) |",
              "|---|---|---|---|"]
        L += [f"| {p['world']} | {p['blocks']} | {p['ours_mib']} | {p['blocks_mib']} |"
              for p in mem.get("per_rank", [])]
        L.append("")
    else:
        L += [f"NCCL memory: {mem.get('error')}", ""]
    for name, e in extra.items():
        L += [f"## Stage {name}", "", e["summary_md"].strip() or
              f"(no summary.md; files: {', '.join(e['files']) or 'none'})", ""]
    L += ["Logs: logs.tar.gz (build, tests, sanitizers, benchmarks, every stage's OUT)."]
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write("\n".join(L) + "\n")
    print("\n".join(L))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
