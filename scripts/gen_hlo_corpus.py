#!/usr/bin/env python3
"""Generates the HLO corpus tests/fixtures/hlo/corpus_*.hlo and tests/fixtures/hlo/manifest.json:
what XLA really emits for the constructs AoiZora's importer (src/aoizora/hlo.c) must read,
compiled by JAX on fake CPU devices (`--xla_force_host_platform_device_count=16`).

Post-partitioning programs (`jax.jit(f, in_shardings=..., out_shardings=...).lower(...)
.compile().as_text()`): a lax.scan over layers with FSDP weights (a while with a known trip
count), a conditional whose branches run different collectives, a while without a trip count,
8- and 16-way all-to-alls (tuples past 5 elements carry XLA's /*index=5*/ comments), a DiT-like
block scanned over layers with Ulysses attention (an 8-element loop state), a
shard_map ring of collective-permutes, Megatron TP, FSDP and Ulysses on 2-D meshes (the
mesh-axes replica_groups form), one with XLA's buffer assignment appended (peak memory). And
pre-partitioning samples the importer must refuse with a clear error: Shardy and GSPMD
`compiler_ir('hlo')` text and StableHLO `lower(...).as_text()`.

The manifest records, per file, what it is, the mesh, JAX's memory_analysis() of the compiled
program and, for the importer's options, the trip count to pass. tests/py/test_hlo_corpus.py
checks the importer against an independent Python reading of each file.

Run: python3 scripts/gen_hlo_corpus.py   (JAX on CPU; a few seconds per case)
"""
import glob
import json
import os
import shutil
import sys
import tempfile

DUMP = tempfile.mkdtemp(prefix="zg_hlo_dump_")
# must be set before jax is imported
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           " --xla_force_host_platform_device_count=16"
                           f" --xla_dump_to={DUMP} --xla_dump_hlo_as_text")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

try:
    from jax import shard_map  # jax >= 0.6
except ImportError:  # pragma: no cover
    from jax.experimental.shard_map import shard_map

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "hlo")
MANIFEST = []


def mesh_of(shape, names):
    n = int(np.prod(shape))
    return Mesh(np.array(jax.devices()[:n]).reshape(shape), names)


def sds(shape, mesh, spec, dtype=jnp.float32):
    return jax.ShapeDtypeStruct(shape, dtype, sharding=NamedSharding(mesh, spec))


def mem_total(compiled):
    m = compiled.memory_analysis()
    if m is None:
        return None
    return int(m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes -
               m.alias_size_in_bytes)


def write(name, text):
    path = os.path.join(OUT, name)
    with open(path, "w") as f:
        f.write(text)
    print(f"wrote {path} ({len(text)} bytes)", file=sys.stderr)


def buffer_assignment(module_name):
    """XLA's buffer assignment dump of the last compiled module named module_name."""
    files = sorted(glob.glob(os.path.join(DUMP, f"module_*.{module_name}.*after_optimizations-buffer-assignment.txt")))
    if not files:
        return None
    with open(files[-1]) as f:
        return f.read()


def post(name, what, mesh, fn, args, out_spec=None, trip_count=0, with_ba=False, **kw):
    """Compiles fn(*args) and writes the partitioned HLO text (and the manifest entry)."""
    jitted = jax.jit(fn, out_shardings=NamedSharding(mesh, out_spec) if out_spec is not None else None)
    lowered = jitted.lower(*args)
    compiled = lowered.compile()
    text = compiled.as_text()
    entry = {"file": name, "kind": "post-partition", "what": what,
             "mesh_shape": list(mesh.devices.shape), "axis_names": list(mesh.axis_names),
             "devices": int(mesh.devices.size), "memory_analysis_bytes": mem_total(compiled),
             "trip_count": trip_count}
    if with_ba:
        ba = buffer_assignment(text.split()[1].rstrip(","))
        if ba is None:
            sys.exit(f"{name}: no buffer assignment dump found in {DUMP}")
        text = text.rstrip("\n") + "\n\n" + ba
        entry["buffer_assignment"] = True
    entry.update(kw)
    write(name, text)
    MANIFEST.append(entry)
    return lowered


def pre(name, what, text, construct):
    write(name, text)
    MANIFEST.append({"file": name, "kind": "pre-partition", "what": what, "construct": construct})


D, F, L = 64, 128, 4   # width, FFN width, layers


