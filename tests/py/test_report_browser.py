"""The `zellige simulate --report` page in a real headless browser (Debian's chromium): the DOM
Chromium builds from the default command's report has the headline (winner, its makespan and
speed-up over each baseline, the cluster, model, mix and memory cap, the same numbers as the
--json line), Gantt charts on one shared time axis, the legend, and every failure's reason; the
file is at most 1 MB; a screenshot of the page shows the bars. A second, small run checks that a
plan over the memory cap is shown with its reason. Binaries: $ZG_BUILD (default "build").
Load times are printed (run with -s), never asserted."""
import html.parser
import json
import os
import re
import shutil
import struct
import subprocess
import tempfile
import time
import zlib

import pytest

BUILD = os.environ.get("ZG_BUILD", "build")
ZELLIGE = os.path.join(BUILD, "bin", "zellige")
CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")
                 if shutil.which(n)), None)
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium not found: scripts/install-deps.sh installs Debian's "
    "'chromium' (apt-get install chromium), which the report's browser test needs")

MAX_BYTES = 1_000_000
GANTT_LEFT, GANTT_W = 44, 900  # zg_html_gantt's plot area (src/report/html.c)
COLOURS = {"whole": (0x9E, 0xCA, 0xE1), "shard": (0x21, 0x71, 0xB5)}  # compute boxes


def chromium(*args, timeout=120):
    """Runs headless chromium with a throw-away profile; returns (stdout, seconds)."""
    with tempfile.TemporaryDirectory() as profile:
        t0 = time.monotonic()
        r = subprocess.run([CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu",
                            "--no-first-run", "--hide-scrollbars", f"--user-data-dir={profile}",
                            *args], capture_output=True, text=True, timeout=timeout)
        dt = time.monotonic() - t0
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout, dt


class Node:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent, self.children, self.text = tag, dict(attrs), parent, [], []

    def all_text(self):
        return "".join(t if isinstance(t, str) else t.all_text() for t in self.text)

    def iter(self):
        yield self
        for c in self.children:
            yield from c.iter()

    def find_all(self, tag, cls=None, **attrs):
        return [n for n in self.iter() if n.tag == tag
                and (cls is None or cls in n.attrs.get("class", "").split())
                and all(n.attrs.get(k) == v for k, v in attrs.items())]


class TreeBuilder(html.parser.HTMLParser):
    """The DOM Chromium serialised (--dump-dom) as a tree of Nodes."""
    VOID = {"meta", "br", "img", "link", "input", "hr", "col", "area", "base", "wbr"}

    def __init__(self):
        super().__init__()
        self.root = Node("#root", {}, None)
        self.cur = self.root

    def handle_starttag(self, tag, attrs):
        n = Node(tag, attrs, self.cur)
        self.cur.children.append(n)
        self.cur.text.append(n)
        if tag not in self.VOID:
            self.cur = n

    def handle_startendtag(self, tag, attrs):
        n = Node(tag, attrs, self.cur)
        self.cur.children.append(n)
        self.cur.text.append(n)

    def handle_endtag(self, tag):
        n = self.cur
        while n is not self.root and n.tag != tag:
            n = n.parent
        if n is not self.root:
            self.cur = n.parent

    def handle_data(self, data):
        self.cur.text.append(data)


def dom_of(path):
    out, dt = chromium("--dump-dom", "file://" + os.path.abspath(path))
    b = TreeBuilder()
    b.feed(out)
    return b.root, dt


