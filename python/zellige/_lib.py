"""ctypes bindings of the shim (``_capi.c``) in the package's shared library.

Private: the public API is in :mod:`zellige.planner`. Functions are bound on a
:class:`ctypes.CDLL`, so every call releases the GIL while the C code runs.
"""
from __future__ import annotations

import ctypes
import glob
import os
from ctypes import POINTER, c_char_p, c_double, c_int, c_int32, c_int64, c_size_t, c_uint64, c_void_p

ABI_VERSION = 3  # must match ZGPY_ABI in _capi.c
ERR_SIZE = 1024

# zg_status values (src/core/core.h)
STATUS_NAMES = ("ok", "invalid", "io", "parse", "infeasible", "nomem", "unsupported", "comm",
                "timeout", "internal")


class BatchIn(ctypes.Structure):
    """zgpy_batch_in: one batch as columns (NULL = unknown). Pointers are addresses (ints)."""

    _fields_ = [
        ("n", c_int64),
        ("tokens", c_void_p),       # int64[n]
        ("ids", c_void_p),          # int64[n]
        ("origin", c_void_p),       # int32[n]
        ("kind", c_void_p),         # int32[n]
        ("frames", c_void_p),       # int32[n]
        ("height", c_void_p),       # int32[n]
        ("width", c_void_p),        # int32[n]
        ("text_tokens", c_void_p),  # int32[n]
        ("buckets", c_char_p),      # n NUL-terminated names
    ]


class PlanView(ctypes.Structure):
    """zgpy_plan_view: a plan as flat arrays in one block owned by its result. Array fields
    are addresses (ints) inside [block, block + block_bytes)."""

    _fields_ = [
        ("world_size", c_int32),
        ("optimal", c_int32),
        ("n", c_int64),
        ("n_shards", c_int64),
        ("makespan", c_double),
        ("plan_time_ms", c_double),
        ("lower_bound", c_double),
        ("mem_base", c_double),
        ("mem_cap", c_double),
        ("policy", c_char_p),
        ("fallback_from", c_char_p),
        ("summary", c_char_p),
        ("seq_id", c_void_p),       # int64[n]
        ("seq_tokens", c_void_p),   # int64[n]
        ("config", c_void_p),       # int32[n][3]
        ("offset", c_void_p),       # int64[n + 1]
        ("shard_rank", c_void_p),   # int32[n_shards]
        ("shard_start", c_void_p),  # int64[n_shards]
        ("shard_end", c_void_p),    # int64[n_shards]
        ("seq_time", c_void_p),     # double[n]
        ("seq_mem", c_void_p),      # double[n]
        ("rank_time", c_void_p),    # double[world_size]
        ("rank_mem", c_void_p),     # double[world_size]
        ("rank_tokens", c_void_p),  # int64[world_size]
        ("seq_round", c_void_p),    # int32[n]
        ("n_rounds", c_int32),
        ("n_over_cap", c_int32),
        ("over_cap_ranks", c_void_p),  # int32[n_over_cap]
        ("over_cap_note", c_char_p),
        ("block", c_void_p),
        ("block_bytes", c_int64),
    ]


class SchedView(ctypes.Structure):
    """zg_engine_sched (src/engine/engine.h): one rank's schedule as flat int64 arrays
    (addresses). Read by zellige.torch."""

    _fields_ = [
        ("rank", c_int32), ("world_size", c_int32), ("n_heads", c_int32), ("head_dim", c_int32),
        ("k_max", c_int32),
        ("t_local", c_int64), ("loader_tokens", c_int64), ("q_rows", c_int64),
        ("kv_rows", c_int64), ("ring_rows", c_int64),
        ("d_loff", c_void_p), ("d_lrows", c_void_p), ("d_poff", c_void_p), ("d_prows", c_void_p),
        ("n_x", c_int64), ("n_members", c_int64),
        ("x_kind", c_void_p), ("x_me", c_void_p), ("x_moff", c_void_p), ("m_rank", c_void_p),
        ("m_ioff", c_void_p), ("idx", c_void_p),
        ("sl_off", c_void_p), ("sl", c_void_p),
        ("n_ring", c_int64), ("ring", c_void_p),
    ]


def _find_library() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    found = sorted(glob.glob(os.path.join(here, "_libzellige*.so")) +
                   glob.glob(os.path.join(here, "_libzellige*.dylib")) +
                   glob.glob(os.path.join(here, "_libzellige*.pyd")))
    if not found:
        raise ImportError(
            f"zellige: the compiled library (_libzellige*.so) is not in {here}. Install the "
            "package with `python -m pip install ./python` from the repository root (importing "
            "from the source folder python/ without building does not work).")
    return found[0]


def _bind(lib: ctypes.CDLL) -> ctypes.CDLL:
    errbuf = [c_char_p, c_size_t]
    out_str = POINTER(c_void_p)
    sigs = {
        "zgpy_abi_version": ([], c_int),
        "zgpy_free": ([c_void_p], None),
        "zgpy_policies": ([], c_char_p),
        "zgpy_planner_new": ([c_char_p, c_char_p, c_char_p, c_char_p, c_char_p,
                              POINTER(c_void_p)] + errbuf, c_int),
        "zgpy_planner_free": ([c_void_p], None),
        "zgpy_planner_info": ([c_void_p, out_str] + errbuf, c_int),
        "zgpy_plan": ([c_void_p, POINTER(BatchIn), POINTER(c_void_p)] + errbuf, c_int),
        "zgpy_result_view": ([c_void_p], POINTER(PlanView)),
        "zgpy_result_json": ([c_void_p, out_str] + errbuf, c_int),
        "zgpy_result_write": ([c_void_p, c_char_p] + errbuf, c_int),
        "zgpy_result_free": ([c_void_p], None),
        "zgpy_batch_read": ([c_char_p, c_char_p, c_int, out_str] + errbuf, c_int),
        "zgpy_sched_new": ([c_int32, c_int64] + [c_void_p] * 8 + [c_int32, c_int32, c_int32,
                           POINTER(c_void_p)] + errbuf, c_int),
        "zgpy_sched_view": ([c_void_p], POINTER(SchedView)),
        "zgpy_sched_free": ([c_void_p], None),
        "zgpy_comm_model": ([c_int32, c_int32, c_int64, c_int32, c_int32, c_int32,
                            POINTER(c_double)] + errbuf, c_int),
        "zgpy_workload_mix": ([c_char_p, c_char_p, c_int64, c_int32, c_int32, c_uint64, c_int64,
                               out_str] + errbuf, c_int),
    }
    for name, (args, res) in sigs.items():
        f = getattr(lib, name)
        f.argtypes = args
        f.restype = res
    return lib


LIB = _bind(ctypes.CDLL(_find_library()))
if LIB.zgpy_abi_version() != ABI_VERSION:
    raise ImportError(f"zellige: the compiled library has ABI {LIB.zgpy_abi_version()}, the "
                      f"Python code expects {ABI_VERSION}: reinstall the package")


def take_string(p: c_void_p) -> str:
    """Decodes a string the library returned and frees it."""
    try:
        return ctypes.string_at(p).decode("utf-8")
    finally:
        LIB.zgpy_free(p)
