#!/usr/bin/env python3
"""Generates tests/fixtures/hlo/*.hlo: post-SPMD-partitioning HLO text of a 2-block toy DiT
(the `tiny` preset's widths: dim 64, 4 heads, ffn 128) compiled by JAX/XLA on CPU with 8 fake
devices. The shardings mirror AoiZora's lowering for the same candidates, so the C tests can
check that both front ends give the same collective kinds and bytes.

Run: python3 scripts/gen_hlo_fixtures.py   (needs `pip install jax`, CPU is enough)
"""
import os
import sys

os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

D, H, F, N, B, LAYERS = 64, 4, 128, 256, 2, 2
HD = D // H
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "hlo")


def block_ulysses(mesh, x, w):
    # x (B, N, D) sharded over (dp, sp) on batch and sequence; weights replicated
    wqkv, wo, w1, w2 = w
    qkv = jnp.einsum("bnd,de->bne", x, wqkv).reshape(B, N, 3, H, HD)
    # Ulysses: sequence-sharded -> head-sharded (one all-to-all of the fused q,k,v)
    qkv = jax.lax.with_sharding_constraint(qkv, NamedSharding(mesh, P("dp", None, None, "sp", None)))
    q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
    s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(HD)
    o = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, axis=-1), v)
    # back to sequence-sharded (second all-to-all)
    o = jax.lax.with_sharding_constraint(o, NamedSharding(mesh, P("dp", "sp", None, None)))
    x = x + jnp.einsum("bnd,de->bne", o.reshape(B, N, D), wo)
    h = jax.nn.gelu(jnp.einsum("bnd,df->bnf", x, w1))
    return x + jnp.einsum("bnf,fd->bnd", h, w2)


def block_tp(mesh, x, w):
    # Megatron TP over heads: column-parallel qkv / ffn_up, row-parallel o / ffn_down
    # (one all-reduce each); wqkv is (D, 3, H, HD) and wo (H, HD, D), sharded on H
    wqkv, wo, w1, w2 = w
    qkv = jnp.einsum("bnd,dthe->bnthe", x, wqkv)
    q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
    s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(HD)
    o = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, axis=-1), v)
    x = x + jnp.einsum("bqhd,hde->bqe", o, wo)
    x = jax.lax.with_sharding_constraint(x, NamedSharding(mesh, P("dp", None, None)))
    h = jax.nn.gelu(jnp.einsum("bnd,df->bnf", x, w1))
    x = x + jnp.einsum("bnf,fd->bnd", h, w2)
    return jax.lax.with_sharding_constraint(x, NamedSharding(mesh, P("dp", None, None)))


def compile_case(name, mesh_shape, axes, block, x_spec, w_specs, shapes):
    devs = np.array(jax.devices()[:8]).reshape(mesh_shape)
    mesh = Mesh(devs, axes)
    def step(x, ws):
        for w in ws:
            x = block(mesh, x, w)
        return x
    x = jax.ShapeDtypeStruct((B, N, D), jnp.bfloat16, sharding=NamedSharding(mesh, x_spec))
    ws = [tuple(jax.ShapeDtypeStruct(s, jnp.bfloat16, sharding=NamedSharding(mesh, sp))
                for s, sp in zip(shapes, w_specs)) for _ in range(LAYERS)]
    compiled = jax.jit(step, out_shardings=NamedSharding(mesh, x_spec)).lower(x, ws).compile()
    text = compiled.as_text()
    path = os.path.join(OUT, name + ".hlo")
    with open(path, "w") as f:
        f.write(text)
    print("wrote", path, len(text), "bytes")


def main():
    os.makedirs(OUT, exist_ok=True)
    print("jax", jax.__version__, "devices", len(jax.devices()), file=sys.stderr)
    rep = [P(None, None)] * 4
    compile_case("ulysses_dp2_sp4", (2, 4), ("dp", "sp"), block_ulysses, P("dp", "sp", None), rep,
                 [(D, 3 * D), (D, D), (D, F), (F, D)])
    tp = [P(None, None, "tp", None), P("tp", None, None), P(None, "tp"), P("tp", None)]
    compile_case("tp_dp2_tp4", (2, 4), ("dp", "tp"), block_tp, P("dp", None, None), tp,
                 [(D, 3, H, HD), (H, HD, D), (D, F), (F, D)])


if __name__ == "__main__":
    main()
