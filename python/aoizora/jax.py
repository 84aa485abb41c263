"""AoiZora for JAX: choose the mesh, the shardings and the device order of an unsharded JAX
function with the compiler in the loop.

::

    import aoizora.jax as aj
    res = aj.plan(fn, x, context, t_mod, params, topology="v5e-8")
    step = res.jit(fn)                  # jax.jit with res.in_shardings / res.out_shardings
    y = step(*res.shard(x, context, t_mod, params))
    print(res.explanation)

How it works (docs/aoizora.md, "Python front end"):

1. The function is traced once abstractly. :func:`attention` records the attention calls
   (heads, head width, self or cross); the arguments give the batch, sequence and hidden
   widths; weight shapes give the FFN width and, for parameters stacked on a leading layer
   axis (a ``lax.scan`` over layers), the depth. ``roles=`` overrides what is inferred.
2. The C candidate generator enumerates every mesh ``dp x ring x sp x tp`` (data, ring
   attention, Ulysses, tensor parallel) with replicated or FSDP-sharded weights, rejects the
   illegal ones with a reason, and stage 1 prices the rest placement-obliviously; the top
   ``top_k`` survive.
3. Each survivor becomes a real program: the arguments get ``NamedSharding`` s from their
   roles, :func:`attention` becomes a ``shard_map`` (Ulysses ``all_to_all`` over ``sp``, ring
   attention with ``ppermute`` of K/V over ``ring``), and XLA partitions and compiles it.
4. The C importer reads each compiled HLO into evidence, and the network model prices it in
   the default device order and under the placement search. The cheapest (sharding, order)
   wins; the result holds a ``jax.sharding.Mesh`` over the devices in the chosen order.

Every latency is a prediction of an uncalibrated network + roofline model.
"""
from __future__ import annotations

import contextlib
import dataclasses
import itertools
import math
import re
import threading
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from . import AoizoraError, candidates as _c_candidates, price_hlo, topology as _c_topology

__all__ = ["plan", "attention", "adam_step", "physical_devices", "order_devices", "PlanResult", "CompiledCandidate", "Layout", "AoizoraError",
           "ROLE_NAMES"]

ROLE_NAMES = ("batch", "seq", "hidden", "heads", "col", "row", "layer", None)
"""Per-dimension roles of an argument: ``batch`` (split over ``dp``), ``seq`` (over ``ring``
and ``sp``), ``heads``/``col``/``row`` (over ``tp``: a head axis, a weight's output features
(column-parallel), a weight's input features (row-parallel)), ``hidden``/``layer``/``None``
(not split). Weights are additionally FSDP-sharded when the candidate says so."""

_ROW_NAME = re.compile(r"(^|[_/.])(o|wo|out|o_proj|out_proj|proj_out|down|w_down|down_proj|w2|"
                       r"fc2|ffn_w2|ffn_down|linear2|cross_wo|cross_o)$")


# ---------------------------------------------------------------------------------------------
# Layout: which mesh axis plays which part; attention reads the active one.

@dataclasses.dataclass(frozen=True)
class Layout:
    """A candidate's mesh and the roles of its axes (``None`` = the axis is absent)."""

    mesh: Mesh
    dp: Optional[str] = None
    ring: Optional[str] = None
    sp: Optional[str] = None
    tp: Optional[str] = None
    fsdp: Tuple[str, ...] = ()
    ag: Optional[str] = None  # sequence axis whose self-attention all-gathers K/V (the ILP's S)

    @staticmethod
    def from_candidate(mesh: Mesh, cand: Dict[str, Any]) -> "Layout":
        names = set(mesh.axis_names)
        pick = lambda n: n if n in names else None  # noqa: E731
        dp = "dp" if "dp" in names else ("cfg" if "cfg" in names else None)
        fs = tuple(a for a in cand.get("fsdp_axes", ()) if a in names)
        return Layout(mesh, dp=dp, ring=pick("ring"), sp=pick("sp"), tp=pick("tp"), fsdp=fs,
                      ag=pick("ag"))

    def size(self, axis: Optional[str]) -> int:
        return int(self.mesh.shape[axis]) if axis else 1

    def seq_axes(self) -> Tuple[str, ...]:
        return tuple(a for a in (self.ag, self.ring, self.sp) if a)


_state = threading.local()


def _active() -> Any:
    return getattr(_state, "layout", None)


@contextlib.contextmanager
def _use(layout: Any) -> Iterator[None]:
    old = getattr(_state, "layout", None)
    _state.layout = layout
    try:
        yield
    finally:
        _state.layout = old


class _Recorder:
    """Active while the function is traced for inference of its dimensions."""

    def __init__(self) -> None:
        self.calls: List[Tuple[Tuple[int, ...], Tuple[int, ...]]] = []


def _under(fn: Callable[..., Any], layout: Any) -> Callable[..., Any]:
    """fn with ``layout`` active while it runs or is traced. A new function object each time:
    JAX caches traces by function identity, and the layout is not part of its key, so tracing
    ``fn`` itself under two layouts would reuse the first trace."""

    def traced(*args: Any) -> Any:
        with _use(layout):
            return fn(*args)

    traced.__name__ = getattr(fn, "__name__", "program")
    return traced


# ---------------------------------------------------------------------------------------------
# Attention: plain, Ulysses (all_to_all over sp), ring (ppermute of K/V over ring).

def _scaled(q: jax.Array) -> jax.Array:
    """q / sqrt(head width), in q's dtype (scaling q, not the scores, saves a pass over them)."""
    return (q.astype(jnp.float32) * (1.0 / math.sqrt(q.shape[-1]))).astype(q.dtype)


def _attn_block(qs: jax.Array, k: jax.Array,
                v: jax.Array) -> Tuple[jax.Array, jax.Array, jax.Array]:
    """One block of attention with its own softmax statistics: qs (B, Nq, H, hd) already
    scaled, k and v (B, Nk, H, hd). Returns o (B, H, Nq, hd) = sum_k p v (f32, not normalized),
    the row max m and the row sum l of p = exp(s - m) (f32, (B, H, Nq)). p is kept in the
    inputs' dtype and l sums exactly those values, so o / l is a convex combination."""
    s = jnp.einsum("bqhd,bkhd->bhqk", qs, k, preferred_element_type=jnp.float32)
    m = s.max(-1)
    p = jnp.exp(s - m[..., None]).astype(qs.dtype)
    l = p.astype(jnp.float32).sum(-1)
    o = jnp.einsum("bhqk,bkhd->bhqd", p, v, preferred_element_type=jnp.float32)
    return o, m, l


