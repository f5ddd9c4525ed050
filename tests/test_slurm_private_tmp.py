"""A real Slurm cluster (the host's) with job_container/tmpfs: each job gets a private /tmp, a bind
mount of <BasePath>/[<node>/]<job>/.<job>, and the plugin's hooks run outside the job's namespace
(contain_spank exists only from 24.05), where the node's own /tmp is visible. The tag must name
the storage behind the job's /tmp: here BasePath is on a tmpfs of its own while the node's /tmp is
whatever the machine has, so the two differ unless the node's /tmp is a tmpfs too.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from support.localcluster import LocalCluster
from tierlens.probe.detect import detect

REPO = Path(__file__).resolve().parents[1]


class _PrivateTmpCluster(LocalCluster):
    base: Path

    def _write_slurm_conf(self) -> None:
        super()._write_slurm_conf()
        with self.conf.open("a") as f:
            f.write("JobContainerType=job_container/tmpfs\nPrologFlags=contain\n")
        (self.conf.parent / "job_container.conf").write_text(f"AutoBasePath=true\nBasePath={self.base}\n")


@pytest.fixture(scope="module")
def base():
    """A tmpfs outside /tmp and /dev/shm (job_container/tmpfs refuses BasePaths there)."""
    top = Path(tempfile.mkdtemp(prefix="tierlens-jc-", dir="/srv" if Path("/srv").is_dir() else "/var/tmp"))
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(top)], capture_output=True, text=True)
    if r.returncode != 0:
        shutil.rmtree(top, ignore_errors=True)
        pytest.skip(f"cannot mount a tmpfs (needs root): {r.stderr.strip()}")
    yield top / "base"
    subprocess.run(["umount", "-l", str(top)], capture_output=True)
    shutil.rmtree(top, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster(base):
    if reason := LocalCluster.available():
        if reason == "needs root":
            pytest.skip(reason)
        pytest.fail(f"cannot start a Slurm cluster: {reason} (deploy/ci/system-packages.txt)")
    if not Path("/usr/include/slurm/spank.h").exists():
        pytest.skip("needs libslurm-dev")
    work = Path(tempfile.mkdtemp(prefix="tierlens-jc-work-"))
    work.chmod(0o755)  # munged and slurmd run as their own users: they must get in
    build = work / "build"
    build.mkdir()
    r = subprocess.run(
        ["make", "-C", str(REPO / "plugins" / "slurm"), f"BUILD={build}"], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stdout + r.stderr
    spool = work / "spool"
    c = _PrivateTmpCluster(
        work / "cluster", plugstack_lines=[f"optional {build / 'tierlens_spank.so'} spool={spool} cluster=jc"]
    )
    c.base = base
    try:
        with c:
            c.spool = spool
            yield c
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_private_tmp_is_tagged_with_the_storage_behind_it(cluster, base):
    r = cluster.run(
        [
            "srun",
            "-n1",
            "bash",
            "-c",
            "env | grep -E '^TIERLENS_'; echo FS:$(findmnt -no FSTYPE --target /tmp); echo JOB:$SLURM_JOB_ID",
        ]
    )
    out = dict(line.split("=", 1) for line in r.stdout.splitlines() if line.startswith("TIERLENS_"))
    jid = next(line.split(":", 1)[1] for line in r.stdout.splitlines() if line.startswith("JOB:"))
    inside = next(line.split(":", 1)[1] for line in r.stdout.splitlines() if line.startswith("FS:"))
    assert inside == "tmpfs"  # the job's /tmp is the private one
    behind = detect(str(base), "/")  # independent: the Python detector
    assert behind.storage_type == "tmpfs"
    assert out["TIERLENS_SCRATCH"] == "/tmp"
    assert out["TIERLENS_STORAGE_TYPE"] == behind.storage_type, (out, detect("/tmp", "/"))
    deadline = time.monotonic() + 60
    while not list(cluster.spool.glob(f"{jid}.0.*.json")) and time.monotonic() < deadline:
        time.sleep(0.5)
    (rec_path,) = cluster.spool.glob(f"{jid}.0.*.json")
    rec = json.loads(rec_path.read_text())
    assert rec["storage_type"] == "tmpfs" and rec["scratch_path"] == "/tmp"
    assert "array_job_id" not in rec and "array_task_id" not in rec  # not an array job
    # <BasePath>/<job>, or <BasePath>/<node>/<job> where Slurm is built for multiple slurmds
    assert rec["scratch_backing"] in (f"{base}/{jid}", f"{base}/{cluster.node}/{jid}")
