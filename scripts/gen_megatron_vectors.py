#!/usr/bin/env python3
"""gen_megatron_vectors.py — writes tests/fixtures/megatron_groups.json: what the real
Megatron-Core dynamic ("hybrid") context-parallel scheduler returns on seeded batches, so that
the C port (src/plan/megatron.c) can be checked against it exactly (tests/plan/test_megatron.c,
which needs no torch).

Source of truth: megatron-core 0.16.1 from PyPI (it pulls torch from PyPI; the CPU is enough),
file megatron/core/pipeline_parallel/hybrid_cp_schedule.py, class BalancedCPScheduler.

What this script calls, per case (one fresh scheduler per case; its lru_caches are per instance):

    from megatron.core.pipeline_parallel.hybrid_cp_schedule import BalancedCPScheduler
    sched = BalancedCPScheduler(max_seq_len_per_rank=M, dp_cp_group=StubGroup(W))
        # the process group is only asked .size() (-> W, total_hdp_gpus)
    groups, sample_id_groups = sched.get_groups_and_subsamples(samples, None)
        # samples = [(sample_id, seq_len), ...] in batch order (ids 0..n-1, as Megatron's
        # global ids); the second argument (config) is unused by 0.16.1
    cp = [sched.gpus_needed(L) for _, L in samples]
    buckets = sched.make_buckets_equal(sorted(samples, key=lambda x: x[1], reverse=True),
                                       sched.get_total_workload)   # the first call's buckets

and, on a second fresh scheduler, the loop of get_groups_and_subsamples replayed with the real
next_hdp_group (the same call it makes: next_hdp_group(rest, sched.get_total_workload, W)) to
record each group's exec_times and leftovers; the replay must give the same groups (checked).
A case where the real code raises records the exception's type instead of groups.

Fixture (one case per line): {"megatron_core": "0.16.1", "python": ..., "torch": ...,
  "cases": [{"name", "world", "max_seqlen_per_rank", "samples": [[id, len], ...],
             "cp": [...], "buckets": [[[id, len], ...], ...],
             "groups": [[[len, ...] per rank] per group],           # groups (micro_batches)
             "sample_id_groups": [[[id, ...] per rank] per group],  # sample_id_groups
             "exec_times": [[t per rank] per group], "leftovers": [[[id, len], ...] per group]}
            or {"name", "world", "max_seqlen_per_rank", "samples", "error": "AssertionError"}]}

Batches: 120 seeded random ones (4..64 samples; W in {4, 8, 16, 32}; M in {2048, 4096, 8192,
16384, 32768}; lengths: images 256..4096 tokens, medium M/4..M, long M..min(W, 8)*M, and in a
third of them lengths drawn from a few buckets so that ties occur), 12 on non-power-of-two W
(6, 12, 24; Megatron itself requires a power of two), 24 dense ones (80..300 samples on 4..16
ranks, so that groups stop at the 5 % balance and trim_overload acts), 3 where a delta of 0.055
instead of 0.05 would change the groups, and hand-made edge cases
(exact multiples of M, one sample, all equal, a sample needing the whole world, one needing
more than the world, two batches where make_buckets_equal meets projected == target * 1.1).

Floating point: every workload is L*L/cp; with cp <= 32 and sum(L*L) < 2**48 per batch (checked)
every sum the scheduler forms is exact, so the vectors do not depend on how the interpreter's
sum() rounds (Python 3.12 made sum() of floats compensated). The cases named "fp-*" use lengths
up to 3*10^7 where sums do round: they follow plain left-to-right summation (Python <= 3.11,
which this script checks it runs on when it writes them).

Run: python3 scripts/gen_megatron_vectors.py [--out PATH] [--venv DIR]
  Without megatron-core 0.16.1 importable, it makes a venv (default /tmp/zg-megatron-venv),
  pip-installs megatron-core==0.16.1 there (with its torch) and re-runs itself with it.
  Needs Python 3.11 for the venv when writing the fp cases (pass --no-fp to skip them).
"""
import argparse
import importlib.metadata
import json
import os
import random
import subprocess
import sys
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(ROOT, "tests", "fixtures", "megatron_groups.json")
VERSION = "0.16.1"


