"""ctypes bindings of the shim (``_capi.c``) in the package's shared library.

Private: the public API is :mod:`aoizora` (``candidates``, ``price_hlo``, ``topology``) and
:mod:`aoizora.jax`. Calls go through a :class:`ctypes.CDLL`, so the GIL is released while the
C code runs.
"""
from __future__ import annotations

import ctypes
import glob
import json
import os
from ctypes import POINTER, c_char_p, c_int, c_int64, c_size_t, c_void_p
from typing import Any, Dict

ABI_VERSION = 1  # must match AOIPY_ABI in _capi.c
ERR_SIZE = 1024
STATUS_NAMES = ("ok", "invalid", "io", "parse", "infeasible", "nomem", "unsupported", "comm",
                "timeout", "internal")


class AoizoraError(ValueError):
    """An error reported by the C library (bad input, nothing legal, an HLO it cannot read).

    ``status`` is the library's status name (``"invalid"``, ``"infeasible"``, ``"parse"``...).
    """

    def __init__(self, message: str, status: str = "invalid") -> None:
        super().__init__(message)
        self.status = status


def _find_library() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    found = sorted(glob.glob(os.path.join(here, "_libaoizora*.so")) +
                   glob.glob(os.path.join(here, "_libaoizora*.dylib")))
    if not found:
        raise ImportError(
            f"aoizora: the compiled library (_libaoizora*.so) is not in {here}. Install the "
            "package with `python -m pip install ./python` from the repository root (importing "
            "from the source folder python/ without building does not work).")
    return found[0]


def _bind(lib: ctypes.CDLL) -> ctypes.CDLL:
    errbuf = [c_char_p, c_size_t]
    out_str = POINTER(c_void_p)
    sigs = {
        "aoipy_abi_version": ([], c_int),
        "aoipy_free": ([c_void_p], None),
        "aoipy_topology": ([c_char_p, out_str] + errbuf, c_int),
        "aoipy_candidates": ([c_char_p, out_str] + errbuf, c_int),
        "aoipy_price_hlo": ([c_char_p, c_size_t, c_char_p, c_int, c_int64, out_str] + errbuf,
                            c_int),
    }
    for name, (args, res) in sigs.items():
        f = getattr(lib, name)
        f.argtypes = args
        f.restype = res
    return lib


LIB = _bind(ctypes.CDLL(_find_library()))
if LIB.aoipy_abi_version() != ABI_VERSION:
    raise ImportError(f"aoizora: the compiled library has ABI {LIB.aoipy_abi_version()}, the "
                      f"Python code expects {ABI_VERSION}: reinstall the package")


def call_json(fn_name: str, *args: Any) -> Dict[str, Any]:
    """Calls ``aoipy_<fn_name>(*args, &out, err, errsz)`` and returns the JSON it wrote;
    raises :class:`AoizoraError` with the library's message on failure."""
    out = c_void_p()
    err = ctypes.create_string_buffer(ERR_SIZE)
    rc = getattr(LIB, "aoipy_" + fn_name)(*args, ctypes.byref(out), err, ERR_SIZE)
    if rc != 0:
        status = STATUS_NAMES[rc] if 0 <= rc < len(STATUS_NAMES) else str(rc)
        raise AoizoraError(err.value.decode("utf-8", "replace"), status)
    try:
        return json.loads(ctypes.string_at(out).decode("utf-8"))
    finally:
        LIB.aoipy_free(out)
