"""aoizora.jax.plan end to end on fake CPU devices (python/aoizora/jax.py).

One subprocess per device count (XLA_FLAGS=--xla_force_host_platform_device_count=N must be
set before jax is imported), each planning tiny Wan-style programs on v5e-8 / v5e-16:

* a DiT block and a 4-layer ``lax.scan`` stack: the C candidates and stage 1 pick what XLA
  compiles, the compiled HLO is priced under the placement search, and the sharded function
  built from the result (mesh in the chosen device order, in/out shardings, ring / Ulysses
  attention as shard_map) compiles, runs, and equals the unsharded function;
* ring attention is the program that was compiled and priced: a ring candidate's evidence
  has (ring - 1) collective-permutes per layer (the scan's trip count included), Ulysses
  candidates have all-to-alls, and the placement search never prices a winner above its
  default order;
* training (8 devices): one sharded Adam step equals the unsharded one;
* bad input gives clear errors (too few devices, an activation that is not (B, N, D), a
  function without aoizora.jax.attention).

Skipped with a message when jax is not installed. The package is built into build/python
(pip --target) when the installed one is not from the current sources.
"""
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SITE = os.path.join(ROOT, os.environ.get("ZG_BUILD", "build"), "python")

if importlib.util.find_spec("jax") is None:
    pytest.skip("jax is not installed (scripts/install-deps.sh installs it)",
                allow_module_level=True)


def _source_hash():
    spec = importlib.util.spec_from_file_location(
        "_zellige_sources", os.path.join(ROOT, "python", "zellige", "_sources.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.source_hash(ROOT, "aoizora")


def _installed_hash():
    code = "import aoizora._build_info as b, sys; sys.stdout.write(b.SOURCE_HASH)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd="/", env=dict(os.environ, PYTHONPATH=SITE), timeout=60)
    return r.stdout.strip() if r.returncode == 0 else None


@pytest.fixture(scope="module")
def site():
    if _installed_hash() != _source_hash():
        r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--upgrade",
                            "--no-build-isolation", "--target", SITE, "-q",
                            "--disable-pip-version-check", os.path.join(ROOT, "python")],
                           capture_output=True, text=True, timeout=900)
        if r.returncode != 0:
            pytest.fail("the python package does not build:\n" + (r.stdout + r.stderr)[-3000:])
    return SITE