def ensure_megatron(venv):
    try:
        if importlib.metadata.version("megatron-core") == VERSION:
            return
    except importlib.metadata.PackageNotFoundError:
        pass
    if os.environ.get("ZG_MEGATRON_REEXEC"):
        sys.exit("megatron-core %s is not importable even in %s" % (VERSION, venv))
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        subprocess.check_call([sys.executable, "-m", "venv", venv])
    subprocess.check_call([py, "-m", "pip", "install", "-q", "megatron-core==" + VERSION])
    env = dict(os.environ, ZG_MEGATRON_REEXEC="1")
    os.execve(py, [py] + sys.argv, env)


class StubGroup:
    """Stands in for torch.distributed.ProcessGroup: BalancedCPScheduler only calls .size()."""

    def __init__(self, n):
        self.n = n

    def size(self):
        return self.n


def run_case(Sched, name, world, M, lens):
    samples = [(i, int(L)) for i, L in enumerate(lens)]
    case = {"name": name, "world": world, "max_seqlen_per_rank": M,
            "samples": [list(s) for s in samples]}
    sched = Sched(max_seq_len_per_rank=M, dp_cp_group=StubGroup(world))
    try:
        groups, sample_id_groups = sched.get_groups_and_subsamples(list(samples), None)
    except Exception as e:  # the real code's failure is part of the spec
        case["error"] = type(e).__name__
        return case
    case["cp"] = [int(sched.gpus_needed(L)) for _, L in samples]
    first = sorted(samples, key=lambda x: x[1], reverse=True)
    case["buckets"] = [[list(t) for t in b]
                       for b in sched.make_buckets_equal(first, sched.get_total_workload)]
    case["groups"] = [[list(mb) for mb in g] for g in groups]
    case["sample_id_groups"] = [[list(ids) for ids in g] for g in sample_id_groups]
    # replay get_groups_and_subsamples's loop with the real next_hdp_group on a fresh scheduler
    replay = Sched(max_seq_len_per_rank=M, dp_cp_group=StubGroup(world))
    rest = sorted(samples, key=lambda x: x[1], reverse=True)
    exec_times, leftovers, rg, rids = [], [], [], []
    while rest:
        mb, rest, times, ids = replay.next_hdp_group(rest, replay.get_total_workload, world)
        rg.append(mb)
        rids.append(ids)
        exec_times.append([float(t) for t in times])
        leftovers.append([list(t) for t in rest])
    assert rg == groups and rids == sample_id_groups, name
    case["exec_times"] = exec_times
    case["leftovers"] = leftovers
    return case


