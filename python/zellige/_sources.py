"""Which C sources the packages build, and a hash of everything an install is made from.

Used by ``python/setup.py`` (to compile) and by the tests (``tests/py/test_python_planner.py``,
``tests/py/test_aoizora_jax.py``: to tell whether an installed build is current). Needs only
the standard library and is loaded by path, so it must not import the rest of the package.
"""
from __future__ import annotations

import glob
import hashlib
import os
from typing import Dict, List

# The planner module and every module it uses (src/planner/deps lists them in link order).
TOP_MODULE = "planner"
# zellige.torch runs the engine's schedule (src/engine/sched.c): these engine files (they build
# the schedule and send no messages; no kernels) and the modules they link against.
SCHEDULE_FILES = ["engine/engine_init.c", "engine/sched.c"]
SCHEDULE_MODULES = ["comm"]
# Each Python package of python/ and the top library module its shared library is built from:
# zellige (the planner, plus the engine's schedule) and aoizora (src/aoizora: candidates, HLO
# import, network pricing).
PACKAGES: Dict[str, str] = {"zellige": "planner", "aoizora": "aoizora"}


def modules(root: str, top: str = TOP_MODULE) -> List[str]:
    """The library modules ``top`` needs: ``top`` and ``src/<top>/deps``."""
    with open(os.path.join(root, "src", top, "deps"), encoding="utf-8") as f:
        return [top] + f.read().split()


def _extra_modules(package: str) -> List[str]:
    return SCHEDULE_MODULES if package == "zellige" else []


def _extra_files(package: str) -> List[str]:
    return SCHEDULE_FILES if package == "zellige" else []


def c_sources(root: str, package: str = "zellige") -> List[str]:
    """Absolute paths of ``src/<m>/**/*.c`` for the package's modules (zellige: also the
    schedule's, ``SCHEDULE_MODULES`` and ``SCHEDULE_FILES``), sorted."""
    out: List[str] = []
    for m in modules(root, PACKAGES[package]) + _extra_modules(package):
        out += glob.glob(os.path.join(root, "src", m, "**", "*.c"), recursive=True)
    out += [os.path.join(root, "src", f) for f in _extra_files(package)]
    return sorted(out)


def shim_source(pkg_dir: str) -> str:
    """The ctypes shim of a package, ``python/<package>/_capi.c``."""
    return os.path.join(pkg_dir, "_capi.c")


def source_hash(root: str, package: str = "zellige") -> str:
    """SHA-256 over the C sources and headers of the package's modules, its shim, its Python
    files and the build files: equal hashes mean an install made from this tree is current."""
    python_dir = os.path.join(root, "python")
    pkg_dir = os.path.join(python_dir, package)
    files: List[str] = []
    for m in modules(root, PACKAGES[package]) + _extra_modules(package):
        for ext in ("c", "h"):
            files += glob.glob(os.path.join(root, "src", m, "**", "*." + ext), recursive=True)
        files.append(os.path.join(root, "src", m, "deps"))
    files += [os.path.join(root, "src", f) for f in _extra_files(package)]
    if package == "zellige":
        files += glob.glob(os.path.join(root, "src", "engine", "*.h"))
    files += glob.glob(os.path.join(pkg_dir, "**", "*.py"), recursive=True)
    files += [shim_source(pkg_dir)]
    files += [os.path.join(python_dir, "setup.py"), os.path.join(python_dir, "pyproject.toml")]
    h = hashlib.sha256()
    for p in sorted(set(files)):
        if os.path.basename(p) == "_build_info.py":
            continue
        h.update(os.path.relpath(p, root).encode() + b"\0")
        with open(p, "rb") as f:
            h.update(f.read())
        h.update(b"\0")
    return h.hexdigest()
