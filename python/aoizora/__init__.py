"""aoizora — placement-aware auto-parallelization of DiT programs, from Python.

The C library of this repository (src/aoizora, built into the package when it is installed)
enumerates candidate meshes and shardings, prunes them placement-obliviously (stage 1), reads
XLA's compiled HLO into placement-free *evidence* and prices it under many device placements
with a link-level network model. This package calls it through ctypes:

* :func:`topology` — a network preset's shape (``"v5e-8"``, ``"v5e:4x4"``, ``"h100x8"``...).
* :func:`candidates` — every candidate sharding of a program with given dimensions, its
  stage-1 price, the survivors and the expert configurations.
* :func:`price_hlo` — compiled HLO text priced in the default device order and under the
  placement search.
* :mod:`aoizora.jax` — ``aoizora.jax.plan(fn, *example_args, topology="v5e-8")``: the whole
  loop for a JAX function (XLA compiles each surviving candidate; imports JAX on use).

Every latency is a prediction of an uncalibrated network and roofline model (docs/aoizora.md).
"""
from __future__ import annotations

from typing import Any, Dict

from ._lib import AoizoraError, call_json

__version__ = "0.1.0"

__all__ = ["AoizoraError", "topology", "candidates", "price_hlo", "__version__"]


def topology(name: str) -> Dict[str, Any]:
    """The network preset ``name`` (or a topology JSON file): ``{"name", "device", "kind",
    "n_devices", "dims", "wrap", "hbm_bytes", "peak_flops"}``."""
    return call_json("topology", name.encode())


def candidates(topology: str, *, tokens: int, dim: int, heads: int, ffn: int, batch: int,
               layers: int = 1, text: int = 0, training: bool = False, top_k: int = 4,
               alpa_ilp: bool = False, name: str = "program") -> Dict[str, Any]:
    """Candidate shardings of a Wan-style DiT program on ``topology``, from the C candidate
    generator and stage-1 pruning.

    Returns ``{"candidates": [...], "survivors": K, "n_legal", "experts": [...], ...}``:
    candidates legal first by stage-1 price (the first ``survivors`` are the ones to compile),
    each with ``label``, degrees ``dp/ring/uly/tp``, ``fsdp`` and ``fsdp_axes``,
    ``mesh_shape``/``axis_names``, ``reject`` (why not legal), and for survivors and experts
    ``lowering``: AoiZora's own lowering priced in the default order and after the placement
    search. ``alpa_ilp`` adds ``"alpa_ilp"``: the Alpa-style ILP's sharding (XLA
    auto-sharding's per-op ILP) in AoiZora's own lowering, priced the same two ways. Raises
    :class:`AoizoraError` (status ``"infeasible"`` when nothing is legal).
    """
    import json
    spec = dict(topology=topology, name=name, tokens=int(tokens), text=int(text), dim=int(dim),
                heads=int(heads), ffn=int(ffn), layers=int(layers), batch=int(batch),
                training=int(bool(training)), top_k=int(top_k), alpa_ilp=int(bool(alpa_ilp)))
    return call_json("candidates", json.dumps(spec).encode())


def price_hlo(hlo_text: str, topology: str, search: bool = True,
              trip_count: int = 0) -> Dict[str, Any]:
    """Imports XLA's compiled HLO text (``jax.jit(...).lower(...).compile().as_text()``) into
    evidence and prices it on ``topology``: ``default_total_s`` (logical rank r on chip r) and,
    with ``search``, ``best_total_s`` and ``device_order`` (physical chip of each logical rank,
    chips numbered by coordinates, x fastest), plus compute/comm/exposed parts and an evidence
    summary (collective counts and bytes, FLOPs per device, peak memory, the importer's notes).
    ``trip_count`` repeats ``while`` loops that carry no ``known_trip_count`` (0: once, noted).
    """
    data = hlo_text.encode()
    return call_json("price_hlo", data, len(data), topology.encode(), 1 if search else 0,
                     int(trip_count))
