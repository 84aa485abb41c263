"""Example DiT programs in JAX, written as a user would write them (unsharded).

Used by the tests, the benchmark (``bench/aoizora_jax.py``) and the docs. They call
:func:`aoizora.jax.attention` for attention, so that a plan can run it as Ulysses or ring
attention; without a plan it is plain softmax attention.

* :func:`wan_block` — one Wan2.1-style block: adaLN-modulated self-attention (RMS-normed q and
  k), cross-attention to the text context, GELU(tanh) FFN, residual adds.
* :func:`wan_stack` — ``L`` such blocks as one ``lax.scan`` over parameters stacked on a
  leading layer axis.
* :func:`hunyuan_single_block` — one HunyuanVideo-style single-stream block over the joint
  sequence (video tokens followed by text tokens): adaLN-modulated joint self-attention
  (RMS-normed q and k) and a GELU MLP in parallel from the same input, one gated residual.
"""
from __future__ import annotations

from typing import Any, Dict, Tuple

import jax
import jax.numpy as jnp
import numpy as np

from aoizora.jax import attention

Params = Dict[str, Any]

WAN_1_3B = dict(dim=1536, heads=12, ffn=8960, layers=30, text=512)
"""Wan2.1-1.3B widths (hidden 1536, 12 heads of 128, FFN 8960, 30 blocks, 512 text tokens)."""


def wan_param_shapes(dim: int, ffn: int) -> Dict[str, Tuple[int, ...]]:
    """Shapes of one block's parameters (weights stored as [in, out])."""
    return {
        "modulation": (6, dim),
        "wq": (dim, dim), "wk": (dim, dim), "wv": (dim, dim), "wo": (dim, dim),
        "norm_q": (dim,), "norm_k": (dim,),
        "norm3": (dim,),
        "cross_wq": (dim, dim), "cross_wk": (dim, dim), "cross_wv": (dim, dim),
        "cross_wo": (dim, dim),
        "ffn_w1": (dim, ffn), "ffn_b1": (ffn,), "ffn_w2": (ffn, dim), "ffn_b2": (dim,),
    }


def init_wan_params(key: jax.Array, dim: int, ffn: int, layers: int = 0,
                    dtype: Any = jnp.float32) -> Params:
    """Random parameters of one block (``layers == 0``) or of ``layers`` blocks stacked on a
    leading axis (for :func:`wan_stack`). Weights ~ N(0, 1/fan_in); norms 1; biases 0."""
    out: Params = {}
    shapes = wan_param_shapes(dim, ffn)
    keys = jax.random.split(key, len(shapes))
    for k, (name, shape) in zip(keys, sorted(shapes.items())):
        full = ((layers,) if layers else ()) + shape
        if name.startswith("norm"):
            v = jnp.ones(full, jnp.float32)
        elif name.endswith(("b1", "b2")):
            v = jnp.zeros(full, jnp.float32)
        elif name == "modulation":
            v = 0.1 * jax.random.normal(k, full, jnp.float32)
        else:
            v = jax.random.normal(k, full, jnp.float32) / np.sqrt(shape[0])
        out[name] = v.astype(dtype)
    return out


def wan_param_structs(dim: int, ffn: int, layers: int = 0,
                      dtype: Any = jnp.bfloat16) -> Params:
    """``jax.ShapeDtypeStruct`` stand-ins of the parameters (for planning without memory)."""
    return {n: jax.ShapeDtypeStruct(((layers,) if layers else ()) + s, dtype)
            for n, s in wan_param_shapes(dim, ffn).items()}


def _layer_norm(x: jax.Array) -> jax.Array:
    x32 = x.astype(jnp.float32)
    mu = x32.mean(-1, keepdims=True)
    var = ((x32 - mu) ** 2).mean(-1, keepdims=True)
    return ((x32 - mu) * jax.lax.rsqrt(var + 1e-6)).astype(x.dtype)


def _rms_norm(x: jax.Array, w: jax.Array) -> jax.Array:
    x32 = x.astype(jnp.float32)
    y = x32 * jax.lax.rsqrt((x32 * x32).mean(-1, keepdims=True) + 1e-6)
    return (y * w.astype(jnp.float32)).astype(x.dtype)