WORKER = textwrap.dedent(r'''
    import json, os, sys
    n = int(sys.argv[1])
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={n}"
    from functools import partial
    import jax, jax.numpy as jnp, numpy as np
    from jax.sharding import NamedSharding
    import aoizora.jax as aj
    import aoizora
    from aoizora import AoizoraError, models

    topo = "v5e-8" if n == 8 else "v5e-16"
    B, N, D, H, F, T, L = 2, 64, 64, 8, 128, 16, 4
    key = jax.random.PRNGKey(0)
    kx, kc, kt, kp = jax.random.split(key, 4)
    x = jax.random.normal(kx, (B, N, D)).astype(jnp.bfloat16)
    ctx = jax.random.normal(kc, (B, T, D)).astype(jnp.bfloat16)
    tm = (0.1 * jax.random.normal(kt, (B, 6, D))).astype(jnp.bfloat16)
    out = {}

    def summary(res):
        return dict(label=res.label, pred=res.predicted_latency_s,
                    default=res.default_order_latency_s, order=list(res.device_order),
                    compiled=[dict(label=c.label, coll=c.collectives, best=c.best_s,
                                   default=c.default_s, error=c.error)
                              for c in res.candidates],
                    mesh_devices=[d.id for d in res.mesh.devices.flat],
                    phys=[aj.physical_devices(n)[i].id for i in res.device_order],
                    n_candidates=res.n_candidates, n_legal=res.n_legal,
                    named=all(isinstance(s, NamedSharding) and s.mesh == res.mesh
                              for s in jax.tree_util.tree_leaves(res.in_shardings)),
                    expl=res.explanation)

    def check(res, fn, args):
        y = res.jit(fn)(*res.shard(*args))
        f32 = [jax.tree_util.tree_map(lambda a: a.astype(jnp.float32), a) for a in args]
        y0 = jax.jit(fn)(*f32)
        return float(jnp.abs(y.astype(jnp.float32) - y0).max()), float(jnp.abs(y0).max())

    # 1. one block: the stage-1 winner plus a ring x Ulysses (x TP on 16) candidate
    p = models.init_wan_params(kp, D, F, dtype=jnp.bfloat16)
    blk = partial(models.wan_block, heads=H)
    blk.__name__ = "wan_block"
    inc = "dp=2,ring=2,uly=2,tp=1" if n == 8 else "dp=2,ring=2,uly=2,tp=2"
    res = aj.plan(blk, x, ctx, tm, p, topology=topo, top_k=1 if n == 8 else 0, include=[inc])
    out["block"] = summary(res)
    out["block"]["diff"] = check(res, blk, (x, ctx, tm, p))

    # 2. a 4-layer scan: a pure ring candidate, the trip count must reach the evidence
    ps = models.init_wan_params(kp, D, F, layers=L, dtype=jnp.bfloat16)
    stk = partial(models.wan_stack, heads=H)
    stk.__name__ = "wan_stack"
    ring = n // 2
    res = aj.plan(stk, x, ctx, tm, ps, topology=topo, top_k=0,
                  include=[f"dp=2,ring={ring},uly=1,tp=1"])
    out["scan"] = summary(res)
    out["scan"]["layers"] = res.program.layers
    out["scan"]["diff"] = check(res, stk, (x, ctx, tm, ps))

    if n == 8:
        # 3. training: one sharded Adam step equals the unsharded one
        pf = models.init_wan_params(kp, D, F, dtype=jnp.float32)
        xf, cf, tf = (a.astype(jnp.float32) for a in (x, ctx, tm))
        res = aj.plan(blk, xf, cf, tf, pf, topology=topo, mode="training", top_k=0,
                      include=["dp=2,ring=2,uly=2,tp=1,fsdp"])
        m = tuple(jax.tree_util.tree_map(jnp.zeros_like, (pf,)))
        args = (xf, cf, tf, pf)
        step = res.jit_train_step(blk)
        shard_m = jax.device_put(m, res.opt_state_shardings[0])
        shard_v = jax.device_put(m, res.opt_state_shardings[1])
        p1, _, _, loss = step(res.shard(*args), shard_m, shard_v, jnp.int32(0))
        r1, _, _, rloss = jax.jit(aj.adam_step(blk, (3,)))(args, m, m, jnp.int32(0))
        out["train"] = summary(res)
        out["train"]["loss"] = [float(loss), float(rloss)]
        out["train"]["pdiff"] = max(float(jnp.abs(a - b).max()) for a, b in zip(
            jax.tree_util.tree_leaves(p1), jax.tree_util.tree_leaves(r1)))
        out["train"]["fsdp_spec"] = str(res.param_shardings[0]["wq"].spec)

        # 5. the Alpa-style ILP's sharding compiled by XLA and priced like the others; at
        # 2048 tokens its per-op choice on 2x4 is batch x sequence for every op (K/V
        # all-gathered in attention), which the front end expresses exactly
        Ni, Di, Fi = 2048, 128, 512
        ki = jax.random.split(kp, 4)
        xi = jax.random.normal(ki[0], (B, Ni, Di)).astype(jnp.bfloat16)
        ci = jax.random.normal(ki[1], (B, T, Di)).astype(jnp.bfloat16)
        ti = (0.1 * jax.random.normal(ki[2], (B, 6, Di))).astype(jnp.bfloat16)
        pi = models.init_wan_params(ki[3], Di, Fi, dtype=jnp.bfloat16)
        res = aj.plan(blk, xi, ci, ti, pi, topology=topo, top_k=0, include=["alpa_ilp"])
        (c,) = res.candidates
        ri = res.select(c.label)
        out["ilp"] = summary(ri)
        out["ilp"].update(expert=c.expert, source=c.evidence_source, note=c.note,
                          lowering=c.lowering_s, stage_label=res.stage1["alpa_ilp"]["label"],
                          diff=check(ri, blk, (xi, ci, ti, pi)))
        # the mapping of a mixed per-op choice (Wan2.1-1.3B on v5e-16: heads over one mesh
        # dimension in attention, sequence elsewhere): Ulysses, with the qkv GEMM's
        # difference listed
        st = aoizora.candidates("v5e-16", tokens=32760, dim=1536, heads=12, ffn=8960,
                                batch=2, layers=1, text=512, alpa_ilp=True)
        cand, diffs = aj._ilp_candidate(st["alpa_ilp"])
        # near-duplicates: on v5e-8 the four FSDP variants of dp=2,ring=4 lead stage 1 and
        # lower to the same compute and blocking collectives (hidden weight all-gathers)
        st8 = aoizora.candidates("v5e-8", tokens=32760, dim=1536, heads=12, ffn=8960,
                                 batch=2, layers=30, text=512, top_k=12)
        fit = [c for c in st8["candidates"] if c["legal"]]
        reps, same = aj._distinct(fit, 4)
        out["dedup"] = dict(top=[c["label"] for c in fit[:6]], reps=[c["label"] for c in reps],
                            same=same, low={c["label"]: c["lowering"]["best_total_s"]
                                            for c in fit[:12]})
        out["ilp_map"] = dict(ilp=st["alpa_ilp"]["label"], label=cand["label"], diffs=diffs,
                              axes=cand["axis_names"], shape=cand["mesh_shape"])
        # 32760 tokens do not divide by 4 x 4: the nearest mapping that divides them
        import types
        fitc, fitd = aj._ilp_candidate(st["alpa_ilp"], types.SimpleNamespace(
            batch=2, tokens=32760, heads=12))
        out["ilp_map"]["fit"] = dict(label=fitc["label"], diffs=fitd)

        # 4. errors
        errs = {}
        for name, call in [
            ("devices", lambda: aj.plan(blk, x, ctx, tm, p, topology="v5e-16")),
            ("not_bnd", lambda: aj.plan(lambda a, q: a, x[0], p, topology=topo)),
            ("no_attn", lambda: aj.plan(lambda a, q: a @ q["wq"], x, p, topology=topo)),
            ("include", lambda: aj.plan(blk, x, ctx, tm, p, topology=topo,
                                         include=["dp=8,ring=1,uly=1,tp=1"])),
        ]:
            try:
                call()
                errs[name] = None
            except AoizoraError as e:
                errs[name] = str(e)
        out["errors"] = errs
    print("RESULT " + json.dumps(out))
''')


