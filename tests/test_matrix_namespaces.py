"""Jobs with a private /tmp: Slurm 24.11's job_container/tmpfs and 26.05's namespace/linux.

With such a plugin the job's /tmp (and /dev/shm) is a directory under the plugin's base path bound
over /tmp in a mount namespace of the job's own. With `SlurmdParameters=contain_spank` the SPANK
hooks run inside that namespace. The storage the job's scratch really uses is the device behind
the base path, so that is what the tag must name. The test records what the job sees (its
mountinfo, its TIERLENS_* variables) in the cluster's folder for the plugin's authors.

TIERLENS_KEEP_LOGS=DIR keeps the cluster's logs and the job's output there.

Generations: trixie (24.11, job_container/tmpfs) and sid (26.05, namespace/linux; see
NAMESPACE_LINUX_FAILS). Runs against a tree's real root (pivot_root, not chroot): the job
container enters the job's namespace with setns(), which resets the root.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from slurm_fixtures import GENERATIONS, REPO, db_root_for, enter_generation, install_package, plugstack_line
from support.localcluster import LocalCluster

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CONTAINERS = {
    # generation: (slurm.conf lines, the plugin's own configuration file and its text)
    "trixie": (
        "JobContainerType=job_container/tmpfs\nPrologFlags=Contain\nSlurmdParameters=contain_spank\n",
        "job_container.conf",
        "AutoBasePath=true\nBasePath={base}\nDirs=/tmp\n",
    ),
    "sid": (
        "NamespaceType=namespace/linux\nPrologFlags=Contain\nSlurmdParameters=contain_spank\n",
        "namespace.yaml",
        'defaults:\n  auto_base_path: true\n  base_path: "{base}"\n  dirs: "/tmp"\n',
    ),
}
JOB = (
    "sed 's/^/MI:/' /proc/self/mountinfo; echo TMP_MOUNT:$(awk '$5 == \"/tmp\"' /proc/self/mountinfo); "
    "env | grep -E '^(TIERLENS_|TMPDIR=)' | sed 's/^/ENV:/'; echo MARK > /tmp/tierlens-mark; "
    "ls /tmp | sed 's/^/TMPLS:/'"
)


def _detect(c: LocalCluster, build: Path, path: str) -> dict:
    """The C detector run in the cluster's own tree, outside any job (tests/slurm_fixtures.py built it)."""
    r = c.run([str(build / "tl_test.bin"), "detect", "/", path])
    return json.loads(r.stdout)


@pytest.fixture(scope="session")
def private_tmp_cluster(generation, work, build):
    """A second cluster of the generation, in a tree of its own: the base path is a host folder
    bound into it outside /tmp (a private /tmp would hide it from the plugin), on other storage
    than the tree's /tmp (an overlay), so a tag naming the wrong device shows."""
    if generation not in CONTAINERS:
        pytest.fail(f"no private-/tmp plugin configured for {generation}")
    conf_lines, conf_name, conf_text = CONTAINERS[generation]
    base = Path(tempfile.mkdtemp(prefix="tierlens-private-tmp-", dir="/var/tmp"))
    root = enter_generation(generation, [work, REPO, base])
    spool = work / "spool-private"
    try:
        plugin = install_package(build, root)
        c = LocalCluster(
            work / "cluster-private-tmp",
            plugstack_lines=[plugstack_line(plugin, spool)],
            root=root,
            extra_conf=conf_lines,
            db_root=db_root_for(generation),
        )
        (c.workdir / "etc").mkdir(parents=True)
        (c.workdir / "etc" / conf_name).write_text(conf_text.format(base=base))
        try:
            with c:
                c.spool, c.base = spool, base
                yield c
        finally:
            if os.environ.get("TIERLENS_KEEP_LOGS"):
                shutil.copytree(
                    c.workdir / "log", Path(os.environ["TIERLENS_KEEP_LOGS"]) / generation, dirs_exist_ok=True
                )
    finally:
        root.close()
        shutil.rmtree(base, ignore_errors=True)


# 26.05's namespace/linux here: the extern step starts, but every task launch fails: slurmd logs
# "launch task StepId=N.0" then, 7 ms later, "error: slurmstepd return code -1: Unspecified error",
# and the task's slurmstepd writes no line of its own (it dies before its log is set up). Same
# with or without contain_spank and with no SPANK plugin at all. This machine's /sys/fs/cgroup is
# a tmpfs with cgroup v1 controllers (a hybrid layout; 26.05 warns "cgroup/v1 plugin is
# deprecated"); the cause is not established beyond that. Kept running so a fix shows (XPASS).
NAMESPACE_LINUX_FAILS = pytest.mark.xfail(
    reason="namespace/linux on Slurm 26.05.5: every task launch fails here, slurmd 'slurmstepd return "
    "code -1: Unspecified error' with no slurmstepd log line, also without any SPANK plugin; "
    "host has cgroup v1 (hybrid), cause not established",
    strict=False,
)


@pytest.mark.parametrize(
    "generation",
    [pytest.param(g, marks=NAMESPACE_LINUX_FAILS) if g == "sid" else g for g in GENERATIONS if g in CONTAINERS],
    indirect=True,
)
def test_private_tmp_is_tagged_with_the_device_behind_it(private_tmp_cluster, build, work):
    c = private_tmp_cluster
    r = c.run(["srun", "-n1", "sh", "-c", JOB], env={"TMPDIR": "/tmp"})
    lines = r.stdout.splitlines()
    env = dict(x[4:].split("=", 1) for x in lines if x.startswith("ENV:"))
    mount = [x[len("TMP_MOUNT:") :] for x in lines if x.startswith("TMP_MOUNT:")]
    if os.environ.get("TIERLENS_KEEP_LOGS"):
        Path(os.environ["TIERLENS_KEEP_LOGS"], f"job-{c.root.name}.txt").write_text(r.stdout + r.stderr)
    # the job's /tmp is private: a mount of its own over /tmp, holding only what the job wrote
    assert mount and mount[0].strip(), r.stdout
    assert [x for x in lines if x.startswith("TMPLS:")] == ["TMPLS:tierlens-mark"]
    assert c.run(["ls", "/tmp"]).stdout.split().count("tierlens-mark") == 0
    # the plugin ran in the job (contain_spank) and tagged it; the scratch is the private /tmp
    assert env.get("TIERLENS_SCRATCH") == "/tmp", env
    behind = _detect(c, build, str(c.base))["storage_type"]
    assert behind != _detect(c, build, "/tmp")["storage_type"]  # the tree's own /tmp: an overlay
    assert env.get("TIERLENS_STORAGE_TYPE") == behind, (env, behind, mount)