def random_lens(rng, world, M, n, ties):
    top = min(world, 8) * M
    menu = sorted({rng.randint(256, 4096) for _ in range(3)} | {rng.randint(M // 4, M)} |
                  {rng.randint(M, top)})
    out = []
    for _ in range(n):
        if ties:
            out.append(rng.choice(menu))
            continue
        u = rng.random()
        if u < 0.5:
            out.append(rng.randint(256, 4096))
        elif u < 0.8:
            out.append(rng.randint(M // 4, M))
        else:
            out.append(rng.randint(M, top))
    return out


def mostly_short(rng, M, n_lo, n_hi):
    """n_lo..n_hi lengths: 70 % short (256..2048), 25 % up to the cap M, 5 % up to 4 M."""
    lens = []
    for _ in range(rng.randint(n_lo, n_hi)):
        u = rng.random()
        lens.append(rng.randint(256, 2048) if u < 0.7 else
                    rng.randint(M // 8, M) if u < 0.95 else rng.randint(M, 4 * M))
    return lens


def all_cases(with_fp):
    cases = []
    for seed in range(120):
        rng = random.Random(seed)
        world = rng.choice([4, 8, 16, 32])
        M = rng.choice([2048, 4096, 8192, 16384, 32768])
        n = rng.randint(4, 64)
        ties = seed % 3 == 2
        cases.append(("seed-%d" % seed, world, M, random_lens(rng, world, M, n, ties)))
    for seed in range(12):
        rng = random.Random(1000 + seed)
        world = [6, 12, 24][seed % 3]
        M = rng.choice([4096, 8192, 16384])
        n = rng.randint(4, 40)
        top = 4 * M if world < 8 else 8 * M
        cases.append(("npow2-%d" % seed, world, M,
                      [rng.choice([rng.randint(256, 4096), rng.randint(M // 4, M),
                                   rng.randint(M, top)]) for _ in range(n)]))
    for seed in range(24):  # many samples: groups reach the 5 % balance and trim often
        rng = random.Random(3000 + seed)
        world = [4, 8, 16][seed % 3]
        M = rng.choice([4096, 8192])
        cases.append(("dense-%d" % seed, world, M, mostly_short(rng, M, 80, 300)))
    # batches where delta 0.055 instead of 0.05 changes the groups (found by searching seeds
    # 4000.. with next_hdp_group's default delta patched): the 5 % balance check, exactly
    for seed in (4088, 4129, 4164):
        rng = random.Random(seed)
        world = rng.choice([4, 8, 16])
        M = rng.choice([4096, 8192])
        cases.append(("delta-edge-%d" % seed, world, M, mostly_short(rng, M, 20, 120)))
    M = 8192
    cases += [
        # make_buckets_equal meets projected == target * 1.1 exactly (found by search)
        ("bucket-tie-a", 8, 100, [140, 100, 20, 10, 40, 160, 30, 20]),
        ("bucket-tie-b", 8, 100, [30, 40, 100, 140, 30, 160]),
        ("one-sample", 8, M, [5000]),
        ("one-long-sample", 8, M, [3 * M]),
        ("all-equal", 8, M, [3000] * 20),
        ("exact-multiples", 16, M, [M, 2 * M, 4 * M, 8 * M, M + 1, 2 * M + 1, 4 * M - 1,
                                    M - 1, M // 2, M // 2 + 1, 1000, 1000]),
        ("whole-world", 4, M, [4 * M, 1000, 2000, 3000]),
        ("fewer-samples-than-ranks", 32, M, [700, 900, 1100]),
        ("more-than-world", 4, M, [5 * M, 1000]),
        ("tiny-lengths", 4, 1024, [1, 2, 3, 5, 8, 13]),
        ("many-short", 8, 4096, [rng_len for rng_len in random.Random(7).choices(
            range(256, 1025), k=200)]),
    ]
    if with_fp:
        for seed in range(6):
            rng = random.Random(2000 + seed)
            world = [8, 16, 32][seed % 3]
            M = rng.choice([1_000_003, 3_000_017])
            n = rng.randint(10, 40)
            cases.append(("fp-%d" % seed, world, M,
                          [rng.randint(1, min(world, 8) * M) for _ in range(n)]))
    return cases


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--venv", default=os.environ.get("ZG_MEGATRON_VENV", "/tmp/zg-megatron-venv"))
    ap.add_argument("--no-fp", action="store_true", help="leave out the fp-* cases")
    args = ap.parse_args()
    ensure_megatron(args.venv)
    warnings.filterwarnings("ignore")
    import torch  # noqa: F401  (the version is recorded)
    from megatron.core.pipeline_parallel.hybrid_cp_schedule import BalancedCPScheduler

    with_fp = not args.no_fp
    if with_fp and sys.version_info[:2] > (3, 11):
        sys.exit("the fp-* cases need Python <= 3.11 (plain sum()); run with 3.11 or --no-fp")
    out_cases = []
    for name, world, M, lens in all_cases(with_fp):
        if not name.startswith("fp-"):
            assert sum(L * L for L in lens) < 2 ** 48, name  # every sum below is exact
        out_cases.append(run_case(BalancedCPScheduler, name, world, M, lens))
    doc = {"generator": "scripts/gen_megatron_vectors.py", "megatron_core": VERSION,
           "file": "megatron/core/pipeline_parallel/hybrid_cp_schedule.py",
           "python": "%d.%d.%d" % sys.version_info[:3], "torch": torch.__version__,
           "cases": out_cases}
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        f.write("{" + ",".join("%s:%s" % (json.dumps(k), json.dumps(v))
                               for k, v in doc.items() if k != "cases"))
        f.write(',"cases":[\n')
        f.write(",\n".join(json.dumps(c, separators=(",", ":")) for c in out_cases))
        f.write("\n]}\n")
    os.replace(tmp, args.out)
    n_err = sum(1 for c in out_cases if "error" in c)
    n_groups = sum(len(c.get("groups", [])) for c in out_cases)
    print("%s: %d cases (%d raise), %d groups" % (os.path.relpath(args.out), len(out_cases),
                                                  n_err, n_groups))


if __name__ == "__main__":
    main()
