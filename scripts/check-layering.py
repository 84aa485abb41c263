#!/usr/bin/env python3
"""check-layering.py — fails when the tree's layering is broken.

Checks, in order (each failure is one line naming the files):
  1. modules: every src/<m>/deps names existing modules, lists its deps transitively (it is
     the link order) and the deps graph has no cycle, so "below" is well defined; every module
     has its header src/<m>/<m>.h whose "// May include:" line names the same modules;
  2. upward includes: a file of module m includes only m's own headers and the headers of the
     modules in src/m/deps (tools/, tests/ and bench/ sit above every module);
  3. private headers: outside module m, only m's public headers are included: src/m/m.h and
     the few listed in EXTRA_PUBLIC. Exceptions: m's own tests (tests/m/) and bench/, which
     measure internals;
  4. include cycles: no header includes, directly or not, a header that includes it back;
  5. call cycles (with --objects DIR, after a build): no .c file calls a function defined in a
     file that calls back into it (strongly connected components of the "uses a symbol
     defined in" graph over the object files, read with nm).

Usage: scripts/check-layering.py [--objects build/obj] [--root DIR]   exit 0 clean, 1 failures
"""
import argparse
import collections
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # --root changes it
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# public headers besides <m>/<m>.h: KnapFormer's balancer API (used by the simulator and a
# benchmark) and the link-level network model (AoiZora prices on it)
EXTRA_PUBLIC = {"plan/knapformer.h", "topo/network.h"}


def rel(p):
    return os.path.relpath(p, ROOT)


def source_files():
    out = []
    for top in ("src", "tools", "tests", "bench", "fuzz"):
        for d, _, names in os.walk(os.path.join(ROOT, top)):
            out += [os.path.join(d, n) for n in names if n.endswith((".c", ".h", ".cu"))]
    return sorted(out)


def module_of(path):
    """'src/plan/problem.c' -> 'plan'; None outside src/."""
    parts = rel(path).split(os.sep)
    return parts[1] if parts[0] == "src" and len(parts) > 2 else None


def read_deps():
    deps = {}
    for m in sorted(os.listdir(os.path.join(ROOT, "src"))):
        f = os.path.join(ROOT, "src", m, "deps")
        if os.path.isdir(os.path.join(ROOT, "src", m)):
            deps[m] = open(f).read().split() if os.path.exists(f) else []
    return deps


def check_modules(deps, fail):
    for m, ds in deps.items():
        for d in ds:
            if d not in deps:
                fail(f"src/{m}/deps: '{d}' is not a module")
            elif m in deps[d]:
                fail(f"src/{m}/deps and src/{d}/deps name each other: modules must form a DAG")
        for d in ds:
            missing = [x for x in deps.get(d, []) if x not in ds]
            if missing:
                fail(f"src/{m}/deps: uses {d}, which uses {' '.join(missing)}: list them too "
                     "(deps are transitive, in link order)")


MAY_INCLUDE = re.compile(r"^// May include: (.*)$", re.M)


def check_headers(deps, fail):
    """Each module has src/m/m.h whose comment says what it may include, as src/m/deps does."""
    for m, ds in deps.items():
        h = os.path.join(ROOT, "src", m, m + ".h")
        if not os.path.exists(h):
            fail(f"src/{m}: no module header src/{m}/{m}.h (its contract)")
            continue
        said = MAY_INCLUDE.search(open(h, errors="replace").read())
        if not said:
            fail(f"src/{m}/{m}.h: no '// May include: ...' line (the modules in src/{m}/deps)")
            continue
        listed = set(re.findall(r"[a-z_]+", said.group(1))) & set(deps)
        if listed != set(ds):
            fail(f"src/{m}/{m}.h says it may include [{' '.join(sorted(listed))}], "
                 f"src/{m}/deps says [{' '.join(sorted(ds))}]")


def resolve(inc, frm):
    """An include's file: relative to src/ (the -Isrc form), else to the including file."""
    for base in (os.path.join(ROOT, "src"), os.path.dirname(frm)):
        p = os.path.normpath(os.path.join(base, inc))
        if os.path.exists(p):
            return p
    return None


def check_includes(files, deps, fail):
    graph = collections.defaultdict(set)
    for f in files:
        src = open(f, errors="replace").read()
        m = module_of(f)
        top = rel(f).split(os.sep)
        for inc in INCLUDE.findall(src):
            target = resolve(inc, f)
            if target is None:
                continue
            graph[f].add(target)
            tm = module_of(target)
            if tm is None or tm == m:
                continue
            if m is not None and tm not in deps.get(m, []):
                fail(f"{rel(f)}: includes {inc}, but module {m} may use only "
                     f"[{' '.join(deps.get(m, []))}] (src/{m}/deps): an upward include")
            public = inc == f"{tm}/{tm}.h" or inc in EXTRA_PUBLIC
            own_test = top[0] == "tests" and len(top) > 2 and top[1] == tm
            if not public and not own_test and top[0] != "bench":
                fail(f"{rel(f)}: includes {inc}, a private header of module {tm} "
                     f"(use {tm}/{tm}.h)")
    return graph


def cycles(graph):
    """Strongly connected components with more than one node (iterative Tarjan)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                elif nxt in on:
                    low[v] = min(low[v], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def call_graph(objdir):
    defs, undef = {}, {}
    for d, _, names in os.walk(objdir):
        for n in names:
            if not n.endswith(".o"):
                continue
            o = os.path.join(d, n)
            src = os.path.join(ROOT, "src", os.path.relpath(o, objdir)[:-2] + ".c")
            if not os.path.exists(src):
                continue  # a stale object of a file that was moved or deleted
            nm = subprocess.run(["nm", o], capture_output=True, text=True, check=True).stdout
            defs[o] = {p[2] for p in (l.split() for l in nm.splitlines())
                       if len(p) == 3 and p[1] in "TDBRC"}
            undef[o] = {p[1] for p in (l.split() for l in nm.splitlines())
                        if len(p) == 2 and p[0] == "U"}
    owner = {s: o for o, ss in defs.items() for s in ss}
    graph = collections.defaultdict(set)
    for o, ss in undef.items():
        graph[o] |= {owner[s] for s in ss if s in owner and owner[s] != o}
        graph.setdefault(o, set())
    return graph


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--objects", help="object folder of a build (e.g. build/obj): also check "
                    "call cycles between .c files")
    ap.add_argument("--root", help="the tree to check (default: this script's repository)")
    args = ap.parse_args()
    if args.root:
        global ROOT
        ROOT = os.path.abspath(args.root)
    failures = []
    fail = failures.append
    deps = read_deps()
    check_modules(deps, fail)
    check_headers(deps, fail)
    files = source_files()
    graph = check_includes(files, deps, fail)
    for comp in cycles(graph):
        fail("include cycle: " + " <-> ".join(rel(c) for c in comp))
    n_objs = 0
    if args.objects:
        if not os.path.isdir(args.objects):
            fail(f"--objects {args.objects}: no such folder (build first)")
        else:
            cg = call_graph(args.objects)
            n_objs = len(cg)
            for comp in cycles(cg):
                fail("call cycle between files: " +
                     " <-> ".join(os.path.relpath(c, args.objects) for c in comp))
    for f in failures:
        print("check-layering: " + f)
    print(f"check-layering: {len(deps)} modules, {len(files)} files"
          + (f", {n_objs} objects" if args.objects else "")
          + (f": {len(failures)} problems" if failures else ": clean"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
