"""bench/gpu/setup-deps.sh (sourced on the GPU machine before check.sh) and its helpers.

On this machine, where install-deps.sh put every library, setup-deps.sh must find the machine's
own cJSON and OpenBLAS and unpack nothing. With ZGDEPS_FORCE=cjson it must unpack the group's
.debs from ZGDEPS_DEBS (built here with dpkg-deb from this machine's cJSON files, since the real
ones come from bench/gpu/fetch-deps.sh and the network), point CPATH/LIBRARY_PATH/LD_LIBRARY_PATH
at the prefix, and link a test program against it; a .deb whose checksum does not match the
MANIFEST must be refused with a non-zero status. The whole bare-image proof (bubblewrap, root)
is bench/gpu/bare-sim.sh, run by hand: see docs/kernels.md "On a GPU".
"""
import glob
import hashlib
import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
GPU = ROOT / "bench" / "gpu"


def source_setup(tmp_path, **env_extra):
    """Sources setup-deps.sh in a fresh bash; returns (status, output, exported variables)."""
    cmd = ('. bench/gpu/setup-deps.sh; rc=$?; echo "@RC=$rc"; '
           'for v in CPATH LIBRARY_PATH LD_LIBRARY_PATH ZGDEPS_PREFIX; do echo "@$v=${!v:-}"; done')
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZGDEPS_")}
    env.update(ZGDEPS_PREFIX=str(tmp_path / "prefix"), **env_extra)
    p = subprocess.run(["bash", "-c", cmd], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=300)
    out = p.stdout + p.stderr
    got = {}
    for line in out.splitlines():
        if line.startswith("@") and "=" in line:
            k, v = line[1:].split("=", 1)
            got[k] = v
    return int(got.get("RC", "-1")), out, got


def is_wheel_link(tmp_path, path):
    """A folder of links into torch's CUDA wheel, made when the toolkit lacks cuBLAS/cudart."""
    return path.startswith(str(tmp_path / "prefix" / "cuda-wheel"))


def have_cjson_and_blas():
    if not shutil.which("cc") or not shutil.which("pkg-config"):
        return False
    return subprocess.run(["pkg-config", "--exists", "libcjson", "openblas"]).returncode == 0


