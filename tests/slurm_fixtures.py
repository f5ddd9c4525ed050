"""One real Slurm cluster for the whole test session, with the SPANK plugin installed the way a site
installs it: `make -C plugins/slurm deb`, then `dpkg -i`, and plugstack.conf loading the .so from
the packaged path. Registered in conftest.py (pytest_plugins), so test_slurm_cluster.py and
test_doctor.py share the cluster instead of starting one each.

Run these tests under `flock /tmp/tierlens-slurm.lock` when other sessions may start clusters too.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tierlens.sources.slurm.localcluster import LocalCluster

REPO = Path(__file__).resolve().parents[1]
ARMS = ["A", "B"]
PROXY = "root://xcache.test:1094"
PACKAGE = "tierlens-spank"


def plugstack_line(plugin: Path, spool: Path, extra: str = "", control: str = "optional") -> str:
    return (f"{control} {plugin} spool={spool} arm=hash:{','.join(ARMS)} "
            f"arm_env=B:XROOT_PROXY={PROXY} arm_env=A:TIERLENS_TEST_DIRECT=1 "
            f"arm_route=B:cache:xcache.test:1094 arm_route=A:direct {extra}").strip()


@pytest.fixture(scope="session")
def work():
    if os.geteuid() != 0:
        pytest.skip("a real Slurm cluster needs root")
    why = LocalCluster.available()
    if why:
        pytest.fail(f"cannot start a Slurm cluster: {why} (deploy/ci/system-packages.txt)")
    d = Path(tempfile.mkdtemp(prefix="tierlens-slurm-", dir="/tmp"))
    os.chmod(d, 0o755)   # munge and mysql users reach their folders below
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def build(work) -> Path:
    """The plugin and the C test driver (tl_test) built here, and the .deb made from that build."""
    out = work / "build"
    out.mkdir()
    r = subprocess.run(["make", "-C", str(REPO / "plugins" / "slurm"), f"BUILD={out}", "all", "deb"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return out


def install_package(build: Path) -> Path:
    """dpkg -i the built .deb; returns the installed plugin's path, read from the package's file list."""
    (deb,) = build.glob(f"{PACKAGE}_*.deb")
    r = subprocess.run(["dpkg", "-i", str(deb)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    files = subprocess.run(["dpkg", "-L", PACKAGE], capture_output=True, text=True, check=True).stdout.split()
    (plugin,) = [f for f in files if f.endswith("/tierlens_spank.so")]
    return Path(plugin)


def remove_package() -> None:
    subprocess.run(["dpkg", "--purge", PACKAGE], capture_output=True, text=True, check=True)


@pytest.fixture(scope="session")
def spank_plugin(build):
    plugin = install_package(build)
    yield plugin
    remove_package()


@pytest.fixture(scope="session")
def cluster(work, spank_plugin):
    spool = work / "spool"
    with LocalCluster(work / "cluster", plugstack_lines=[plugstack_line(spank_plugin, spool)]) as c:
        c.spool = spool
        c.plugin = spank_plugin
        yield c
