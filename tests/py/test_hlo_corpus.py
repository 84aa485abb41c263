"""The HLO corpus (tests/fixtures/hlo, made by scripts/gen_hlo_corpus.py with JAX on CPU) read by
AoiZora's importer (`aoizora evidence --hlo F`) must give the collectives the HLO text states:
kinds, counts (times loop trip counts), bytes and groups. The expectation comes from an
independent reader written here in Python (numpy for the iota and mesh-axes group forms), not
from the C importer. Pre-partitioning samples must be refused with a one-line error naming the
construct. Binaries: $ZG_BUILD (default "build")."""
import json
import os
import re
import subprocess

import numpy as np
import pytest

BUILD = os.environ.get("ZG_BUILD", "build")
AOIZORA = os.path.join(BUILD, "bin", "aoizora")
DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "hlo")
MANIFEST = json.load(open(os.path.join(DIR, "manifest.json")))
POST = [f for f in MANIFEST["files"] if f["kind"] == "post-partition"]
PRE = [f for f in MANIFEST["files"] if f["kind"] == "pre-partition"]
# the two older fixtures of scripts/gen_hlo_fixtures.py are real dumps too
OLDER = [{"file": n, "trip_count": 0} for n in ("ulysses_dp2_sp4.hlo", "tp_dp2_tp4.hlo")]

SIZES = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4,
         "u32": 4, "f32": 4, "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16, "token": 0}
KINDS = {"all-gather": "all-gather", "reduce-scatter": "reduce-scatter",
         "all-reduce": "all-reduce", "all-to-all": "all-to-all",
         "collective-permute": "collective-permute"}


# ---- an independent reader of HLO text ------------------------------------------------------

def match_close(s, i):
    """Index just past the bracket group opening at s[i]."""
    depth = 0
    for j in range(i, len(s)):
        if s[j] in "([{":
            depth += 1
        elif s[j] in ")]}":
            depth -= 1
            if depth == 0:
                return j + 1
    raise ValueError("unbalanced: " + s[i:i + 40])


def split_top(s):
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def array_bytes(t):
    m = re.match(r"([a-z0-9]+)\[([0-9,]*)\]", t)
    n = 1
    for d in filter(None, m.group(2).split(",")):
        n *= int(d)
    return n * SIZES[m.group(1)]


def shape_elements(shape):
    """Bytes of each top-level element of a shape (an array is one element)."""
    if shape.startswith("("):
        return [sum(shape_elements(e)) for e in split_top(shape[1:-1])]
    return [array_bytes(shape)]


def read_module(text):
    text = re.sub(r"/\*.*?\*/", "", text)
    comps, cur, name, entry = {}, None, None, None
    header = ""
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("HloModule"):
            header = s
            continue
        if cur is None:
            m = re.match(r"(ENTRY )?%?([^\s(]+).*\{$", s)
            if m:
                name, cur = m.group(2), []
                if m.group(1):
                    entry = name
            continue
        if s == "}":
            comps[name], cur = cur, None
            continue
        m = re.match(r"(?:ROOT )?%?(\S+) = ", s)
        if not m:
            continue
        rest = s[m.end():]
        end = match_close(rest, 0) if rest.startswith("(") else rest.index(" ")
        shape = rest[:end]
        op_m = re.match(r"\s*([a-z\-]+)\(", rest[end:])
        op = op_m.group(1)
        args_at = end + op_m.end() - 1
        attrs = rest[match_close(rest, args_at):]
        cur.append({"name": m.group(1), "shape": shape, "op": op, "attrs": attrs})
    parts = int(re.search(r"num_partitions=(\d+)", header).group(1))
    return comps, entry, parts


def attr(attrs, key):
    i = attrs.find(key + "=")
    if i < 0:
        return None
    v = attrs[i + len(key) + 1:]
    if v.startswith("mesh["):
        j = match_close(v, 4)
        return v[:match_close(v, v.index("{", j))]
    if v[0] in "{[(":
        if v.startswith("["):  # iota form [G,S]<=[dims]T(perm)
            return re.match(r"\[[0-9,]+\]<=\[[0-9,]+\](T\([0-9,]+\))?", v).group(0)
        return v[:match_close(v, 0)]
    return re.match(r"[^,\s]+", v).group(0)


def groups_of(v, n):
    if v == "{}":
        return [list(range(n))]
    if v.startswith("mesh["):
        sizes = [(a, int(s)) for a, s in re.findall(r"'(\w+)'=(\d+)", v[:v.index("]")])]
        sel = re.findall(r"'(\w+)'", v[v.index("{"):])
        ids = np.arange(n).reshape([s for _, s in sizes])
        keep = [i for i, (a, _) in enumerate(sizes) if a not in sel]
        move = [i for i, (a, _) in enumerate(sizes) if a in sel]
        gs = int(np.prod([sizes[i][1] for i in move]))
        return ids.transpose(keep + move).reshape(-1, gs).tolist()
    if v.startswith("["):
        m = re.match(r"\[(\d+),(\d+)\]<=\[([0-9,]+)\](?:T\(([0-9,]+)\))?", v)
        dims = [int(x) for x in m.group(3).split(",")]
        ids = np.arange(int(np.prod(dims))).reshape(dims)
        if m.group(4):
            ids = ids.transpose([int(x) for x in m.group(4).split(",")])
        return ids.reshape(int(m.group(1)), int(m.group(2))).tolist()
    return [[int(x) for x in g.split(",")] for g in re.findall(r"\{([0-9,]+)\}", v)]