@pytest.mark.parametrize("name", ["setup-deps.sh", "fetch-deps.sh", "bare-sim.sh"])
def test_scripts_parse(name):
    p = subprocess.run(["bash", "-n", str(GPU / name)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def test_executed_not_sourced_says_so(tmp_path):
    env = dict(os.environ, ZGDEPS_PREFIX=str(tmp_path / "prefix"))
    p = subprocess.run(["bash", str(GPU / "setup-deps.sh")], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    assert "run it sourced" in p.stderr


@pytest.mark.skipif(not have_cjson_and_blas(), reason="this machine lacks cJSON/OpenBLAS (install-deps.sh)")
def test_complete_machine_uses_its_own(tmp_path):
    rc, out, got = source_setup(tmp_path)
    assert rc == 0, out
    assert "cJSON     image's own" in out, out
    assert "OpenBLAS  image's own" in out, out
    for name in ("OpenMPI", "CBC", "CUDA", "NCCL"):
        assert f"setup-deps: {name}" in out, out
    if shutil.which("mpicc") and shutil.which("mpirun"):
        assert "OpenMPI   image's own" in out and "ran an allreduce" in out, out
    # nothing unpacked, nothing of the prefix exported (but the links to torch's wheel that a
    # toolkit without cuBLAS/cudart gets: the CUDA group, not the .debs)
    assert not (tmp_path / "prefix" / ".unpacked").exists()
    ours = [p for p in got.get("LD_LIBRARY_PATH", "").split(":") if not is_wheel_link(tmp_path, p)]
    assert not any(p.startswith(str(tmp_path / "prefix")) for p in ours), out


def build_fake_cjson_debs(debs):
    """libcjson1 + libcjson-dev .debs holding this machine's cJSON header and library."""
    so = sorted(glob.glob("/usr/lib/x86_64-linux-gnu/libcjson.so.1.*"))
    if not so or not os.path.exists("/usr/include/cjson/cJSON.h") or not shutil.which("dpkg-deb"):
        pytest.skip("needs /usr/include/cjson/cJSON.h, libcjson.so.1.* and dpkg-deb")
    debs.mkdir()
    lines = []
    for pkg, files in (("libcjson1", "lib"), ("libcjson-dev", "dev")):
        root = debs / f"root-{pkg}"
        (root / "DEBIAN").mkdir(parents=True)
        (root / "DEBIAN" / "control").write_text(
            f"Package: {pkg}\nVersion: 0.0-test\nArchitecture: amd64\n"
            "Maintainer: zellige tests <none@example.invalid>\nDescription: test package\n")
        lib = root / "usr/lib/x86_64-linux-gnu"
        lib.mkdir(parents=True)
        if files == "lib":
            real = pathlib.Path(so[-1])
            shutil.copy(real, lib / real.name)
            (lib / "libcjson.so.1").symlink_to(real.name)
        else:
            inc = root / "usr/include/cjson"
            inc.mkdir(parents=True)
            shutil.copy("/usr/include/cjson/cJSON.h", inc / "cJSON.h")
            (lib / "libcjson.so").symlink_to("libcjson.so.1")
        deb = debs / f"{pkg}_0.0-test_amd64.deb"
        subprocess.run(["dpkg-deb", "--root-owner-group", "--build", str(root), str(deb)],
                       check=True, capture_output=True)
        shutil.rmtree(root)
        sha = hashlib.sha256(deb.read_bytes()).hexdigest()
        lines.append(f"cjson main {pkg} 0.0-test {deb.name} {sha}")
    (debs / "MANIFEST").write_text("\n".join(lines) + "\n")


@pytest.mark.skipif(not have_cjson_and_blas(), reason="this machine lacks cJSON/OpenBLAS (install-deps.sh)")
def test_forced_group_is_unpacked_and_used(tmp_path):
    debs = tmp_path / "debs"
    build_fake_cjson_debs(debs)
    rc, out, got = source_setup(tmp_path, ZGDEPS_FORCE="cjson", ZGDEPS_DEBS=str(debs))
    prefix = tmp_path / "prefix"
    assert rc == 0, out
    assert f"cJSON     unpacked (libcjson1 libcjson-dev) into {prefix}" in out, out
    assert (prefix / "usr/include/cjson/cJSON.h").exists()
    assert (prefix / ".unpacked" / "libcjson1_0.0-test_amd64.deb").exists()
    cpath = [p for p in got["CPATH"].split(":") if not is_wheel_link(tmp_path, p)]
    assert cpath[0] == str(prefix / "usr/include/cjson"), out
    assert str(prefix / "usr/lib/x86_64-linux-gnu") in got["LD_LIBRARY_PATH"].split(":"), got
    assert str(prefix / "usr/lib/x86_64-linux-gnu") in got["LIBRARY_PATH"].split(":"), got
    # the other groups were not forced: the machine's own
    assert "OpenBLAS  image's own" in out, out
    # sourcing again unpacks nothing new and still succeeds
    rc2, out2, _ = source_setup(tmp_path, ZGDEPS_FORCE="cjson", ZGDEPS_DEBS=str(debs))
    assert rc2 == 0 and "cJSON     unpacked" in out2, out2


@pytest.mark.skipif(not have_cjson_and_blas(), reason="this machine lacks cJSON/OpenBLAS (install-deps.sh)")
def test_checksum_mismatch_is_refused(tmp_path):
    debs = tmp_path / "debs"
    build_fake_cjson_debs(debs)
    manifest = debs / "MANIFEST"
    lines = manifest.read_text().splitlines()
    first = lines[0].split()
    first[-1] = "0" * 64
    lines[0] = " ".join(first)
    manifest.write_text("\n".join(lines) + "\n")
    rc, out, _ = source_setup(tmp_path, ZGDEPS_FORCE="cjson", ZGDEPS_DEBS=str(debs))
    assert rc == 1, out
    assert "cJSON     MISSING" in out and "does not match its MANIFEST checksum" in out, out
    assert "a REQUIRED dependency is missing" in out, out


def test_missing_debs_folder_is_reported(tmp_path):
    if not have_cjson_and_blas():
        pytest.skip("this machine lacks cJSON/OpenBLAS (install-deps.sh)")
    rc, out, _ = source_setup(tmp_path, ZGDEPS_FORCE="cjson", ZGDEPS_DEBS=str(tmp_path / "none"))
    assert rc == 1, out
    assert "run bench/gpu/fetch-deps.sh here and carry .gpudeps" in out, out