def _finish(o: jax.Array, l: jax.Array, dtype: Any) -> jax.Array:
    # o is (B, H, Nq, hd), l (B, H, Nq) -> (B, Nq, H, hd)
    return jnp.transpose(o / l[..., None], (0, 2, 1, 3)).astype(dtype)


def _plain_attention(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
    # q is (B, Nq, H, hd), k and v (B, Nk, H, hd); softmax statistics in f32
    o, _, l = _attn_block(_scaled(q), k, v)
    return _finish(o, l, q.dtype)


def _ring_attention(q: jax.Array, k: jax.Array, v: jax.Array, axis: str, n: int) -> jax.Array:
    """Ring attention inside shard_map: n steps, each attends to the K/V chunk it holds (the
    same block as plain attention) and passes K/V (stacked: one collective-permute) to the
    next rank of ``axis``; blocks merge exactly by their maxima and sums (f32)."""
    qs = _scaled(q)
    B, Nq, H, hd = q.shape
    m = jnp.full((B, H, Nq), -jnp.inf, jnp.float32)
    l = jnp.zeros((B, H, Nq), jnp.float32)
    o = jnp.zeros((B, H, Nq, hd), jnp.float32)
    kv = jnp.stack([k, v])
    perm = [(i, (i + 1) % n) for i in range(n)]
    for step in range(n):
        ob, mb, lb = _attn_block(qs, kv[0], kv[1])
        mn = jnp.maximum(m, mb)
        a, b = jnp.exp(m - mn), jnp.exp(mb - mn)
        o = o * a[..., None] + ob * b[..., None]
        l = l * a + lb * b
        m = mn
        if step + 1 < n:
            kv = jax.lax.ppermute(kv, axis, perm)
    return _finish(o, l, q.dtype)


def attention(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
    """Bidirectional softmax attention; q is (B, Nq, H, hd), k and v are (B, Nk, H, hd).

    Unsharded (no plan active) it is plain attention. Inside a plan (:meth:`PlanResult.jit`,
    ``with result:``, or while :func:`plan` compiles a candidate) it is the candidate's
    program, written as a ``shard_map`` over the mesh: self-attention (Nk == Nq) runs
    Ulysses over ``sp`` (all_to_all from sequence to heads and back), ring attention over
    ``ring`` (K/V passed with ``ppermute``) and, over ``ag`` (only the Alpa-style ILP's
    programs use it), an all-gather of K/V (XLA's partitioning of sequence-sharded attention);
    cross-attention (Nk != Nq, e.g. text) keeps the
    queries' sequence split and needs no communication. Heads are split over ``tp``.
    """
    lay = _active()
    if isinstance(lay, _Recorder):
        lay.calls.append((tuple(q.shape), tuple(k.shape)))
        return _plain_attention(q, k, v)
    if lay is None:
        return _plain_attention(q, k, v)
    seq = lay.seq_axes()
    seq_spec = seq if len(seq) > 1 else (seq[0] if seq else None)
    qspec = P(lay.dp, seq_spec, lay.tp, None)
    if k.shape[1] != q.shape[1]:  # cross-attention: K/V over the full text
        kspec = P(lay.dp, None, lay.tp, None)
        fn = jax.shard_map(_plain_attention, mesh=lay.mesh, in_specs=(qspec, kspec, kspec),
                           out_specs=qspec, check_vma=False)
        return fn(q, k, v)

    def local(ql: jax.Array, kl: jax.Array, vl: jax.Array) -> jax.Array:
        if lay.sp:  # Ulysses: sequence-split -> head-split
            ql, kl, vl = (jax.lax.all_to_all(t, lay.sp, 2, 1, tiled=True) for t in (ql, kl, vl))
        if lay.ag:  # sequence-split queries attend to all keys: all-gather K/V over ag
            kl, vl = (jax.lax.all_gather(t, lay.ag, axis=1, tiled=True) for t in (kl, vl))
        if lay.ring:
            o = _ring_attention(ql, kl, vl, lay.ring, lay.size(lay.ring))
        else:
            o = _plain_attention(ql, kl, vl)
        if lay.sp:
            o = jax.lax.all_to_all(o, lay.sp, 1, 2, tiled=True)
        return o

    fn = jax.shard_map(local, mesh=lay.mesh, in_specs=(qspec, qspec, qspec), out_specs=qspec,
                       check_vma=False)
    return fn(q, k, v)


# ---------------------------------------------------------------------------------------------
# Roles of the arguments.

def _path_str(path: Sequence[Any]) -> str:
    parts = []
    for p in path:
        for attr in ("key", "idx", "name"):
            if hasattr(p, attr):
                parts.append(str(getattr(p, attr)))
                break
        else:
            parts.append(str(p))
    return "/".join(parts)


@dataclasses.dataclass
class _Leaf:
    path: str
    shape: Tuple[int, ...]
    dtype: Any
    is_param: bool
    roles: Tuple[Optional[str], ...]


@dataclasses.dataclass
class _Program:
    """What :func:`plan` learned about the function."""

    leaves: List[_Leaf]
    treedef: Any
    batch: int
    tokens: int
    dim: int
    heads: int
    ffn: int
    layers: int
    text: int
    param_args: Tuple[int, ...]  # positions of the parameter pytrees
    out_roles: List[Tuple[Optional[str], ...]]
    out_shapes: List[Tuple[int, ...]]
    out_treedef: Any


def _act_roles(shape: Tuple[int, ...], B: int, N: int) -> Tuple[Optional[str], ...]:
    r: List[Optional[str]] = [None] * len(shape)
    if shape and shape[0] == B:
        r[0] = "batch"
    if len(shape) >= 2 and shape[1] == N:
        r[1] = "seq"
    return tuple(r)


def _param_roles(path: str, shape: Tuple[int, ...], D: int, F: int,
                 stacked: bool) -> Tuple[Optional[str], ...]:
    lead: Tuple[Optional[str], ...] = ("layer",) if stacked else ()
    s = shape[1:] if stacked else shape
    name = path.split("/")[-1]
    if len(s) == 2:
        a, b = s
        if _ROW_NAME.search(name) or (b == D and a == F and F != D):
            return lead + ("row", None)
        if a == D and (b == D or b == F or b % D == 0):
            return lead + (None, "col")
        return lead + (None, None)
    if len(s) == 1 and s[0] == F and F != D:
        return lead + ("col",)
    return lead + (None,) * len(s)


def _analyse(fn: Callable[..., Any], args: Tuple[Any, ...],
             roles: Optional[Dict[str, Tuple[Optional[str], ...]]], heads: Optional[int],
             layers: Optional[int]) -> _Program:
    flat, treedef = jax.tree_util.tree_flatten_with_path(args)
    if not flat:
        raise AoizoraError("plan: the function has no array arguments to shard")
    arrays = [(i, a) for i, a in enumerate(args) if hasattr(a, "shape") and hasattr(a, "dtype")]
    param_args = tuple(i for i, a in enumerate(args) if not (hasattr(a, "shape")))
    roles = dict(roles or {})
    # the activation x: roles["0"] or the first array argument with 3 dimensions (B, N, D)
    x_key = next((k for k, v in roles.items() if "seq" in (v or ())), None)
    if x_key is not None:
        xi = next((j for j, (p, _) in enumerate(flat) if _path_str(p) == x_key), None)
        if xi is None:
            raise AoizoraError(f"plan: roles names '{x_key}', which is not an argument path; "
                               f"paths are {[_path_str(p) for p, _ in flat][:12]}")
        xshape = tuple(flat[xi][1].shape)
        xr = roles[x_key]
        try:
            B = xshape[xr.index("batch")] if "batch" in xr else 1
            N = xshape[xr.index("seq")]
            D = xshape[xr.index("hidden")]
        except ValueError:
            raise AoizoraError(f"plan: roles['{x_key}'] = {xr} must name 'seq' and 'hidden' "
                               "dimensions of the activation") from None
    else:
        if not arrays or len(arrays[0][1].shape) != 3:
            got = f"shape {tuple(arrays[0][1].shape)}" if arrays else "no array argument"
            raise AoizoraError(
                "plan: cannot infer which argument is the activation x (B, N, D): the first "
                f"array argument has {got}. Pass roles={{'<arg index>': ('batch', 'seq', "
                "'hidden')}, ...} naming it (and the roles of other arguments if needed).")
        B, N, D = (int(s) for s in arrays[0][1].shape)

    # trace once abstractly: attention calls give the heads, the text length and the depth
    rec = _Recorder()
    out_shape = jax.eval_shape(_under(fn, rec), *args)
    selfs = [c for c in rec.calls if c[1][1] == c[0][1]]
    cross = [c for c in rec.calls if c[1][1] != c[0][1]]
    if heads is None:
        if not rec.calls:
            raise AoizoraError(
                "plan: the function calls no aoizora.jax.attention, so the number of heads is "
                "unknown; call aoizora.jax.attention(q, k, v) for attention (it is plain "
                "attention outside a plan) or pass heads=")
        heads = int(rec.calls[0][0][2])
    text = int(cross[0][1][1]) if cross else 0

    # parameters: stacked on a leading layer axis when every leaf shares it
    pleaves = [(p, a) for p, a in flat if int(_path_str(p).split("/")[0]) in param_args]
    lead = {int(a.shape[0]) for _, a in pleaves if len(a.shape) >= 2}
    stacked = bool(pleaves) and len(lead) == 1 and all(len(a.shape) >= 2 for _, a in pleaves)
    widths = [int(s) for _, a in pleaves for s in (a.shape[1:] if stacked else a.shape)
              if len(a.shape) - stacked == 2 and int(s) != D]
    F = max([w for w in widths if w > D] or [4 * D])
    if layers is None:  # a scanned stack traces its body once
        layers = max(1, len(selfs)) * (next(iter(lead)) if stacked else 1)

    leaves = []
    for p, a in flat:
        ps = _path_str(p)
        is_param = int(ps.split("/")[0]) in param_args
        shape = tuple(int(s) for s in a.shape)
        if ps in roles:
            r = tuple(roles[ps])
            if len(r) != len(shape) or any(x not in ROLE_NAMES for x in r):
                raise AoizoraError(f"plan: roles['{ps}'] = {r}: give one of {ROLE_NAMES} per "
                                   f"dimension of its shape {shape}")
        elif is_param:
            r = _param_roles(ps, shape, D, F, stacked)
        else:
            r = _act_roles(shape, B, N)
        leaves.append(_Leaf(ps, shape, a.dtype, is_param, r))
    out_flat, out_treedef = jax.tree_util.tree_flatten(out_shape)
    out_shapes = [tuple(int(d) for d in o.shape) for o in out_flat]
    out_roles = [_act_roles(sh, B, N) for sh in out_shapes]
    return _Program(leaves, treedef, B, N, D, int(heads), int(F), int(layers), text,
                    param_args, out_roles, out_shapes, out_treedef)


def _spec(lay: Layout, roles: Tuple[Optional[str], ...], shape: Tuple[int, ...],
          is_param: bool) -> P:
    """PartitionSpec of one leaf under a layout: roles -> axes (only where they divide)."""
    axes: List[Any] = []
    for r, n in zip(roles, shape):
        ax: Tuple[str, ...] = ()
        if r == "batch" and lay.dp:
            ax = (lay.dp,)
        elif r == "seq":
            ax = lay.seq_axes()
        elif r in ("heads", "col", "row") and lay.tp:
            ax = (lay.tp,)
        size = int(np.prod([lay.size(a) for a in ax])) if ax else 1
        axes.append(ax if ax and n % size == 0 else ())
    if is_param and lay.fsdp:  # FSDP: the first free weight dimension the data axes divide
        fsize = int(np.prod([lay.size(a) for a in lay.fsdp]))
        for i, (r, n) in enumerate(zip(roles, shape)):
            if not axes[i] and r != "layer" and n % fsize == 0 and len(shape) >= 2:
                axes[i] = lay.fsdp
                break
    return P(*[(a[0] if len(a) == 1 else a) if a else None for a in axes])


# ---------------------------------------------------------------------------------------------
# Devices and meshes.

def order_devices(devs: Sequence[Any]) -> List[Any]:
    """Devices in the network model's chip order: by coordinates (x fastest, then y, then z,
    then core) when every device has ``.coords`` (TPUs), by id otherwise (CPU, GPU)."""
    if devs and all(getattr(d, "coords", None) is not None for d in devs):
        def key(d: Any) -> Tuple[int, ...]:
            c = tuple(d.coords) + (0,) * (3 - len(d.coords))
            return (c[2], c[1], c[0], getattr(d, "core_on_chip", 0) or 0, d.id)
        return sorted(devs, key=key)
    return sorted(devs, key=lambda d: d.id)


def physical_devices(n: int) -> List[Any]:
    """The first n of ``jax.devices()`` in physical order (:func:`order_devices`): index i of
    this list is chip i of the network model (chips numbered by coordinates, x fastest)."""
    devs = list(jax.devices())
    if len(devs) < n:
        raise AoizoraError(
            f"plan: the topology has {n} chips but JAX sees {len(devs)} devices "
            f"({devs[0].platform if devs else 'none'}); on CPU set "
            f"XLA_FLAGS=--xla_force_host_platform_device_count={n} before importing jax")
    return order_devices(devs)[:n]


def _mesh(devs: List[Any], cand: Dict[str, Any], order: Optional[Sequence[int]]) -> Mesh:
    arr = np.empty(len(devs), dtype=object)
    for r, chip in enumerate(order if order is not None else range(len(devs))):
        arr[r] = devs[chip]
    return Mesh(arr.reshape(tuple(cand["mesh_shape"])), tuple(cand["axis_names"]))


# ---------------------------------------------------------------------------------------------
# Results.

@dataclasses.dataclass
class CompiledCandidate:
    """One compiled candidate and its prices (seconds, model predictions).

    ``lowering_s``: AoiZora's own lowering of the same sharding, best placement;
    ``default_s``/``best_s``: XLA's compiled program in the default order / best placement.
    """

    label: str
    mesh_shape: Tuple[int, ...]
    axis_names: Tuple[str, ...]
    stage1_s: float
    lowering_s: Optional[float]
    lowering_default_s: Optional[float]
    default_s: float
    best_s: float
    compute_s: float
    comm_s: float
    exposed_comm_s: float
    device_order: Tuple[int, ...]
    compile_s: float
    price_s: float
    collectives: Dict[str, Dict[str, float]]
    flops_per_device: float
    expert: Optional[str] = None
    error: Optional[str] = None
    cand: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)
    note: Optional[str] = None
    evidence_source: str = ""


class PlanResult:
    """The winner of :func:`plan`, as objects JAX accepts directly.

    Attributes: ``mesh`` (a ``jax.sharding.Mesh`` over the devices in the chosen order),
    ``in_shardings`` (a pytree matching the example arguments: one ``NamedSharding`` per
    array, i.e. per positional argument for array arguments), ``out_shardings``,
    ``param_shardings`` (the shardings of the parameter arguments, by position), ``skipped``
    (legal candidates that do not divide the program's batch, sequence or heads, with the
    reason) and, for
    training, ``opt_state_shardings`` (Adam's m and v: the same as the parameters);
    ``predicted_latency_s``, ``default_order_latency_s`` (same sharding, logical rank r on
    physical device r), ``label``, ``device_order``, ``candidates`` (every compiled
    candidate, best first: the runner-up table), ``explanation``, ``n_candidates``,
    ``n_legal``, ``compile_s`` and ``price_s`` (time spent compiling / pricing), ``same_as``
    (stage-1 survivors not compiled because AoiZora's lowering gives them the same program as
    a compiled one: label -> that one's label), and the
    stage-1 table ``stage1`` (the C library's candidates).
    """

    def __init__(self, **kw: Any) -> None:
        self.__dict__.update(kw)

    def select(self, label: str) -> "PlanResult":
        """The same plan with compiled candidate ``label`` chosen instead of the winner (e.g.
        an expert configuration or the Alpa-style ILP's program, to run or compare it): its
        mesh in its best device order, its shardings, its Ulysses / ring / all-gather
        attention."""
        c = next((c for c in self.candidates if c.label == label), None)
        if c is None or c.error is not None:
            have = [c.label for c in self.candidates if c.error is None]
            raise AoizoraError(f"select: '{label}' is not a compiled candidate of this plan "
                               f"({'compile failed' if c else 'compiled: ' + ', '.join(have)})")
        return _result(c, self.candidates, self._common)

    def __enter__(self) -> "PlanResult":
        self._ctx = _use(self.layout)
        self._ctx.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._ctx.__exit__(*exc)

    def jit(self, fn: Callable[..., Any], **kw: Any) -> Callable[..., Any]:
        """``jax.jit(fn, in_shardings=self.in_shardings, out_shardings=self.out_shardings)``
        with the plan active while JAX traces it, so that :func:`attention` runs the chosen
        Ulysses / ring program (the one that was compiled and priced)."""
        return jax.jit(_under(fn, self.layout), in_shardings=self.in_shardings,
                       out_shardings=self.out_shardings, **kw)

    def jit_train_step(self, fn: Callable[..., Any], lr: float = 1e-3) -> Callable[..., Any]:
        """The training step that was compiled and priced (:func:`adam_step` around ``fn``),
        jitted with the plan's shardings: ``step(args, m, v, t) -> (params, m, v, loss)``
        where ``args`` are fn's arguments, ``m``/``v`` Adam's state (f32, one pytree per
        parameter argument, sharded with :attr:`opt_state_shardings`) and ``t`` the step."""
        psh = self.param_shardings
        rep = NamedSharding(self.mesh, P())
        return jax.jit(adam_step(_under(fn, self.layout), self.program.param_args, lr),
                       in_shardings=(self.in_shardings, psh, psh, rep),
                       out_shardings=(psh, psh, psh, rep))

    def shard(self, *args: Any) -> Tuple[Any, ...]:
        """``jax.device_put`` of the arguments with :attr:`in_shardings`."""
        return tuple(jax.device_put(a, s) for a, s in zip(args, self.in_shardings))

    def table(self) -> str:
        """The compiled candidates, best first, as text."""
        rows = ["candidate                          stage1_s  lowering_s  compiled_default_s"
                "  compiled_best_s  compile_s"]
        for c in self.candidates:
            if c.error:
                rows.append(f"{c.label:34s} compile failed: {c.error[:60]}")
                continue
            low = f"{c.lowering_s:10.6f}" if c.lowering_s is not None else " " * 10
            rows.append(f"{c.label + (' [' + c.expert + ']' if c.expert else ''):34s} "
                        f"{c.stage1_s:8.6f}  {low}  {c.default_s:18.6f}  {c.best_s:15.6f}"
                        f"  {c.compile_s:9.2f}")
            if c.note:
                rows.append(f"    ({c.note})")
        for lab, r in self.same_as.items():
            rows.append(f"{lab:34s} same program as {r} in AoiZora's lowering (not compiled)")
        return "\n".join(rows)

    def __repr__(self) -> str:
        return (f"PlanResult({self.label}, mesh {dict(self.mesh.shape)}, predicted "
                f"{self.predicted_latency_s:.6g} s on {self.topology})")


# ---------------------------------------------------------------------------------------------
# The planner.

def _shardings(prog: _Program, lay: Layout) -> Tuple[Any, Any]:
    ins = [NamedSharding(lay.mesh, _spec(lay, l.roles, l.shape, l.is_param)) for l in prog.leaves]
    outs = [NamedSharding(lay.mesh, _spec(lay, r, sh, False))
            for r, sh in zip(prog.out_roles, prog.out_shapes)]
    return (jax.tree_util.tree_unflatten(prog.treedef, ins),
            jax.tree_util.tree_unflatten(prog.out_treedef, outs))


def adam_step(fn: Callable[..., Any], param_args: Tuple[int, ...],
              lr: float = 1e-3) -> Callable[..., Any]:
    """The training step :func:`plan` compiles in ``mode="training"``: loss = mean of the
    square of fn's first output (in f32), gradients w.r.t. the arguments at ``param_args``,
    an Adam update (f32 state m, v). Signature ``(args, m, v, t) -> (params, m, v, loss)``
    with ``params``, ``m``, ``v`` tuples over ``param_args``."""

    def step(args: Tuple[Any, ...], m: Any, v: Any, t: jax.Array) -> Any:
        params = tuple(args[i] for i in param_args)

        def loss_fn(ps: Tuple[Any, ...]) -> jax.Array:
            full = list(args)
            for i, p in zip(param_args, ps):
                full[i] = p
            out = fn(*full)
            return jnp.mean(jnp.square(jnp.asarray(jax.tree_util.tree_leaves(out)[0],
                                                   jnp.float32)))

        loss, g = jax.value_and_grad(loss_fn)(params)
        b1, b2, eps = 0.9, 0.999, 1e-8
        m = jax.tree_util.tree_map(lambda a, b: b1 * a + (1 - b1) * b.astype(jnp.float32), m, g)
        v = jax.tree_util.tree_map(lambda a, b: b2 * a + (1 - b2) * jnp.square(
            b.astype(jnp.float32)), v, g)
        tf = t.astype(jnp.float32) + 1
        upd = jax.tree_util.tree_map(
            lambda p, a, b: (p.astype(jnp.float32) - lr * (a / (1 - b1 ** tf)) /
                             (jnp.sqrt(b / (1 - b2 ** tf)) + eps)).astype(p.dtype), params, m, v)
        return upd, m, v, loss

    return step


def _misfit(prog: _Program, c: Dict[str, Any]) -> Optional[str]:
    """Why candidate c cannot shard this program exactly (None: it can)."""
    sp = c["ring"] * c["uly"] * c.get("ag", 1)
    if prog.batch % c["dp"]:
        return f"{c['label']}: batch {prog.batch} is not divisible by dp {c['dp']}"
    if prog.tokens % sp:
        return (f"{c['label']}: the sequence of {prog.tokens} tokens is not divisible by "
                f"ring x ulysses{' x all-gather' if c.get('ag', 1) > 1 else ''} = {sp} (the "
                "program is not padded)")
    if prog.heads % (c["tp"] * c["uly"]):
        return f"{c['label']}: {prog.heads} heads are not divisible by tp x ulysses"
    return None


# The Alpa-style ILP's per-op roles of a mesh dimension (R replicated, B batch, S sequence, D
# output features / heads, K contraction) -> the front end's axis for that dimension, decided by
# the self-attention op's role and the GEMMs' majority role on it:
#   attention B -> dp;  attention S -> ag (sequence split everywhere, K/V all-gathered);
#   attention D with sequence-split GEMMs -> sp (Ulysses: heads inside attention, sequence
#   outside); attention D otherwise -> tp (heads; column/row-parallel GEMMs);
#   attention R -> ag if the GEMMs split the sequence, tp if they split features, else rep.
_FRONT_ROLES = {  # what the front end does on an axis, per ILP op kind (in the ILP's letters)
    "dp": {"elem": "B", "gemm": "B", "self_attn": "B", "cross_attn": "B"},
    "ag": {"elem": "S", "gemm": "S", "self_attn": "S", "cross_attn": "S"},
    "sp": {"elem": "S", "gemm": "S", "self_attn": "D", "cross_attn": "S"},
    "rep": {"elem": "R", "gemm": "R", "self_attn": "R", "cross_attn": "R"},
}
_ROW_OPS = ("o_proj", "cross_o", "ffn_down")  # row-parallel under tp (their input is split)


def _front_role(axis: str, op: Dict[str, Any]) -> str:
    if axis == "tp":
        if op["kind"] == "elem":
            return "R"
        return "K" if op["name"] in _ROW_OPS else "D"
    return _FRONT_ROLES[axis][op["kind"]]


def _ilp_candidate(ilp: Dict[str, Any],
                   prog: Optional["_Program"] = None) -> Tuple[Dict[str, Any], List[str]]:
    """The Alpa-style ILP's sharding as a front-end candidate (mesh, axis roles, FSDP) and the
    list of its per-op choices the front end cannot express (op: ILP roles -> compiled roles,
    one letter per mesh dimension). With ``prog``, when that program's batch, sequence or
    heads are not divisible by the mapped degrees, the assignment of axis roles to the mesh
    dimensions that divides them and differs from the ILP in the fewest (op, dimension) roles
    is taken instead, and the reason is the first difference listed."""
    mesh = [int(m) for m in ilp["mesh"]]
    primary = _ilp_axes(ilp)
    cand, diffs, _ = _ilp_build(ilp, primary)
    if prog is None or _misfit(prog, cand) is None:
        return cand, diffs
    why = _misfit(prog, cand)
    best = None
    live = [d for d in range(2) if mesh[d] > 1]
    for combo in itertools.product(("dp", "ag", "sp", "tp", "rep"), repeat=len(live)):
        axes = list(primary)
        for d, r in zip(live, combo):
            axes[d] = r
        c, df, score = _ilp_build(ilp, axes)
        if _misfit(prog, c) is None and (best is None or score < best[2]):
            best = (c, df, score)
    if best is None:
        return cand, diffs
    c, df, _ = best
    df.insert(0, f"the direct mapping {cand['label']} does not fit ({why.split(': ', 1)[-1]}); "
                 f"nearest that does")
    c["ilp_differences"] = df
    return c, df


def _ilp_axes(ilp: Dict[str, Any]) -> List[str]:
    """The front end's role of each ILP mesh dimension (the rule above)."""
    ops = ilp["ops"]
    mesh = [int(m) for m in ilp["mesh"]]
    attn = next((o for o in ops if o["kind"] == "self_attn"), None)
    gemms = [o for o in ops if o["kind"] == "gemm"]
    axes: List[str] = []
    for d in range(2):
        if mesh[d] == 1:
            axes.append("rep")
            continue
        votes: Dict[str, int] = {}
        for o in gemms:
            votes[o["roles"][d]] = votes.get(o["roles"][d], 0) + 1
        g = max(sorted(votes), key=lambda r: votes[r]) if votes else "R"
        a = attn["roles"][d] if attn else g
        if a == "B":
            axes.append("dp")
        elif a == "S":
            axes.append("ag")
        elif a in "DK":
            axes.append("sp" if g == "S" else "tp")
        else:
            axes.append("ag" if g == "S" else "tp" if g in "DK" else "dp" if g == "B" else "rep")
    return axes


def _ilp_build(ilp: Dict[str, Any],
               axes: List[str]) -> Tuple[Dict[str, Any], List[str], int]:
    """The candidate for one role per ILP mesh dimension, its per-op differences and their
    count in (op, dimension) roles."""
    ops = ilp["ops"]
    mesh = [int(m) for m in ilp["mesh"]]
    fs_ops = [o for o in ops if o["kind"] != "elem" and o["fsdp"]]
    fsdp = len(fs_ops) * 2 > len([o for o in ops if o["kind"] != "elem"])
    # the front end's mesh: the ILP's dimensions in order, equal roles merged into one axis
    names: List[str] = []
    shape: List[int] = []
    for d, ax in enumerate(axes):
        if mesh[d] == 1:
            continue
        if ax in names:
            shape[names.index(ax)] *= mesh[d]
        else:
            names.append(ax)
            shape.append(mesh[d])
    if not names:
        names, shape = ["rep"], [mesh[0] * mesh[1]]
    size = {n: v for n, v in zip(names, shape)}
    diffs = []
    score = 0
    for o in ops:
        want = o["roles"]
        got = "".join(_front_role(axes[d], o) if mesh[d] > 1 else want[d] for d in range(2))
        if got != want:
            diffs.append(f"{o['name']}: {want} -> {got}")
            score += sum(a != b for a, b in zip(want, got))
    if fs_ops and not fsdp:
        diffs.append("FSDP of " + ", ".join(o["name"] for o in fs_ops) + " dropped")
    elif fsdp and len(fs_ops) < len([o for o in ops if o["kind"] != "elem"]):
        diffs.append("FSDP applied to every weight (the ILP shards "
                     + ", ".join(o["name"] for o in fs_ops) + ")")
    fs_axes = [n for n in names if n in ("dp", "ag", "sp", "rep")] if fsdp else []
    label = "ilp " + ",".join(f"{n}={v}" for n, v in zip(names, shape)) + (",fsdp" if fsdp else "")
    cand = dict(label=label, dp=size.get("dp", 1), ring=1, uly=size.get("sp", 1),
                tp=size.get("tp", 1), ag=size.get("ag", 1), fsdp="fsdp" if fsdp else "none",
                fsdp_axes=fs_axes, mesh_shape=shape, axis_names=names, legal=True,
                stage1_s=math.nan, lowering=dict(best_total_s=ilp.get("best_total_s"),
                                                 default_total_s=ilp.get("default_total_s")),
                ilp_label=ilp.get("label"), ilp_differences=diffs)
    return cand, diffs, score


def _abstract(x: Any) -> Any:
    return jax.tree_util.tree_map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), x)


