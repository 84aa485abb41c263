"""Which C sources the package builds, and a hash of everything an install is made from.

Used by ``python/setup.py`` (to compile) and by ``tests/py/test_python_planner.py`` (to tell
whether an installed build is current). Needs only the standard library and is loaded by path,
so it must not import the rest of the package.
"""
from __future__ import annotations

import glob
import hashlib
import os
from typing import List

# The planner module and every module it uses (src/planner/deps lists them in link order).
TOP_MODULE = "planner"
# zellige.torch runs the engine's schedule (src/engine/sched.c): these engine files (they build
# the schedule and send no messages; no kernels) and the modules they link against.
SCHEDULE_FILES = ["engine/engine_init.c", "engine/sched.c"]
SCHEDULE_MODULES = ["comm"]


def modules(root: str) -> List[str]:
    """The library modules the planner needs: ``planner`` and ``src/planner/deps``."""
    with open(os.path.join(root, "src", TOP_MODULE, "deps"), encoding="utf-8") as f:
        return [TOP_MODULE] + f.read().split()


def c_sources(root: str) -> List[str]:
    """Absolute paths of ``src/<m>/**/*.c`` for the planner's modules and the schedule's
    (``SCHEDULE_MODULES``, ``SCHEDULE_FILES``), sorted."""
    out: List[str] = []
    for m in modules(root) + SCHEDULE_MODULES:
        out += glob.glob(os.path.join(root, "src", m, "**", "*.c"), recursive=True)
    out += [os.path.join(root, "src", f) for f in SCHEDULE_FILES]
    return sorted(out)


def shim_source(pkg_dir: str) -> str:
    """The ctypes shim, ``python/zellige/_capi.c``."""
    return os.path.join(pkg_dir, "_capi.c")


def source_hash(root: str) -> str:
    """SHA-256 over the C sources and headers of the modules, the shim, the package's Python
    files and its build files: equal hashes mean an install made from this tree is current."""
    python_dir = os.path.join(root, "python")
    pkg_dir = os.path.join(python_dir, "zellige")
    files: List[str] = []
    for m in modules(root) + SCHEDULE_MODULES:
        for ext in ("c", "h"):
            files += glob.glob(os.path.join(root, "src", m, "**", "*." + ext), recursive=True)
        files.append(os.path.join(root, "src", m, "deps"))
    files += [os.path.join(root, "src", f) for f in SCHEDULE_FILES]
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
