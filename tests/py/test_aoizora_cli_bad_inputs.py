"""Bad input to the `aoizora` CLI: every case exits non-zero with one line on stderr that names
the option and the value, writes no output file, and leaves an existing output file untouched.
Binaries: $ZG_BUILD (default "build")."""
import os
import subprocess

import pytest

BUILD = os.environ.get("ZG_BUILD", "build")
AOIZORA = os.path.join(BUILD, "bin", "aoizora")
HLO_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "hlo")
HLO8 = os.path.join(HLO_DIR, "corpus_a2a_8.hlo")

GOOD_OP = '{"op":"compute","name":"c","flops":1,"bytes":1}'


def ev(num_devices=8, ops=GOOD_OP, repeat=1, extra=""):
    return ('{"version":1,"num_devices":%s,%s"segments":[{"name":"s","repeat":%s,"ops":[%s]}]}'
            % (num_devices, extra, repeat, ops))


# name: (args, files {name: text}, needles in the one stderr line). "{d}" is the temp dir.
CASES = {
    "hlo_missing": (["plan", "--hlo", "{d}/missing.hlo"], {}, ["--hlo", "missing.hlo"]),
    "hlo_empty": (["plan", "--hlo", "{d}/empty.hlo"], {"empty.hlo": ""}, ["--hlo", "empty.hlo", "ENTRY"]),
    "hlo_garbage": (["plan", "--hlo", "{d}/g.hlo"], {"g.hlo": "hello world\n"}, ["--hlo", "g.hlo", "line 1"]),
    "hlo_binary": (["plan", "--hlo", "{d}/b.hlo"], {"b.hlo": "HloModule m\0\1\2"}, ["--hlo", "b.hlo", "NUL"]),
    "hlo_bad_shape": (["evidence", "--hlo", "{d}/s.hlo"],
                      {"s.hlo": "HloModule m\nENTRY %e () -> f32[] {\n  %x = q99[2] add(%a, %b)\n}\n"},
                      ["--hlo", "s.hlo", "line 3", "shape"]),
    "hlo_stablehlo": (["evidence", "--hlo", "{d}/m.mlir"], {"m.mlir": "module @jit_f {\n}\n"},
                      ["--hlo", "m.mlir", "StableHLO"]),
    "hlo_wrong_topology_size": (["plan", "--hlo", HLO8, "--topology", "v5e-16"], {},
                                ["--hlo", "corpus_a2a_8.hlo", "8 devices", "--topology v5e-16", "16"]),
    "evidence_missing": (["plan", "--evidence", "{d}/none.json"], {}, ["--evidence", "none.json"]),
    "evidence_empty": (["plan", "--evidence", "{d}/e.json"], {"e.json": ""}, ["--evidence", "e.json"]),
    "evidence_garbage": (["plan", "--evidence", "{d}/e.json"], {"e.json": "{not json"}, ["--evidence", "e.json"]),
    "evidence_wrong_type": (["plan", "--evidence", "{d}/e.json"], {"e.json": ev('"eight"')},
                            ["--evidence", "e.json", "num_devices"]),
    "evidence_segments_object": (["plan", "--evidence", "{d}/e.json"],
                                 {"e.json": '{"version":1,"num_devices":8,"segments":{}}'},
                                 ["--evidence", "e.json", "segments"]),
    "evidence_nan": (["plan", "--evidence", "{d}/e.json"],
                     {"e.json": ev(ops='{"op":"compute","flops":NaN,"bytes":1}')}, ["--evidence", "e.json"]),
    "evidence_inf": (["plan", "--evidence", "{d}/e.json"],
                     {"e.json": ev(ops='{"op":"compute","flops":1e999,"bytes":1}')},
                     ["--evidence", "e.json", "flops"]),
    "evidence_negative_bytes": (["plan", "--evidence", "{d}/e.json"],
                                {"e.json": ev(ops='{"op":"compute","flops":1,"bytes":-5}')},
                                ["--evidence", "e.json", "-5"]),
    "evidence_huge_devices": (["plan", "--evidence", "{d}/e.json"], {"e.json": ev(num_devices="1e12")},
                              ["--evidence", "e.json", "num_devices"]),
    "evidence_repeat_zero": (["plan", "--evidence", "{d}/e.json"], {"e.json": ev(repeat=0)},
                             ["--evidence", "e.json", "repeat 0"]),
    "evidence_peak_mem_negative": (["plan", "--evidence", "{d}/e.json"],
                                   {"e.json": ev(extra='"peak_mem_bytes":-1,')},
                                   ["--evidence", "e.json", "peak_mem_bytes"]),
    "evidence_unknown_kind": (["plan", "--evidence", "{d}/e.json"],
                              {"e.json": ev(ops='{"op":"all-scatter","bytes":4,"groups":[[0,1]]}')},
                              ["--evidence", "e.json", "all-scatter"]),
    "evidence_id_out_of_range": (["plan", "--evidence", "{d}/e.json"],
                                 {"e.json": ev(ops='{"op":"all-reduce","bytes":4,"groups":[[0,99]]}')},
                                 ["--evidence", "e.json", "99"]),
    "batch_zero": (["plan", "--batch", "0"], {}, ["--batch 0", "1..4096"]),
    "batch_huge": (["plan", "--batch", "99999999999"], {}, ["--batch 99999999999 is out of range 1..4096"]),
    "batch_beyond_64_bits": (["plan", "--batch", "99999999999999999999999"], {},
                             ["--batch 99999999999999999999999 is out of range"]),
    "batch_negative": (["plan", "--batch", "-3"], {}, ["--batch -3", "out of range"]),
    "batch_odd_cfg": (["plan", "--batch", "3"], {}, ["--batch 3", "CFG"]),
    "frames_word": (["plan", "--frames", "abc"], {}, ["--frames 'abc'", "not an integer"]),
    "frames_nan": (["plan", "--frames", "nan"], {}, ["--frames 'nan'"]),
    "frames_float": (["plan", "--frames", "8.5"], {}, ["--frames '8.5'"]),
    "top_k_zero": (["plan", "--top-k", "0"], {}, ["--top-k 0", "1..1000"]),
    "model_unknown": (["plan", "--model", "nosuch-dit"], {}, ["--model nosuch-dit"]),
    "topology_unknown": (["plan", "--topology", "v9x-3"], {}, ["--topology v9x-3"]),
    "topology_json_inf": (["plan", "--topology", "{d}/t.json"], {"t.json": '{"preset":"v5e-8","link_bw":1e999}'},
                          ["--topology", "t.json", "link_bw"]),
    "topology_json_wrong_type": (["plan", "--topology", "{d}/t.json"], {"t.json": '{"preset":8}'},
                                 ["--topology", "t.json", "preset"]),
    "topology_device_coords_repeated": (["plan", "--topology", "{d}/t.json"],
                                        {"t.json": '{"preset":"v5e-4","device_coords":[[0,0],[1,0],[1,0],[1,1]]}'},
                                        ["--topology", "t.json", "device_coords[2] repeats"]),
    "topology_device_coords_outside": (["plan", "--topology", "{d}/t.json"],
                                       {"t.json": '{"preset":"v5e-4","device_coords":[[0,0],[1,0],[0,1],[5,1]]}'},
                                       ["--topology", "t.json", "= 5 is outside"]),
    "res_bad": (["plan", "--res", "12x"], {}, ["--res 12x"]),
    "ilp_solver_unknown": (["plan", "--ilp-solver", "gurobi"], {}, ["--ilp-solver 'gurobi'"]),
    "sharding_wrong_product": (["plan", "--sharding", "dp=3,uly=4"], {}, ["--sharding dp=3,uly=4", "8 devices"]),
    "sharding_unknown_axis": (["plan", "--sharding", "foo=2"], {}, ["--sharding foo=2"]),
    "sharding_over_memory": (["plan", "--model", "wan2.1-14b", "--topology", "v5e-4", "--sharding", "uly=4"], {},
                             ["--sharding uly=4", "GiB"]),
    "duplicate_option": (["plan", "--batch", "2", "--batch", "4"], {}, ["--batch given twice"]),
    "duplicate_flag": (["plan", "--training", "--training"], {}, ["--training given twice"]),
    "unknown_option": (["plan", "--bogus", "1"], {}, ["'--bogus'"]),
    "option_of_another_command": (["plan", "--search"], {}, ["--search", "not used by 'plan'"]),
    "model_with_hlo": (["plan", "--hlo", HLO8, "--model", "wan2.1-14b"], {}, ["--model", "--hlo", "corpus_a2a_8.hlo"]),
    "sharding_with_evidence": (["plan", "--evidence", "{d}/e.json", "--sharding", "dp=8"], {"e.json": ev()},
                               ["--sharding", "--evidence", "e.json"]),
    "hlo_and_evidence": (["plan", "--hlo", HLO8, "--evidence", "{d}/e.json"], {"e.json": ev()},
                         ["--hlo", "--evidence", "e.json"]),
    "trip_count_without_hlo": (["plan", "--trip-count", "4"], {}, ["--trip-count 4", "--hlo"]),
    "trip_count_zero": (["plan", "--hlo", HLO8, "--trip-count", "0"], {}, ["--trip-count 0", "out of range"]),
    "value_missing": (["plan", "--model"], {}, ["--model needs a value"]),
    "value_empty": (["plan", "--model", ""], {}, ["--model", "empty"]),
    "evidence_needs_a_program": (["evidence"], {}, ["--sharding", "--hlo"]),
    "output_dir_missing": (["evidence", "--hlo", HLO8, "-o", "{d}/no/such/dir/ev.json"], {}, ["-o", "ev.json"]),
}