def wan_block(x: jax.Array, context: jax.Array, t_mod: jax.Array, p: Params,
              heads: int) -> jax.Array:
    """One Wan2.1-style block.

    x is (B, N, D) video tokens, context (B, T, D) text tokens, t_mod (B, 6, D) the timestep
    embedding projected to the six modulation vectors, p one block's parameters.
    """
    B, N, D = x.shape
    hd = D // heads
    e = (p["modulation"][None].astype(jnp.float32) + t_mod.astype(jnp.float32)).astype(x.dtype)
    shift1, scale1, gate1, shift2, scale2, gate2 = [e[:, i:i + 1] for i in range(6)]

    h = _layer_norm(x) * (1 + scale1) + shift1
    q = _rms_norm(h @ p["wq"], p["norm_q"]).reshape(B, N, heads, hd)
    k = _rms_norm(h @ p["wk"], p["norm_k"]).reshape(B, N, heads, hd)
    v = (h @ p["wv"]).reshape(B, N, heads, hd)
    a = attention(q, k, v).reshape(B, N, D)
    x = x + (a @ p["wo"]) * gate1

    T = context.shape[1]
    h = _rms_norm(x, p["norm3"])
    q = (h @ p["cross_wq"]).reshape(B, N, heads, hd)
    k = (context @ p["cross_wk"]).reshape(B, T, heads, hd)
    v = (context @ p["cross_wv"]).reshape(B, T, heads, hd)
    x = x + attention(q, k, v).reshape(B, N, D) @ p["cross_wo"]

    h = _layer_norm(x) * (1 + scale2) + shift2
    f = jax.nn.gelu(h @ p["ffn_w1"] + p["ffn_b1"], approximate=True)
    return x + (f @ p["ffn_w2"] + p["ffn_b2"]) * gate2


def wan_stack(x: jax.Array, context: jax.Array, t_mod: jax.Array, p: Params,
              heads: int) -> jax.Array:
    """``L`` Wan blocks as one ``lax.scan``; every leaf of p has a leading layer axis L."""

    def body(h, layer_params):
        return wan_block(h, context, t_mod, layer_params, heads), None

    out, _ = jax.lax.scan(body, x, p)
    return out


HUNYUAN_13B = dict(dim=3072, heads=24, ffn=12288, double_layers=20, single_layers=40, text=256)
"""HunyuanVideo-13B widths (hidden 3072, 24 heads of 128, MLP 12288, 20 double-stream and 40
single-stream blocks, 256 text tokens)."""


def hunyuan_param_shapes(dim: int, ffn: int) -> Dict[str, Tuple[int, ...]]:
    """One single-stream block's parameters (weights as [in, out]). HunyuanVideo fuses q, k, v
    and the MLP input into ``linear1`` and the attention output and MLP output into
    ``linear2``; they are kept apart here (the same arithmetic: linear2 applied to the
    concatenation [attn, mlp] is attn @ wo + mlp @ mlp_out)."""
    return {
        "modulation": (3, dim),
        "wq": (dim, dim), "wk": (dim, dim), "wv": (dim, dim), "wo": (dim, dim),
        "norm_q": (dim,), "norm_k": (dim,),
        "mlp_in": (dim, ffn), "mlp_b": (ffn,), "mlp_out": (ffn, dim),
    }


def hunyuan_param_structs(dim: int, ffn: int, dtype: Any = jnp.bfloat16) -> Params:
    """``jax.ShapeDtypeStruct`` stand-ins of one single-stream block's parameters."""
    return {n: jax.ShapeDtypeStruct(s, dtype) for n, s in hunyuan_param_shapes(dim, ffn).items()}


def init_hunyuan_params(key: jax.Array, dim: int, ffn: int, dtype: Any = jnp.float32) -> Params:
    """Random parameters of one single-stream block (weights ~ N(0, 1/fan_in), norms 1)."""
    out: Params = {}
    shapes = hunyuan_param_shapes(dim, ffn)
    for k, (name, shape) in zip(jax.random.split(key, len(shapes)), sorted(shapes.items())):
        if name.startswith("norm"):
            v = jnp.ones(shape, jnp.float32)
        elif name == "mlp_b":
            v = jnp.zeros(shape, jnp.float32)
        elif name == "modulation":
            v = 0.1 * jax.random.normal(k, shape, jnp.float32)
        else:
            v = jax.random.normal(k, shape, jnp.float32) / np.sqrt(shape[0])
        out[name] = v.astype(dtype)
    return out


def hunyuan_single_block(x: jax.Array, t_mod: jax.Array, p: Params, heads: int) -> jax.Array:
    """One HunyuanVideo-style single-stream block.

    x is (B, N, D): the joint sequence, video tokens followed by the text tokens; t_mod
    (B, 3, D) the timestep embedding projected to shift, scale and gate.
    """
    B, N, D = x.shape
    hd = D // heads
    e = (p["modulation"][None].astype(jnp.float32) + t_mod.astype(jnp.float32)).astype(x.dtype)
    shift, scale, gate = e[:, 0:1], e[:, 1:2], e[:, 2:3]
    h = _layer_norm(x) * (1 + scale) + shift
    q = _rms_norm(h @ p["wq"], p["norm_q"]).reshape(B, N, heads, hd)
    k = _rms_norm(h @ p["wk"], p["norm_k"]).reshape(B, N, heads, hd)
    v = (h @ p["wv"]).reshape(B, N, heads, hd)
    a = attention(q, k, v).reshape(B, N, D)
    m = jax.nn.gelu(h @ p["mlp_in"] + p["mlp_b"], approximate=True)
    return x + (a @ p["wo"] + m @ p["mlp_out"]) * gate