def plan(fn: Callable[..., Any], *example_args: Any, topology: str = "v5e-8",
         mode: str = "inference", roles: Optional[Dict[str, Tuple[Optional[str], ...]]] = None,
         heads: Optional[int] = None, layers: Optional[int] = None, top_k: int = 4,
         baselines: bool = False, include: Sequence[str] = (), name: Optional[str] = None,
         verbose: bool = False) -> PlanResult:
    """Chooses the mesh, the shardings and the device order of ``fn`` on ``topology``.

    ``fn`` is an unsharded JAX function; ``example_args`` are arrays or
    ``jax.ShapeDtypeStruct`` s (nothing is allocated or run). Array arguments are
    activations: the first 3-D one is x (B, N, D); others split their batch dimension (and a
    dimension of length N). Non-array arguments (dicts, lists of arrays) are parameters:
    2-D weights are column- or row-parallel by shape and name (``wo``, ``w2``, ``*_down``...
    are row-parallel), parameters with a common leading axis are a stack of layers.
    ``roles`` maps an argument path (``"0"``, ``"3/wq"``: position, then pytree keys) to one
    role per dimension (:data:`ROLE_NAMES`) where the inference is wrong; ``heads`` and
    ``layers`` override what the trace finds.

    ``mode="training"`` compiles a training step (loss = mean(fn(...)^2), gradients of the
    parameter arguments, Adam) instead of the forward pass; the result then has
    ``param_shardings`` and ``opt_state_shardings``.

    ``top_k`` candidates survive stage 1 and are compiled (0: none), skipping near-duplicates
    (``same_as``: a candidate whose own lowering has the same compute, the same blocking
    collectives and the same prices as a better one, e.g. an FSDP variant whose weight
    all-gathers are hidden, is listed, not compiled); ``baselines=True`` also
    compiles the expert configurations and ``include`` the candidates with these labels (e.g.
    ``"dp=2,ring=4,uly=1,tp=1"``, or ``"alpa_ilp"``; for comparison, and they can win).
    The Alpa-style ILP's per-op sharding (``baselines=True`` or ``include=["alpa_ilp"]``)
    is compiled as the nearest program the front end expresses (mesh axes ``dp``, ``ag``:
    sequence split with K/V all-gathered in attention, ``sp``, ``tp``, ``rep``: replicated);
    its :attr:`CompiledCandidate.note` lists the ops whose sharding differs. Raises
    :class:`aoizora.AoizoraError` with the reason when nothing is legal or an argument
    cannot be understood.
    """
    if mode not in ("inference", "training"):
        raise AoizoraError(f"plan: mode '{mode}' must be 'inference' or 'training'")
    t_start = time.perf_counter()
    topo = _c_topology(topology)
    n_dev = int(topo["n_devices"])
    devs = physical_devices(n_dev)
    if all(getattr(d, "coords", None) is not None for d in devs) and topo["kind"] == "grid":
        ext = [max(int(d.coords[i]) for d in devs) + 1 for i in range(len(topo["dims"]))]
        if ext != list(topo["dims"]):
            raise AoizoraError(
                f"plan: the devices span coordinates {'x'.join(map(str, ext))} but topology "
                f"{topo['name']} is {'x'.join(map(str, topo['dims']))}; pass the slice's own "
                f"shape, e.g. topology='{topo['device'].replace('tpu-', '')}:"
                f"{'x'.join(map(str, ext))}'")
    args = tuple(_abstract(a) for a in example_args)
    prog = _analyse(fn, args, roles, heads, layers)
    training = mode == "training"
    stage = _c_candidates(topology, tokens=prog.tokens, dim=prog.dim, heads=prog.heads,
                          ffn=prog.ffn, batch=prog.batch, layers=prog.layers, text=prog.text,
                          training=training, top_k=max(1, 3 * top_k),
                          alpa_ilp=baselines or "alpa_ilp" in include,
                          name=name or getattr(fn, "__name__", "program"))
    cands = stage["candidates"]
    # the C model pads the sequence; a JAX program cannot: candidates whose degrees do not
    # divide the program's batch, sequence or heads are skipped (the next one survives)
    skipped = {c["label"]: why for c in cands if c["legal"] and (why := _misfit(prog, c))}
    fit = [c for c in cands if c["legal"] and c["label"] not in skipped]
    # near-duplicates: a survivor whose own lowering has the same compute and blocking
    # collectives as an earlier one (differing at most in overlapped traffic, e.g. the FSDP
    # weight prefetch) and the same prices is not compiled: "same program as" the earlier one
    reps, same_as = _distinct(fit, top_k)
    todo: List[Tuple[Dict[str, Any], Optional[str]]] = [(c, None) for c in reps]

    def add(c: Dict[str, Any], tag: Optional[str]) -> None:
        same_as.pop(c["label"], None)  # asked for by name: compiled
        hit = next((i for i, (t, _) in enumerate(todo) if t is c), None)
        if hit is None:
            todo.append((c, tag))
        elif todo[hit][1] is None:
            todo[hit] = (c, tag)

    if baselines:
        for e in stage["experts"]:
            if e["legal"] and e["index"] >= 0 and e["label"] not in skipped:
                add(cands[e["index"]], e["name"])
    ilp = stage.get("alpa_ilp") or {}
    if (baselines or "alpa_ilp" in include) and ilp.get("ops"):
        # the Alpa-style ILP's sharding, mapped onto the front end's axes, compiled like the
        # others (its own lowering is the ILP's exact per-op program)
        icand, _ = _ilp_candidate(ilp, prog)
        why = _misfit(prog, icand)
        if why:
            skipped[icand["label"]] = why
        else:
            add(icand, "alpa_ilp")
    elif "alpa_ilp" in include:
        raise AoizoraError("plan: include names 'alpa_ilp', but the ILP found no sharding: "
                           + ilp.get("reject", "no 2-D mesh fits in memory"))
    by_label = {c["label"]: c for c in cands}
    for lab in include:
        if lab == "alpa_ilp":
            continue
        c = by_label.get(lab)
        if c is None or not c["legal"] or lab in skipped:
            why = (skipped.get(lab) or c["reject"]) if c else "not a candidate on this topology"
            raise AoizoraError(f"plan: include names '{lab}': {why}")
        add(c, None)
    if not todo:
        raise AoizoraError("plan: nothing to compile (top_k=0 and no include or baselines)")

    compiled: List[CompiledCandidate] = []
    t_compile = t_price = 0.0
    for cand, expert_name in todo:
        mesh = _mesh(devs, cand, None)
        lay = Layout.from_candidate(mesh, cand)
        in_sh, out_sh = _shardings(prog, lay)
        low = cand.get("lowering", {})
        t0 = t1 = time.perf_counter()
        phase = "compile"
        try:
            if training:
                step = adam_step(_under(fn, lay), prog.param_args)
                psh = tuple(in_sh[i] for i in prog.param_args)
                opt_abs = tuple(jax.tree_util.tree_map(
                    lambda a: jax.ShapeDtypeStruct(a.shape, jnp.float32), args[i])
                    for i in prog.param_args)
                rep = NamedSharding(mesh, P())
                j = jax.jit(step, in_shardings=(in_sh, psh, psh, rep),
                            out_shardings=(psh, psh, psh, rep))
                lowered = j.lower(args, opt_abs, opt_abs,
                                  jax.ShapeDtypeStruct((), jnp.int32))
            else:
                lowered = jax.jit(_under(fn, lay), in_shardings=in_sh,
                                  out_shardings=out_sh).lower(*args)
            text = lowered.compile().as_text()
            t1 = time.perf_counter()
            phase = "HLO import"
            pr = price_hlo(text, topology, search=True, trip_count=prog.layers)
        except Exception as ex:  # a candidate XLA cannot compile or we cannot read: reported
            compiled.append(CompiledCandidate(
                cand["label"], tuple(cand["mesh_shape"]), tuple(cand["axis_names"]),
                cand["stage1_s"], low.get("best_total_s"), low.get("default_total_s"),
                math.inf, math.inf, 0, 0, 0, (), time.perf_counter() - t0, 0.0, {}, 0.0,
                expert_name, f"{phase}: {type(ex).__name__}: {ex}"[:500], cand,
                _note(cand)))
            if verbose:
                print(f"aoizora: {cand['label']:32s} {compiled[-1].error[:200]}", flush=True)
            continue
        t2 = time.perf_counter()
        if pr["best_total_s"] >= pr["default_total_s"] * (1 - 1e-9):  # ties: default order
            for k in ("total_s", "compute_s", "comm_s", "exposed_comm_s"):
                pr["best_" + k] = pr["default_" + k]
            pr["device_order"] = list(range(n_dev))
        t_compile += t1 - t0
        t_price += t2 - t1
        ev = pr["evidence"]
        compiled.append(CompiledCandidate(
            cand["label"], tuple(cand["mesh_shape"]), tuple(cand["axis_names"]),
            cand["stage1_s"], low.get("best_total_s"), low.get("default_total_s"),
            pr["default_total_s"], pr["best_total_s"], pr["best_compute_s"], pr["best_comm_s"],
            pr["best_exposed_comm_s"], tuple(pr["device_order"]), t1 - t0, t2 - t1,
            ev["collectives"], ev["flops_per_device"], expert_name, None, cand, _note(cand),
            ev["source"]))
        if verbose:
            print(f"aoizora: {cand['label']:32s} compiled in {t1 - t0:.2f} s, priced in "
                  f"{t2 - t1:.2f} s: {pr['best_total_s']:.6g} s (default order "
                  f"{pr['default_total_s']:.6g} s)", flush=True)

    ok = [c for c in compiled if c.error is None]
    if not ok:
        raise AoizoraError("plan: no candidate compiled; first error: " +
                           (compiled[0].error or "-") if compiled else "plan: no candidates")
    # the winner: lowest best-placement price; ties keep the stage-1 order
    ok_sorted = sorted(ok, key=lambda c: c.best_s)
    compiled_sorted = ok_sorted + [c for c in compiled if c.error is not None]
    return _result(ok_sorted[0], compiled_sorted, dict(
        fn_name=getattr(fn, "__name__", "program"), topology=topo["name"], mode=mode,
        candidates=compiled_sorted, stage1=stage, n_candidates=len(cands), skipped=skipped,
        n_legal=stage["n_legal"], compile_s=t_compile, price_s=t_price, same_as=same_as,
        plan_s=time.perf_counter() - t_start, program=prog, _devs=devs, _topo=topo))