def main():
    os.makedirs(OUT, exist_ok=True)
    print("jax", jax.__version__, "devices", len(jax.devices()), file=sys.stderr)

    # 1. lax.scan over layers, FSDP weights (all-gathered inside the loop body)
    m8 = mesh_of((8,), ("fsdp",))

    def scan_fsdp(x, w1, w2):
        def layer(x, w):
            a, b = w
            a = jax.lax.with_sharding_constraint(a, NamedSharding(m8, P()))
            b = jax.lax.with_sharding_constraint(b, NamedSharding(m8, P()))
            return x + jax.nn.gelu(x @ a) @ b, None
        x, _ = jax.lax.scan(layer, x, (w1, w2))
        return x
    lowered = post("corpus_scan_fsdp_8.hlo", "lax.scan over 4 layers, weights FSDP over 8",
                   m8, scan_fsdp,
                   (sds((16, D), m8, P("fsdp")), sds((L, D, F), m8, P(None, "fsdp")),
                    sds((L, F, D), m8, P(None, "fsdp"))), P("fsdp"))
    # the same program before partitioning: Shardy HLO, StableHLO
    pre("corpus_pre_shardy.hlo", "the scan before partitioning, compiler_ir('hlo') with Shardy",
        lowered.compiler_ir("hlo").as_hlo_text(), "xla.sdy")
    pre("corpus_pre_stablehlo.mlir", "the scan before partitioning, lower(...).as_text()",
        lowered.as_text(), "StableHLO")

    # 2. conditional: one branch all-reduces, the other all-gathers and permutes
    def cond_fn(p, a):
        def cheap(a):
            return jax.lax.psum(a, "x")
        def dear(a):
            g = jax.lax.all_gather(a, "x", tiled=True)
            return jax.lax.ppermute(g[: a.shape[0]] * 2, "x", [(i, (i + 1) % 8) for i in range(8)])
        return jax.lax.cond(p, cheap, dear, a)
    mx = mesh_of((8,), ("x",))
    sm = shard_map(cond_fn, mesh=mx, in_specs=(P(), P("x")), out_specs=P("x"), check_vma=False)
    post("corpus_cond_8.hlo", "lax.cond in shard_map: psum branch vs all_gather+ppermute branch",
         mx, sm, (jax.ShapeDtypeStruct((), jnp.bool_), sds((64, 16), mx, P("x"))), P("x"),
         expensive_branch_collectives=["all-gather", "collective-permute"])

    # 3. while without a trip count (fori_loop to a traced bound)
    def dyn_loop(n, a):
        return jax.lax.fori_loop(0, n, lambda i, a: jax.lax.psum(a, "x") * 0.5, a)
    sm = shard_map(dyn_loop, mesh=mx, in_specs=(P(), P("x")), out_specs=P("x"), check_vma=False)
    post("corpus_while_dynamic_8.hlo", "fori_loop to a traced bound: no known_trip_count",
         mx, sm, (jax.ShapeDtypeStruct((), jnp.int32), sds((64, 16), mx, P("x"))), P("x"),
         trip_count=6)

    # 4, 5. all-to-all over 8 and 16 devices (tuple forms with /*index=5*/ comments)
    for n in (8, 16):
        mn = mesh_of((n,), ("x",))
        sm = shard_map(lambda a: jax.lax.all_to_all(a, "x", 0, 0, tiled=True), mesh=mn,
                       in_specs=P("x"), out_specs=P("x"), check_vma=False)
        post(f"corpus_a2a_{n}.hlo", f"{n}-way all_to_all in shard_map", mn, sm,
             (sds((n * n, 16), mn, P("x")),), P("x"))

    # 6. shard_map ring: collective-permute in a fori_loop with a static trip count
    def ring(a):
        def step(i, c):
            acc, kv = c
            kv = jax.lax.ppermute(kv, "x", [(j, (j + 1) % 8) for j in range(8)])
            return acc + jnp.tanh(kv), kv
        acc, _ = jax.lax.fori_loop(0, 7, step, (a, a))
        return acc
    sm = shard_map(ring, mesh=mx, in_specs=P("x"), out_specs=P("x"), check_vma=False)
    post("corpus_ring_shard_map_8.hlo", "ring of 7 collective-permutes in shard_map (fori_loop)",
         mx, sm, (sds((64, 16), mx, P("x")),), P("x"))

    # 7. Megatron TP on a 4x4 mesh (dp, tp), 16 devices; buffer assignment appended
    m44 = mesh_of((4, 4), ("dp", "tp"))

    def mlp(x, w1, w2):
        h = jax.nn.gelu(x @ w1)
        return jax.lax.with_sharding_constraint(h @ w2, NamedSharding(m44, P("dp", None)))
    post("corpus_tp_dp4_tp4.hlo", "Megatron MLP: column- then row-parallel over tp (4x4 mesh)",
         m44, mlp, (sds((32, D), m44, P("dp", None)), sds((D, F), m44, P(None, "tp")),
                    sds((F, D), m44, P("tp", None))), P("dp", None), with_ba=True)

    # 8. FSDP (ZeRO-3 style) on 2x4: weights sharded over both axes, gathered before use
    m24 = mesh_of((2, 4), ("dp", "fsdp"))

    def fsdp(x, w1, w2):
        w1 = jax.lax.with_sharding_constraint(w1, NamedSharding(m24, P()))
        w2 = jax.lax.with_sharding_constraint(w2, NamedSharding(m24, P()))
        return jax.nn.gelu(x @ w1) @ w2
    post("corpus_fsdp_2x4.hlo", "FSDP MLP: weights sharded over (dp, fsdp), all-gathered",
         m24, fsdp, (sds((16, D), m24, P(("dp", "fsdp"))), sds((D, F), m24, P(("dp", "fsdp"))),
                     sds((F, D), m24, P(("dp", "fsdp")))), P(("dp", "fsdp")))

    # 9. Ulysses attention on 2x8 (dp, sp): sequence-sharded -> head-sharded all-to-alls
    m28 = mesh_of((2, 8), ("dp", "sp"))
    B, N, H, HD = 2, 64, 8, 8

    def ulysses(x, wqkv, wo):
        qkv = jnp.einsum("bnd,de->bne", x, wqkv).reshape(B, N, 3, H, HD)
        qkv = jax.lax.with_sharding_constraint(qkv, NamedSharding(m28, P("dp", None, None, "sp", None)))
        q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
        s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(HD)
        o = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, axis=-1), v)
        o = jax.lax.with_sharding_constraint(o, NamedSharding(m28, P("dp", "sp", None, None)))
        return x + jnp.einsum("bnd,de->bne", o.reshape(B, N, H * HD), wo)
    post("corpus_ulysses_dp2_sp8.hlo", "Ulysses attention on a 2x8 (dp, sp) mesh", m28, ulysses,
         (sds((B, N, H * HD), m28, P("dp", "sp", None)), sds((H * HD, 3 * H * HD), m28, P()),
          sds((H * HD, H * HD), m28, P())), P("dp", "sp", None))

    # 10. a DiT-like block scanned over 3 layers with Ulysses attention (the loop state is a
    # tuple of 8: XLA writes /*index=5*/ inside it)
    m24u = mesh_of((2, 4), ("dp", "sp"))
    Bs, Ns, Hs = 2, 32, 4

    def dit_scan(x, wqkv, wo, w1, w2, g, b):
        def layer(x, w):
            wqkv, wo, w1, w2, g, b = w
            h = x * g + b
            qkv = jnp.einsum("bnd,de->bne", h, wqkv).reshape(Bs, Ns, 3, Hs, D // Hs)
            qkv = jax.lax.with_sharding_constraint(qkv, NamedSharding(m24u, P("dp", None, None, "sp", None)))
            q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
            a = jax.nn.softmax(jnp.einsum("bqhd,bkhd->bhqk", q, k), axis=-1)
            o = jnp.einsum("bhqk,bkhd->bqhd", a, v)
            o = jax.lax.with_sharding_constraint(o, NamedSharding(m24u, P("dp", "sp", None, None)))
            x = x + jnp.einsum("bnd,de->bne", o.reshape(Bs, Ns, D), wo)
            return x + jax.nn.gelu(x @ w1) @ w2, None
        x, _ = jax.lax.scan(layer, x, (wqkv, wo, w1, w2, g, b))
        return x
    Ls = 3
    post("corpus_scan_dit_ulysses_2x4.hlo", "a DiT-like block (Ulysses attention + MLP) scanned over 3 layers on 2x4 (dp, sp)",
         m24u, dit_scan,
         (sds((Bs, Ns, D), m24u, P("dp", "sp", None)), sds((Ls, D, 3 * D), m24u, P()),
          sds((Ls, D, D), m24u, P()), sds((Ls, D, F), m24u, P()), sds((Ls, F, D), m24u, P()),
          sds((Ls, D), m24u, P()), sds((Ls, D), m24u, P())), P("dp", "sp", None))

    # 11. GSPMD (Shardy off) pre-partitioning HLO
    try:
        jax.config.update("jax_use_shardy_partitioner", False)
        m4 = mesh_of((4,), ("x",))
        low = jax.jit(lambda a: jnp.tanh(a) * 2).lower(sds((8, 4), m4, P("x")))
        pre("corpus_pre_gspmd.hlo", "before partitioning with GSPMD: sharding={devices=...}",
            low.compiler_ir("hlo").as_hlo_text(), "GSPMD")
    finally:
        jax.config.update("jax_use_shardy_partitioner", True)

    with open(os.path.join(OUT, "manifest.json"), "w") as f:
        json.dump({"generator": "scripts/gen_hlo_corpus.py", "jax": jax.__version__,
                   "backend": "cpu", "files": MANIFEST}, f, indent=1)
        f.write("\n")
    shutil.rmtree(DUMP, ignore_errors=True)


if __name__ == "__main__":
    main()