def png_pixels(path):
    """(width, height, rows of RGB bytes) of an 8-bit RGB/RGBA, non-interlaced PNG."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype in (2, 6) and interlace == 0, (depth, ctype, interlace)
        elif kind == b"IDAT":
            idat += body
    raw, bpp = zlib.decompress(idat), 3 if ctype == 2 else 4
    stride, prev, rows = w * bpp, bytearray(w * bpp), []
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif f == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif f == 3:
            for i in range(stride):
                line[i] = (line[i] + ((line[i - bpp] if i >= bpp else 0) + prev[i]) // 2) & 255
        elif f == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b, c = prev[i], prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line) if bpp == 3 else bytes(v for i, v in enumerate(line) if i % 4 != 3))
        prev = line
    return w, h, rows


def simulate(tmp, name, *args):
    report = os.path.join(tmp, name)
    r = subprocess.run([ZELLIGE, "simulate", *args, "--report", report, "--json"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    line = [l for l in r.stdout.splitlines() if l.startswith("{")][-1]
    return report, json.loads(line)


@pytest.fixture(scope="module")
def default_report(tmp_path_factory):
    assert os.path.exists(ZELLIGE), f"{ZELLIGE} missing: run make -j2 first"
    # the README's command (its defaults: 16xA800, wan2.1-1.3b, every mix, 3 steps)
    return simulate(str(tmp_path_factory.mktemp("report")), "report.html")


def test_default_report_is_small(default_report):
    path, _ = default_report
    size = os.path.getsize(path)
    text = open(path, encoding="utf-8").read()
    shapes = len(re.findall(r"<(?:rect|line|text|path|circle|polygon)\b", text))
    print(f"\ndefault report: {size} bytes, {text.count('<rect')} rects, {shapes} SVG shapes")
    assert size <= MAX_BYTES, f"report is {size} bytes, over {MAX_BYTES}"
    assert shapes <= 5000, f"{shapes} SVG shapes: the Gantt should merge spans"
    assert "<script" not in text and "http://" not in text.replace(
        "http://www.w3.org/2000/svg", ""), "the page must be self-contained"


def test_default_report_dom(default_report):
    path, j = default_report
    root, dt = dom_of(path)
    _, dt_empty = chromium("--dump-dom", "about:blank")
    print(f"\nchromium --dump-dom: {dt:.2f} s for the report, {dt_empty:.2f} s for about:blank")
    v50 = j["mixes"]["V50"]
    runs = {p: c for p, c in v50.items() if c["failed"] == 0 and c["over_cap"] == 0}
    winner = min(runs, key=lambda p: runs[p]["makespan_s"])

    # the headline, first thing on the page: winner, makespan, speed-up over each baseline
    head = root.find_all("section", id="headline")
    assert len(head) == 1
    body = root.find_all("body")[0]
    assert body.children[0] is head[0], "the headline is not at the top"
    h1 = head[0].find_all("h1")[0].all_text()
    assert h1 == f"{winner} is fastest on V50: {runs[winner]['makespan_s']:.2f} s per step", h1
    items = [li.all_text() for li in head[0].find_all("li")]
    assert len(items) == len(v50) - 1
    for p, c in v50.items():
        if p == winner:
            continue
        li = [t for t in items if re.match(rf"(\d+\.\d+× faster than )?{re.escape(p)}\b", t)]
        assert len(li) == 1, (p, items)
        if c["failed"]:
            assert "failed" in li[0] and c["first_error"] in li[0], li[0]
        else:
            ratio = c["makespan_s"] / runs[winner]["makespan_s"]
            assert li[0].startswith(f"{ratio:.3f}× faster than {p}"), li[0]
    setting = head[0].find_all("p", cls="setting")[0].all_text()
    for needle in ("Cluster 16xA800", "model wan2.1-1.3b", "mix V50", "memory cap 76.0 GiB per rank"):
        assert needle in setting, (needle, setting)

    # legend: the kinds of boxes and the θ notation
    legend = root.find_all("ul", id="gantt-legend")
    assert len(legend) == 1
    kinds = " | ".join(li.all_text() for li in legend[0].find_all("li"))
    for k in ("compute", "communication", "idle", "makespan"):
        assert k in kinds, kinds
    gantt_text = root.find_all("section", id="gantts")[0].all_text()
    assert "θ = (q,h,k)" in gantt_text and "Ulysses" in gantt_text and "ring" in gantt_text

    # one Gantt per policy that planned V50's step 0, all on one time axis
    svgs = root.find_all("svg", cls="gantt")
    planned = [p for p, c in v50.items() if not c["failed"]]
    assert len(svgs) == len(planned) >= 2
    axes = {s.attrs["data-axis-s"] for s in svgs}
    assert len(axes) == 1, axes
    axis = float(axes.pop())
    makespans = [float(s.attrs["data-makespan-s"]) for s in svgs]
    assert abs(axis - max(makespans)) <= 1e-5 * axis  # the slowest plan spans the axis
    assert len({s.attrs["width"] for s in svgs}) == 1
    ticks = [[t.all_text() for t in s.find_all("text", cls="tick")] for s in svgs]
    assert all(t == ticks[0] for t in ticks) and len(ticks[0]) >= 3, ticks
    for s, m in zip(svgs, makespans):  # the same seconds are the same pixels in every chart
        line = s.find_all("line", cls="makespan")[0]
        assert abs(float(line.attrs["x1"]) - (GANTT_LEFT + GANTT_W * m / axis)) < 0.01
        assert len(s.find_all("rect")) >= 16  # bars on every rank

    # every failure's reason is in the page: in the Gantt section and the problems table
    problems = root.find_all("section", id="problems")[0]
    for p, c in v50.items():
        if c["failed"]:
            assert c["first_error"] in problems.all_text(), p
            missing = [f for f in root.find_all("figure", cls="gantt-missing")
                       if f.all_text().startswith(p + " ")]
            assert missing and c["first_error"] in missing[0].all_text(), p


def test_default_report_screenshot_shows_bars(default_report, tmp_path):
    numpy = pytest.importorskip("numpy", reason="numpy counts the screenshot's pixels")
    path, _ = default_report
    shot = str(tmp_path / "shot.png")
    _, dt = chromium("--window-size=1200,1800", f"--screenshot={shot}",
                     "file://" + os.path.abspath(path))
    print(f"\nchromium --screenshot: {dt:.2f} s")
    w, h, rows = png_pixels(shot)
    assert (w, h) == (1200, 1800)
    px = numpy.frombuffer(b"".join(rows), dtype=numpy.uint8).reshape(h, w, 3)
    counts = {k: int(numpy.all(px == c, axis=2).sum()) for k, c in COLOURS.items()}
    background = int(numpy.all(px == 255, axis=2).sum())
    # the top of the page holds the headline and the first Gantt charts: their compute boxes
    # cover many thousands of pixels (16 ranks x up to 900 px x 16 px per chart)
    assert counts["shard"] + counts["whole"] > 50_000, counts
    assert background < 0.9 * w * h, background


def test_over_cap_plan_is_shown_with_its_reason(tmp_path):
    assert os.path.exists(ZELLIGE), f"{ZELLIGE} missing: run make -j2 first"
    # KnapFormer choosing its layout by makespan alone goes over the memory cap here
    path, j = simulate(str(tmp_path), "cap.html", "--cluster", "8xA800", "--mix", "V50",
                       "--steps", "1", "--policies", "zellige,knapformer",
                       "--knap-ignore-memory")
    assert j["mixes"]["V50"]["knapformer"]["over_cap"] == 1
    root, _ = dom_of(path)
    head = root.find_all("section", id="headline")[0]
    assert head.find_all("h1")[0].all_text().startswith("zellige is fastest on V50")
    li = [l.all_text() for l in head.find_all("li", cls="over-cap")]
    assert len(li) == 1 and "knapformer" in li[0] and "exceed the memory cap" in li[0], li
    rows = [r.all_text() for r in root.find_all("tr", cls="over-cap")]
    assert len(rows) == 1 and "knapformer" in rows[0] and "peak" in rows[0], rows
    fig = root.find_all("figure", cls="over-cap")
    assert len(fig) == 1 and "OVER the 76.0 GiB memory cap" in fig[0].all_text()