def _result(win: CompiledCandidate, table: List[CompiledCandidate],
            common: Dict[str, Any]) -> "PlanResult":
    """The PlanResult that runs ``win`` (mesh in its best device order)."""
    prog, devs = common["program"], common["_devs"]
    mesh = _mesh(devs, win.cand, win.device_order)
    lay = Layout.from_candidate(mesh, win.cand)
    in_sh, out_sh = _shardings(prog, lay)
    psh = tuple(in_sh[i] for i in prog.param_args)
    training = common["mode"] == "training"
    expl = _explain(win, table, common["stage1"], common["_topo"], prog, common["mode"],
                    common["same_as"])
    return PlanResult(
        mesh=mesh, layout=lay, in_shardings=in_sh, out_shardings=out_sh,
        param_shardings=psh, opt_state_shardings=(psh, psh) if training else None,
        label=win.label, device_order=win.device_order,
        predicted_latency_s=win.best_s, default_order_latency_s=win.default_s,
        compute_s=win.compute_s, comm_s=win.comm_s, exposed_comm_s=win.exposed_comm_s,
        explanation=expl, _common=common, **common)


def _same_program(a: Dict[str, Any], b: Dict[str, Any]) -> bool:
    """Whether AoiZora's own lowering cannot tell candidates a and b apart: the same blocking
    digest (compute ops and blocking collectives, zg_aoi_evidence_digest) and the same prices
    in the default order and placed."""
    la, lb = a.get("lowering") or {}, b.get("lowering") or {}
    if not la.get("digest_blocking") or la["digest_blocking"] != lb.get("digest_blocking"):
        return False
    return all(abs(la[k] - lb[k]) <= 1e-12 * max(abs(la[k]), abs(lb[k]))
               for k in ("default_total_s", "best_total_s"))