def run(args):
    return subprocess.run([AOIZORA, *args], capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(not os.path.exists(AOIZORA), reason="aoizora not built")
@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("existing", [False, True], ids=["fresh", "existing"])
def test_bad_input_fails_cleanly(tmp_path, name, existing):
    args, files, needles = CASES[name]
    for fn, text in files.items():
        (tmp_path / fn).write_bytes(text.encode())
    args = [a.replace("{d}", str(tmp_path)) for a in args]
    out = tmp_path / "out.json"
    if "-o" not in args and args[0] in ("plan", "evidence"):
        args += ["-o", str(out)]
    if existing:
        out.write_text("KEEP")
    before = sorted(p.name for p in tmp_path.iterdir())
    r = run(args)
    assert r.returncode != 0, (args, r.stdout)
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, r.stderr
    for n in needles:
        assert n in lines[0], (n, lines[0])
    assert r.stdout == "", r.stdout
    # no output written, nothing left behind (temp files included), an existing output untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    if existing:
        assert out.read_text() == "KEEP"
    else:
        assert not out.exists()


@pytest.mark.skipif(not os.path.exists(AOIZORA), reason="aoizora not built")
def test_each_command_has_its_own_help():
    texts = {}
    for cmd in ("plan", "explain", "evidence", "price"):
        r = run([cmd, "--help"])
        assert r.returncode == 0 and r.stdout.startswith(f"usage: aoizora {cmd}"), r.stdout
        texts[cmd] = r.stdout
        assert run(["help", cmd]).stdout == r.stdout
    assert len(set(texts.values())) == 4
    assert "--search" in texts["price"] and "--search" not in texts["plan"]
    assert "--html" in texts["explain"] and "--html" not in texts["evidence"]
    # the topology help says where the wraparound is
    assert "4x4 v5e sub-slice has none" in texts["plan"]