def collectives(comps, comp, parts, repeat, trip_count, branches_out):
    """[(kind, bytes, groups, repeat)] of a computation, loops multiplied; conditionals: every
    branch's list goes to branches_out and the conditional itself adds nothing here."""
    out = []
    for ins in comps[comp]:
        op = ins["op"]
        base = op[:-6] if op.endswith("-start") else op
        if base in KINDS and not op.endswith("-done"):
            assert "channel_id" in ins["attrs"], "the corpus programs are SPMD-partitioned"
            key = "source_target_pairs" if base == "collective-permute" else "replica_groups"
            groups = groups_of(attr(ins["attrs"], key) or "{}", parts)
            els = shape_elements(ins["shape"])
            nbytes = sum(els)
            if base == "reduce-scatter":
                nbytes *= len(groups[0])
            out.append((KINDS[base], nbytes, groups, repeat))
        elif op == "while":
            m = re.search(r'"known_trip_count":\{"n":"(\d+)"\}', ins["attrs"])
            n = int(m.group(1)) if m else (trip_count or 1)
            out += collectives(comps, attr(ins["attrs"], "body").lstrip("%"), parts, repeat * n,
                               trip_count, branches_out)
        elif op == "conditional":
            names = [b.strip().lstrip("%") for b in attr(ins["attrs"], "branch_computations")[1:-1].split(",")]
            branches_out.append([(b, collectives(comps, b, parts, repeat, trip_count, [])) for b in names])
        elif op in ("call", "fusion") and op == "call":
            out += collectives(comps, attr(ins["attrs"], "to_apply").lstrip("%"), parts, repeat,
                               trip_count, branches_out)
    return out


def importer(path, trip_count=0):
    args = [AOIZORA, "evidence", "--hlo", path]
    if trip_count:
        args += ["--trip-count", str(trip_count)]
    r = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def evidence_collectives(ev):
    out = []
    for seg in ev["segments"]:
        for op in seg["ops"]:
            if op["op"] != "compute":
                out.append((op["op"], op["bytes"], op.get("groups") or op.get("pairs"), seg["repeat"]))
    return out


def canon(colls):
    return sorted((k, b, json.dumps(g), r) for k, b, g, r in colls)


needs_binary = pytest.mark.skipif(not os.path.exists(AOIZORA), reason="aoizora not built")


@needs_binary
@pytest.mark.parametrize("entry", POST + OLDER, ids=lambda e: e["file"])
def test_fixture_imports_with_the_collectives_the_text_states(entry):
    path = os.path.join(DIR, entry["file"])
    comps, main, parts = read_module(open(path).read())
    branches = []
    want = collectives(comps, main, parts, 1, entry.get("trip_count", 0), branches)
    ev = importer(path, entry.get("trip_count", 0))
    assert ev["num_devices"] == parts
    got = evidence_collectives(ev)
    if branches:
        # exactly one branch of each conditional is priced: the expected (most expensive) one
        assert len(branches) == 1
        kinds = sorted(entry["expensive_branch_collectives"])
        pick = [b for b in branches[0] if sorted(k for k, *_ in b[1]) == kinds]
        assert len(pick) == 1, branches
        want += pick[0][1]
        assert any("conditional" in n and pick[0][0] in n for n in ev["notes"]), ev["notes"]
    assert want, "every corpus program communicates"
    assert canon(got) == canon(want)
    # loops without a trip count are said to be so
    if entry.get("trip_count"):
        assert any("no known_trip_count" in n and f"repeated {entry['trip_count']} times" in n
                   for n in ev["notes"]), ev["notes"]


@needs_binary
def test_loop_without_trip_count_counts_once_with_a_note():
    path = os.path.join(DIR, "corpus_while_dynamic_8.hlo")
    ev = importer(path)
    assert sum(r for *_, r in evidence_collectives(ev)) == 1
    assert any("counted once" in n and "--trip-count" in n for n in ev["notes"]), ev["notes"]


@needs_binary
def test_tuples_past_five_elements_read_whole():
    for n in (8, 16):
        path = os.path.join(DIR, f"corpus_a2a_{n}.hlo")
        assert "/*index=5*/" in open(path).read()
        (k, b, g, r), = evidence_collectives(importer(path))
        assert (k, b, g, r) == ("all-to-all", n * 16 * 4, [list(range(n))], 1)


@needs_binary
@pytest.mark.parametrize("entry", POST, ids=lambda e: e["file"])
def test_peak_memory_from_buffer_assignment_or_marked_estimate(entry):
    ev = importer(os.path.join(DIR, entry["file"]), entry.get("trip_count", 0))
    truth = entry["memory_analysis_bytes"]
    if entry.get("buffer_assignment"):
        assert ev["peak_mem_source"] == "buffer-assignment"
        assert ev["peak_mem_bytes"] == truth  # JAX's memory_analysis() of the same program
    else:
        assert ev["peak_mem_source"] == "estimate"
        assert 0.5 * truth <= ev["peak_mem_bytes"] <= 2 * truth, (ev["peak_mem_bytes"], truth)


@needs_binary
@pytest.mark.parametrize("entry", PRE, ids=lambda e: e["file"])
def test_prepartition_input_is_refused_naming_the_construct(entry):
    r = subprocess.run([AOIZORA, "evidence", "--hlo", os.path.join(DIR, entry["file"])],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert entry["construct"] in lines[0] and "compile().as_text()" in lines[0], lines[0]
    assert "--hlo" in lines[0] and entry["file"] in lines[0]