def _run(n):
    env = dict(os.environ, PYTHONPATH=SITE, JAX_PLATFORMS="cpu")
    env.pop("XLA_FLAGS", None)
    r = subprocess.run([sys.executable, "-c", WORKER, str(n)], capture_output=True, text=True,
                       cwd=ROOT, env=env, timeout=600)
    line = next((l for l in r.stdout.splitlines() if l.startswith("RESULT ")), None)
    assert r.returncode == 0 and line, f"{n} devices:\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}"
    return json.loads(line[len("RESULT "):])


@pytest.fixture(scope="module")
def runs(site):
    with ThreadPoolExecutor(2) as pool:
        r8, r16 = pool.map(_run, (8, 16))
    return {8: r8, 16: r16}


def _by_label(res, label):
    return next(c for c in res["compiled"] if c["label"] == label)


@pytest.mark.parametrize("n", [8, 16])
def test_block_plan_runs_sharded_and_equals_unsharded(runs, n):
    r = runs[n]["block"]
    diff, scale = r["diff"]
    assert diff <= 0.05 * max(1.0, scale), r  # bf16 tolerance
    assert r["named"]
    # the mesh holds the physical devices in the chosen order (CPU: by id)
    assert r["mesh_devices"] == r["phys"]
    assert sorted(r["order"]) == list(range(n))
    assert r["pred"] <= r["default"] * (1 + 1e-12)
    assert r["n_legal"] < r["n_candidates"]
    assert all(c["error"] is None for c in r["compiled"])
    # the winner is the cheapest compiled candidate
    assert r["pred"] == min(c["best"] for c in r["compiled"])
    inc = _by_label(r, "dp=2,ring=2,uly=2,tp=1" if n == 8 else "dp=2,ring=2,uly=2,tp=2")
    # ring over 2 ranks: one K/V permute per self-attention; Ulysses: all-to-alls
    assert inc["coll"]["collective-permute"]["count"] == 1, inc
    assert inc["coll"]["all-to-all"]["count"] >= 4, inc
    assert "chose " + r["label"] in r["expl"]


@pytest.mark.parametrize("n", [8, 16])
def test_scan_plan_prices_every_layer_and_equals_unsharded(runs, n):
    r = runs[n]["scan"]
    assert r["layers"] == 4
    diff, scale = r["diff"]
    assert diff <= 0.05 * max(1.0, scale), r
    (c,) = r["compiled"]
    ring = n // 2
    # ring attention compiled as written: (ring - 1) K/V permutes per layer, 4 layers
    assert c["coll"]["collective-permute"]["count"] == 4 * (ring - 1), c
    assert "all-to-all" not in c["coll"]
    # a ring of 4 on a 2x4 mesh without wraparound: a placement closing the ring is cheaper
    if n == 8:
        assert r["pred"] < r["default"] * 0.95, r
    assert r["mesh_devices"] == r["phys"]


def test_training_step_sharded_equals_unsharded(runs):
    r = runs[8]["train"]
    loss, ref = r["loss"]
    assert abs(loss - ref) <= 1e-3 * max(1.0, abs(ref))
    assert r["pdiff"] <= 1e-3
    # FSDP over the data axes: a weight's free dimension is split over dp, ring and sp
    assert "'dp'" in r["fsdp_spec"] and "'ring'" in r["fsdp_spec"], r["fsdp_spec"]


