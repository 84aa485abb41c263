#!/usr/bin/env python3
"""update-doc-examples.py — the README's example outputs, from the commands themselves.

Each example in README.md sits between `<!-- example: NAME -->` and `<!-- /example -->` markers
as a fenced block: `$ COMMAND` lines, then the output. This script runs every command (in a
scratch folder, with build/bin on the path as the README writes it) and rewrites the block
with what the command printed now. A long per-mix table is cut to its first mix (KEEP below).

  scripts/update-doc-examples.py           rewrite README.md's examples in place
  scripts/update-doc-examples.py --check   exit 1 when an example's shape (its lines, with
                                           numbers masked) differs from a fresh run: timings
                                           and other numbers may differ, rows and columns not
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")
BLOCK = re.compile(r"(<!-- example: (\w+) -->\n```\n)(.*?)(```\n<!-- /example -->)", re.S)
# simulate prints one table per mix: the README keeps this one and says the others are alike
KEEP = "V50"


def run_block(body, scratch):
    """Runs the block's `$ ` commands; returns the new block text."""
    out = []
    for line in body.splitlines():
        if not line.startswith("$ "):
            continue
        cmd = line[2:]
        exe = cmd.replace("build/bin/", os.path.join(ROOT, "build", "bin") + "/", 1)
        r = subprocess.run(exe, shell=True, cwd=scratch, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"update-doc-examples: '{cmd}' failed ({r.returncode}): {r.stderr.strip()}")
        out.append(line)
        out.extend(trim_mixes(r.stdout.rstrip("\n").splitlines()))
    return "\n".join(out) + "\n"


def trim_mixes(lines):
    """Keeps simulate's KEEP table of the per-mix tables and names the others."""
    mix = re.compile(r"^V\d+$")
    if not any(mix.match(l) for l in lines):
        return lines
    head, sections, tail, cur = [], {}, [], None
    for l in lines:
        if mix.match(l):
            cur = l
            sections[cur] = []
        elif cur and l.startswith("wrote "):
            tail.append(l)
            cur = None
        elif cur:
            sections[cur].append(l)
        elif sections:
            tail.append(l)
        else:
            head.append(l)
    others = [m for m in sections if m != KEEP]
    kept = [KEEP] + sections.get(KEEP, [])
    while kept and kept[-1] == "":
        kept.pop()
    note = [""] if not others else ["", "(" + ", ".join(others[:-1]) +
                                    (" and " if len(others) > 1 else "") + others[-1] +
                                    " print the same table)", ""]
    return head + kept + note + tail


def shape(text):
    """A block with every number masked and runs of blanks folded (a timing column that gains a
    digit shifts its table's alignment): what --check compares."""
    return re.sub(r"[ \t]+", " ", re.sub(r"\d+(\.\d+)?", "#", text))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="compare shapes, write nothing")
    args = ap.parse_args()
    text = open(README).read()
    blocks = list(BLOCK.finditer(text))
    if not blocks:
        sys.exit("update-doc-examples: README.md has no <!-- example: NAME --> blocks")
    bad = []
    with tempfile.TemporaryDirectory() as scratch:
        new = text
        for m in blocks:
            fresh = run_block(m.group(3), scratch)
            if args.check:
                if shape(fresh) != shape(m.group(3)):
                    bad.append(m.group(2))
            else:
                new = new.replace(m.group(0), m.group(1) + fresh + m.group(4), 1)
    if args.check:
        for name in bad:
            print(f"update-doc-examples: README example '{name}' no longer matches its command's "
                  "output (run scripts/update-doc-examples.py)")
        print(f"update-doc-examples: {len(blocks)} examples, {len(bad)} stale")
        return 1 if bad else 0
    tmp = README + ".tmp"
    with open(tmp, "w") as f:
        f.write(new)
    os.replace(tmp, README)
    print(f"update-doc-examples: {len(blocks)} examples rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
