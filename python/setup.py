"""Builds the Python packages of this repository, each a ctypes layer over one shared library
compiled from the C sources (../src) plus the package's shim:

* ``zellige``: the planner (src/planner and its deps) and the engine's schedule builder that
  zellige.torch runs (see zellige/_sources.py) + zellige/_capi.c -> zellige/_libzellige*.so
* ``aoizora``: src/aoizora and its deps + aoizora/_capi.c -> aoizora/_libaoizora*.so

    python -m pip install ./python        # from the repository root

Flags follow the Makefile: -std=c11 -D_GNU_SOURCE -O2 -Isrc, cJSON from pkg-config
(libcjson), -lm. CBC, OpenMP and MPI are left out (the planner does not need them; `joint`'s
optional pattern bound is the only part that uses CBC). Objects are kept in build/ and
recompiled only when a source, a header it includes, or the flags change. Environment:
CC (compiler), ZG_BUILD_JOBS (parallel compiles, default: the CPU count).
"""
import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
from concurrent.futures import ThreadPoolExecutor

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SRC = os.path.join(ROOT, "src")
PKG = os.path.join(HERE, "zellige")

if not os.path.isfile(os.path.join(SRC, "planner", "planner.h")):
    sys.exit(f"zellige: the C sources are not at {SRC}; build the package from a checkout of the "
             "repository (python -m pip install ./python at its root)")

_spec = importlib.util.spec_from_file_location("_zellige_sources", os.path.join(PKG, "_sources.py"))
_sources = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_sources)

WARN = ["-Wall", "-Wextra", "-Wno-unused-parameter", "-Wshadow", "-Wstrict-prototypes"]


def pkg_config(args, fallback):
    try:
        out = subprocess.run(["pkg-config", *args, "libcjson"], capture_output=True, text=True,
                             check=True).stdout
        return shlex.split(out)
    except (OSError, subprocess.CalledProcessError):
        return fallback


class BuildLib(build_ext):
    """Compiles the C sources in parallel (incrementally) and links one shared library."""

    def build_extension(self, ext):
        cc = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
        if not shutil.which(cc[0]):
            sys.exit(f"zellige: C compiler '{cc[0]}' not found (install build-essential or set CC)")
        cflags = (["-std=c11", "-D_GNU_SOURCE", "-O2", "-fPIC", "-fvisibility=hidden"] + WARN +
                  ["-I" + SRC] + pkg_config(["--cflags"], []))
        libs = pkg_config(["--libs"], ["-lcjson"]) + ["-lm"]
        out = self.get_ext_fullpath(ext.name)
        package = ext.name.split(".")[0]
        objdir = os.path.join(os.path.abspath(self.build_temp), "zellige-c")
        os.makedirs(objdir, exist_ok=True)
        os.makedirs(os.path.dirname(out), exist_ok=True)

        # flags changed: every object is stale
        stamp = os.path.join(objdir, "flags")
        sig = "\n".join(cc + cflags)
        old = open(stamp).read() if os.path.exists(stamp) else None
        if old != sig:
            for f in os.listdir(objdir):
                if f.endswith(".o"):
                    os.remove(os.path.join(objdir, f))
            with open(stamp, "w") as f:
                f.write(sig)

        jobs = []
        # the library's sources come from ../src (not ext.sources: setuptools wants those
        # inside python/); the shim is the extension's own source
        sources = (_sources.c_sources(ROOT, package) +
                   [os.path.join(HERE, s) for s in ext.sources])
        for src in sources:
            name = os.path.relpath(src, ROOT).replace(os.sep, "__")[:-2]
            obj = os.path.join(objdir, name + ".o")
            jobs.append((src, obj, obj[:-2] + ".d"))
        todo = [j for j in jobs if self._stale(*j)]
        n_jobs = int(os.environ.get("ZG_BUILD_JOBS") or os.cpu_count() or 1)
        print(f"{package}: compiling {len(todo)} of {len(jobs)} C files with {cc[0]} "
              f"({n_jobs} jobs)", flush=True)

        def compile_one(job):
            src, obj, dep = job
            cmd = cc + cflags + ["-MMD", "-MF", dep, "-c", src, "-o", obj]
            r = subprocess.run(cmd, capture_output=True, text=True)
            return src, r, cmd

        errors = []
        with ThreadPoolExecutor(max_workers=max(1, n_jobs)) as pool:
            for src, r, cmd in pool.map(compile_one, todo):
                if r.stderr:
                    sys.stderr.write(r.stderr)
                if r.returncode != 0:
                    errors.append(src)
        if errors:
            sys.exit(f"zellige: compiling failed ({package}): " + ", ".join(os.path.relpath(e, ROOT)
                                                               for e in errors))
        cmd = cc + ["-shared", "-o", out] + [obj for _, obj, _ in jobs] + libs
        print(f"{package}: linking " + os.path.basename(out), flush=True)
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            sys.stderr.write(r.stderr)
            sys.exit(f"zellige: linking failed ({package}; is libcjson-dev installed?)")
        with open(os.path.join(os.path.dirname(out), "_build_info.py"), "w") as f:
            f.write('"""Written by setup.py: what this build was made from."""\n'
                    f"SOURCE_HASH = {_sources.source_hash(ROOT, package)!r}\n"
                    f"CC = {' '.join(cc)!r}\nCFLAGS = {' '.join(cflags)!r}\n"
                    f"LIBS = {' '.join(libs)!r}\n")

    @staticmethod
    def _stale(src, obj, dep):
        """An object is stale when missing or older than its source or a header it used."""
        if not os.path.exists(obj) or not os.path.exists(dep):
            return True
        t = os.path.getmtime(obj)
        with open(dep) as f:
            text = f.read().replace("\\\n", " ")
        deps = text.split(":", 1)[1].split() if ":" in text else [src]
        return any(not os.path.exists(d) or os.path.getmtime(d) > t for d in deps + [src])


setup(
    ext_modules=[Extension("zellige._libzellige", sources=["zellige/_capi.c"]),
                 Extension("aoizora._libaoizora", sources=["aoizora/_capi.c"])],
    cmdclass={"build_ext": BuildLib},
)