def _distinct(fit: List[Dict[str, Any]],
              top_k: int) -> Tuple[List[Dict[str, Any]], Dict[str, str]]:
    """The first top_k candidates of ``fit`` (stage-1 order) that are not the same program as
    an earlier one (:func:`_same_program`), and {label: representative} of those skipped."""
    reps: List[Dict[str, Any]] = []
    same_as: Dict[str, str] = {}
    for c in fit:
        if len(reps) >= top_k:
            break
        r = next((t for t in reps if _same_program(t, c)), None)
        if r is not None:
            same_as[c["label"]] = r["label"]
        else:
            reps.append(c)
    return reps, same_as


def _note(cand: Dict[str, Any]) -> Optional[str]:
    if "ilp_label" not in cand:
        return cand.get("note")
    d = cand["ilp_differences"]
    return (f"the Alpa-style ILP's {cand['ilp_label']}: " +
            ("expressed exactly" if not d else "nearest expressible program; differs in " +
             "; ".join(d)))


def _explain(win: CompiledCandidate, table: List[CompiledCandidate], stage: Dict[str, Any],
             topo: Dict[str, Any], prog: _Program, mode: str,
             same_as: Optional[Dict[str, str]] = None) -> str:
    lines = [
        f"{mode} of a {prog.layers}-layer program (batch {prog.batch}, {prog.tokens} tokens, "
        f"hidden {prog.dim}, {prog.heads} heads, ffn {prog.ffn}, text {prog.text}) on "
        f"{topo['name']} ({'x'.join(map(str, topo['dims']))} {topo['device']}):",
        f"chose {win.label}: mesh {dict(zip(win.axis_names, win.mesh_shape))}, predicted "
        f"{win.best_s:.6g} s from XLA's compiled program (compute {win.compute_s:.6g} s, "
        f"communication {win.comm_s:.6g} s, exposed {win.exposed_comm_s:.6g} s)",
        f"device order {list(win.device_order)}; the default order prices at "
        f"{win.default_s:.6g} s (placement gain {win.default_s / win.best_s:.3f}x)",
    ]
    if win.lowering_s is not None:
        lines.append(f"AoiZora's own lowering of this sharding predicts {win.lowering_s:.6g} s")
    coll = ", ".join(f"{k} x{int(v['count'])} ({v['bytes']:.3g} B)"
                     for k, v in sorted(win.collectives.items()))
    lines.append("collectives in the compiled program: " + (coll or "none"))
    others = [c for c in table if c is not win and c.error is None]
    if others:
        r = others[0]
        lines.append(f"runner-up {r.label}: {r.best_s:.6g} s ({r.best_s / win.best_s:.3f}x)")
    rej = next((c["reject"] for c in stage["candidates"] if not c["legal"]), None)
    lines.append(f"{len(stage['candidates'])} candidates, {stage['n_legal']} legal, "
                 f"{len(table)} compiled" + (f"; rejected e.g. {rej}" if rej else ""))
    if same_as:
        lines.append("not compiled, the same program as a compiled one in AoiZora's lowering "
                     "(they differ only in overlapped traffic): " +
                     ", ".join(f"{k} (as {v})" for k, v in same_as.items()))
    lines.append("(predictions of an uncalibrated network and roofline model)")
    return "\n".join(lines)
