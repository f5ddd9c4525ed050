"""One real Slurm cluster per generation for the whole test session, with the SPANK plugin installed
the way a site installs it: `make -C plugins/slurm deb`, then `dpkg -i`, and plugstack.conf loading
the .so from the packaged path. Registered in conftest.py (pytest_plugins), so test_slurm_cluster.py
and test_doctor.py share the cluster instead of starting one each.

Generations: `host` is this machine's own Slurm (Debian 12: 22.05); `trixie` (Debian 13: 24.11)
and `sid` (Debian unstable: 26.05) run from root filesystems built by tests/matrix/rootfs.py, the
plugin built against that tree's Slurm headers and installed from its own .deb inside the tree.
TIERLENS_MATRIX=host,trixie limits the generations (all three by default). pytest finishes one
generation's cluster before it starts the next.

Run these tests under `flock /tmp/tierlens-slurm.lock` when other sessions may start clusters too.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from support.localcluster import HOST, HostRoot, LocalCluster, TreeRoot

REPO = Path(__file__).resolve().parents[1]
MATRIX = REPO / "tests" / "matrix"
ARMS = ["A", "B"]
PROXY = "root://xcache.test:1094"
PACKAGE = "tierlens-spank"
GENERATIONS = [g for g in os.environ.get("TIERLENS_MATRIX", "host,trixie,sid").split(",") if g]
# The root the installed package lives in: the generation whose fixtures are active (one at a time).
_ACTIVE: dict[str, HostRoot] = {"root": HOST}


def plugstack_line(plugin: Path, spool: Path, extra: str = "", control: str = "optional") -> str:
    return (
        f"{control} {plugin} spool={spool} arm=hash:{','.join(ARMS)} "
        f"arm_env=B:XROOT_PROXY={PROXY} arm_env=A:TIERLENS_TEST_DIRECT=1 "
        f"arm_route=B:cache:xcache.test:1094 arm_route=A:direct {extra}"
    ).strip()


#: Everything the plugin must survive at once: unknown and malformed options, a scratch that does not exist.
BROKEN_OPTIONS = "bogus arm_env=B max_record=1 scratch=/nonexistent/dir"


@contextmanager
def plugstack_as(cluster: LocalCluster, line: str) -> Iterator[Path]:
    """The cluster's plugstack.conf holds ``line`` while inside; its own line is put back after."""
    good = cluster.plugstack.read_text()
    try:
        cluster.plugstack.write_text(line + "\n")
        yield cluster.plugstack
    finally:
        cluster.plugstack.write_text(good)


def spool_on_a_symlink(work: Path, name: str) -> tuple[Path, Path]:
    """A spool path that is a symlink (which the plugin must refuse) and the folder it points to."""
    target = work / f"elsewhere-{name}"
    target.mkdir()
    link = work / f"spool-link-{name}"
    link.symlink_to(target)
    return link, target


@pytest.fixture(scope="session", params=GENERATIONS)
def generation(request) -> str:
    return request.param


@pytest.fixture(scope="session")
def work(generation):
    if os.geteuid() != 0:
        pytest.skip("a real Slurm cluster needs root")
    d = Path(tempfile.mkdtemp(prefix=f"tierlens-slurm-{generation}-", dir="/tmp"))
    os.chmod(d, 0o755)  # munge and mysql users reach their folders below
    yield d
    shutil.rmtree(d, ignore_errors=True)


def enter_generation(generation: str, binds: list[Path]) -> HostRoot:
    """The host, or the generation's root filesystem (built when missing) with `binds` shared."""
    if generation == "host":
        return HOST
    if str(MATRIX) not in sys.path:
        sys.path.insert(0, str(MATRIX))
    import rootfs  # tests/matrix/rootfs.py, also run by `make matrix-roots`

    tree = rootfs.ensure(rootfs.GENERATIONS[generation])
    return TreeRoot(generation, tree, binds)


@pytest.fixture(scope="session")
def slurm_root(generation, work):
    """Where this generation's Slurm runs: the host, or its root filesystem (built when missing)."""
    root = enter_generation(generation, [work, REPO])
    why = LocalCluster.available(root)
    if why:
        root.close()
        pytest.fail(f"cannot start a Slurm cluster ({generation}): {why} (deploy/ci/system-packages.txt)")
    _ACTIVE["root"] = root
    yield root
    _ACTIVE["root"] = HOST
    root.close()


@pytest.fixture(scope="session")
def build(work, slurm_root) -> Path:
    """The plugin and the C test driver (tl_test) built here against the generation's Slurm headers,
    and the .deb made from that build. tl_test runs where the plugin runs (inside the tree)."""
    out = work / "build"
    out.mkdir()
    r = subprocess.run(
        slurm_root.argv(["make", "-C", str(REPO / "plugins" / "slurm"), f"BUILD={out}", "all", "deb"]),
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    if slurm_root is not HOST:
        real = out / "tl_test.bin"
        (out / "tl_test").rename(real)
        argv = " ".join(slurm_root.argv([str(real)]))
        (out / "tl_test").write_text(f'#!/bin/sh\nexec {argv} "$@"\n')
        (out / "tl_test").chmod(0o755)
    return out


def install_package(build: Path, root: HostRoot | None = None) -> Path:
    """dpkg -i the built .deb; returns the installed plugin's path, read from the package's file list."""
    root = root or _ACTIVE["root"]
    (deb,) = build.glob(f"{PACKAGE}_*.deb")
    r = subprocess.run(root.argv(["dpkg", "-i", str(deb)]), capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    files = subprocess.run(
        root.argv(["dpkg", "-L", PACKAGE]), capture_output=True, text=True, check=True
    ).stdout.split()
    (plugin,) = [f for f in files if f.endswith("/tierlens_spank.so")]
    return Path(plugin)


def remove_package(root: HostRoot | None = None) -> None:
    root = root or _ACTIVE["root"]
    subprocess.run(root.argv(["dpkg", "--purge", PACKAGE]), capture_output=True, text=True, check=True)


@pytest.fixture(scope="session")
def spank_plugin(build, slurm_root):
    plugin = install_package(build, slurm_root)
    yield plugin
    remove_package(slurm_root)


def db_root_for(generation: str) -> HostRoot | None:
    """Slurm's slurmdbd (24.11 and 26.05 alike) cannot start against the MariaDB 11.8 of Debian 13 and
    unstable here: the connector fails Slurm's first query (`select @var := concat('')`) with
    "Number of columns in result (=1) set exceeds maximum allowed number of columns (=0)", while the
    mariadb client runs it. Those generations keep their accounting in the host's MariaDB 10.11
    (started from the host, data in the cluster's own folder); Slurm itself is the tree's."""
    return HOST if generation != "host" else None


@pytest.fixture(scope="session")
def cluster(work, spank_plugin, slurm_root, generation):
    spool = work / "spool"
    with LocalCluster(
        work / "cluster",
        plugstack_lines=[plugstack_line(spank_plugin, spool)],
        root=slurm_root,
        db_root=db_root_for(generation),
    ) as c:
        c.spool = spool
        c.plugin = spank_plugin
        c.generation = generation
        yield c