def test_device_order_follows_coords_where_devices_have_them(site):
    """TPU-like devices (with .coords) are numbered x fastest, then y, then z; without
    coords (CPU) by id. Index i of the order is chip i of the network model."""
    code = textwrap.dedent(r'''
        import json, types
        import aoizora.jax as aj
        D = lambda i, c=None: types.SimpleNamespace(id=i, coords=c, core_on_chip=0)
        # a 2x4 slice whose ids are not in coordinate order
        coords = {0: (1, 0, 0), 1: (0, 0, 0), 2: (0, 1, 0), 3: (1, 1, 0),
                  4: (0, 2, 0), 5: (1, 2, 0), 6: (1, 3, 0), 7: (0, 3, 0)}
        tpu = [aj.order_devices([D(i, c) for i, c in coords.items()])[k].id for k in range(8)]
        cpu = [d.id for d in aj.order_devices([D(i) for i in (3, 1, 2, 0)])]
        print(json.dumps([tpu, cpu]))
    ''')
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       env=dict(os.environ, PYTHONPATH=site, JAX_PLATFORMS="cpu"), timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    tpu, cpu = json.loads(r.stdout.strip().splitlines()[-1])
    assert tpu == [1, 0, 2, 3, 4, 5, 7, 6]
    assert cpu == [0, 1, 2, 3]


def test_errors_are_clear(runs):
    e = runs[8]["errors"]
    assert e["devices"] and "16 chips" in e["devices"] and "XLA_FLAGS" in e["devices"]
    assert e["not_bnd"] and "roles=" in e["not_bnd"]
    assert e["no_attn"] and "heads" in e["no_attn"]
    assert e["include"] and "batch 2 is not divisible by dp 8" in e["include"]


def test_alpa_ilp_is_compiled_priced_from_hlo_and_runs(runs):
    r = runs[8]["ilp"]
    assert r["expert"] == "alpa_ilp"
    assert r["source"] == "hlo"  # priced from XLA's compiled program, not our lowering
    assert r["stage_label"].startswith("ilp mesh 2x4 qkv:BS self_attn:BS"), r["stage_label"]
    assert r["label"] == "ilp dp=2,ag=4", r
    assert "expressed exactly" in r["note"], r["note"]
    (c,) = r["compiled"]
    # the sequence-sharded attention all-gathers K and V: the compiled program has
    # all-gathers and neither Ulysses' all-to-alls nor ring permutes
    assert c["coll"]["all-gather"]["count"] >= 1, c
    assert "all-to-all" not in c["coll"] and "collective-permute" not in c["coll"], c
    assert r["lowering"] > 0 and c["best"] > 0
    diff, scale = r["diff"]
    assert diff <= 0.05 * max(1.0, scale), r


def test_alpa_ilp_mixed_choice_maps_to_nearest_program(runs):
    m = runs[8]["ilp_map"]
    # mesh 4x4: qkv S,D and self_attn S,D, every other op S,S -> all-gather attention over
    # the first dimension, Ulysses over the second; qkv's column split becomes a sequence
    # split (Ulysses' all-to-all instead of an all-gather before the GEMM)
    assert m["ilp"].startswith("ilp mesh 4x4 qkv:SD self_attn:SD o_proj:SS"), m
    assert m["axes"] == ["ag", "sp"] and m["shape"] == [4, 4], m
    assert m["label"] == "ilp ag=4,sp=4", m
    assert m["diffs"] == ["qkv: SD -> SS"], m
    f = m["fit"]
    # heads over the second dimension as in the ILP's attention; its sequence-split GEMMs
    # become tensor-parallel (10 ops differ, each in one dimension)
    assert f["label"] == "ilp ag=4,tp=4", f
    assert "not divisible by" in f["diffs"][0] and "ilp ag=4,sp=4" in f["diffs"][0], f
    assert "ffn_up: SS -> SD" in f["diffs"] and "ffn_down: SS -> SK" in f["diffs"], f
    assert not any(d.startswith(("qkv", "self_attn")) for d in f["diffs"]), f


def test_near_duplicate_candidates_are_compiled_once(runs):
    d = runs[8]["dedup"]
    base = "dp=2,ring=4,uly=1,tp=1"
    fsdp = [base + ",fsdp", base + ",fsdp_sp", base + ",fsdp_dp"]
    assert d["top"][:4] == [base] + fsdp or set(d["top"][:4]) == {base, *fsdp}, d["top"]
    rep = d["top"][0]
    # one representative; the other three listed as the same program, never compiled
    assert d["reps"][0] == rep and not set(d["reps"]) & (set(d["top"][:4]) - {rep}), d
    assert {k: v for k, v in d["same"].items() if k in d["top"][:4]} == \
        {k: rep for k in d["top"][:4] if k != rep}, d["same"]
    assert len(d["reps"]) == 4 and len(set(d["reps"])) == 4
    # what is skipped prices the same as its representative in the lowering; what is kept
    # is a different program
    for k, v in d["same"].items():
        assert d["low"][k] == d["low"][v], (k, v)
