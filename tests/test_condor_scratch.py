"""Where an HTCondor job's scratch is, in both layouts (STARTER_NESTED_SCRATCH true, the default
from 25.4, and false), and what the startd cron and a job-side run of the same script measure.

No HTCondor daemons run here: the layouts come from HTCondor's own configuration (htcondor2.param
with the shipped deploy/htcondor/50-tierlens.conf), the starter's path rule is the one in its
sources (starter.cpp: EXECUTE/dir_<pid>, then /scratch when nested; with
STARTD_ENFORCE_DISK_LIMITS the job's logical volume is mounted at that scratch directory), and the
node is a fake /proc and /sys (the shared vectors condor_nested_scratch_lvm and
condor_flat_scratch_lvm: EXECUTE on an HDD, the job's volume on an NVMe partition).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

htcondor2 = pytest.importorskip("htcondor2")

from tierlens.probe.detect import (  # noqa: E402
    CRON_SCRIPT,
    cron,
    detect,
    detect_volume_group,
    job_scratch_dir,
)

REPO = Path(__file__).resolve().parents[1]
CONF = REPO / "deploy" / "htcondor" / "50-tierlens.conf"
VECTORS = REPO / "tests" / "vectors"
EXECUTE = "/var/lib/condor/execute"
PID = 4242
NVME = ("nvme", ["SAMSUNG MZQL23T8HCLS-00A07"])
HDD = ("hdd", ["ST4000NM0035-1V4107"])


@pytest.fixture
def param(tmp_path, monkeypatch):
    def load(extra: str = "") -> object:
        cfg = tmp_path / "condor_config"
        cfg.write_text(
            f"COLLECTOR_HOST = cm.t2.example.org\nEXECUTE = {EXECUTE}\nNUM_CPUS = 64\ninclude : {CONF}\n" + extra
        )
        monkeypatch.setenv("CONDOR_CONFIG", str(cfg))
        htcondor2.reload_config()
        return htcondor2.param

    return load


def _bool(p, name: str) -> bool:
    return str(p[name]).strip().lower() == "true"


def _layout(p) -> str:
    return job_scratch_dir(p["EXECUTE"], PID, _bool(p, "STARTER_NESTED_SCRATCH"))


def _vector(name: str) -> tuple[str, Path]:
    spec = json.loads((VECTORS / name / "case.json").read_text())
    return spec["scratch"], VECTORS / name / "root"


def test_nested_scratch_is_the_default_and_the_layouts_follow_it(param):
    p = param()
    assert _bool(p, "STARTER_NESTED_SCRATCH")  # HTCondor >= 25.4
    assert _layout(p) == f"{EXECUTE}/dir_{PID}/scratch"
    assert _layout(param("STARTER_NESTED_SCRATCH = false\n")) == f"{EXECUTE}/dir_{PID}"


@pytest.mark.parametrize("nested, vector", [(True, "condor_nested_scratch_lvm"), (False, "condor_flat_scratch_lvm")])
def test_job_side_detection_measures_the_jobs_own_scratch(param, nested, vector):
    """A job-side run (the starter sets _CONDOR_SCRATCH_DIR) finds the job's volume in both
    layouts; in the nested one, dir_<pid> itself (the old scratch) is EXECUTE's HDD."""
    p = param("" if nested else "STARTER_NESTED_SCRATCH = false\n")
    scratch, root = _vector(vector)
    assert scratch == _layout(p)  # the vector is the layout the config gives
    d = detect(scratch, str(root))
    assert (d.storage_type, list(d.device_models)) == NVME
    if nested:
        old = detect(job_scratch_dir(EXECUTE, PID, nested=False), str(root))
        assert (old.storage_type, list(old.device_models)) == HDD
    # the deployed script itself, as a job would run it: no --scratch, _CONDOR_SCRATCH_DIR set
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "_CONDOR_SCRATCH_DIR": scratch, "_CONDOR_EXECUTE": EXECUTE}
    out = subprocess.run(
        [sys.executable, "-S", "-I", str(CRON_SCRIPT), f"--root={root}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert 'TierlensStorageType = "nvme"' in out and f'TierlensScratchPath = "{scratch}"' in out


def _node_with_hidden_volumes(tmp_path: Path, vg: str = "condor_vg") -> Path:
    """The node as the startd cron sees it with LVM_HIDE_MOUNT: the job volumes exist in sysfs
    but their mounts are in the starters' namespaces. A thin pool (pool_tdata under pool-tpool)
    and a volume of another group on the HDD are there too."""
    root = tmp_path / "node"
    shutil.copytree(VECTORS / "condor_nested_scratch_lvm" / "root", root, symlinks=True)
    lines = (root / "proc/self/mountinfo").read_text().splitlines()
    (root / "proc/self/mountinfo").write_text("\n".join(l for l in lines if "253:3" not in l) + "\n")
    esc = vg.replace("-", "--")
    nvme = "../../../../pci0000:00/0000:00:1d.0/0000:3d:00.0/nvme/nvme0/nvme0n1/nvme0n1p1"
    sda1 = "../../../../pci0000:00/0000:00:1f.2/ata0/host0/target0:0:0/0:0:0:0/block/sda/sda1"
    devices = {
        "dm-3": (f"{esc}-slot1_1--4242", ["../../dm-4"]),
        "dm-4": (f"{esc}-pool-tpool", ["../../dm-2"]),
        "dm-2": (f"{esc}-pool_tdata", [nvme]),
        "dm-7": ("other_vg-root", [sda1]),
    }
    for name, (dm_name, slaves) in devices.items():
        d = root / "sys/devices/virtual/block" / name
        if d.exists():
            shutil.rmtree(d)
        (d / "dm").mkdir(parents=True)
        (d / "slaves").mkdir()
        (d / "dm/name").write_text(dm_name + "\n")
        for s in slaves:
            os.symlink(s, d / "slaves" / s.rsplit("/", 1)[-1])
        link = root / "sys/block" / name
        if not link.is_symlink():
            os.symlink(f"../devices/virtual/block/{name}", link)
    return root


def _cron(args: list[str], root) -> str:
    """What the startd cron script prints with ``args`` on the host tree ``root`` (isolated Python)."""
    return subprocess.run(
        [sys.executable, "-S", "-I", str(CRON_SCRIPT), *args, f"--root={root}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout


@pytest.mark.parametrize("vg", ["condor_vg", "condor-vg"])
def test_startd_cron_measures_the_volume_group_when_jobs_get_volumes(param, tmp_path, vg):
    root = _node_with_hidden_volumes(tmp_path, vg)
    d = detect_volume_group(vg, str(root))
    assert (d.storage_type, list(d.device_models)) == NVME
    assert detect_volume_group("no_such_vg", str(root)) is None
    assert detect_volume_group("other_vg", str(root)).storage_type == "hdd"
    # the shipped configuration hands the script the knobs; with limits enforced it measures the group
    p = param(f"STARTD_ENFORCE_DISK_LIMITS = true\nLVM_VOLUME_GROUP_NAME = {vg}\n")
    args = shlex.split(p["STARTD_CRON_TIERLENS_ARGS"])
    assert "--enforce-disk-limits=true" in args and f"--lvm-vg={vg}" in args
    out = _cron(args, root)
    assert 'TierlensStorageType = "nvme"' in out and f'TierlensScratchPath = "{EXECUTE}"' in out
    # without enforcement the jobs write to EXECUTE's own storage: the HDD
    args = shlex.split(param(f"LVM_VOLUME_GROUP_NAME = {vg}\n")["STARTD_CRON_TIERLENS_ARGS"])
    assert "--enforce-disk-limits=false" in args
    out = _cron(args, root)
    assert 'TierlensStorageType = "hdd"' in out


def test_enforced_limits_without_a_group_measure_the_backing_file(param, tmp_path):
    """No LVM_VOLUME_GROUP_NAME: HTCondor builds its group on LVM_BACKING_FILE (a loop file), so the
    jobs' blocks land on the file system holding that file."""
    root = tmp_path / "node"
    shutil.copytree(VECTORS / "condor_nested_scratch_lvm" / "root", root, symlinks=True)
    with (root / "proc/self/mountinfo").open("a") as f:
        f.write("95 21 259:1 / /var/lib/condor/spool rw,relatime shared:41 - ext4 /dev/nvme0n1p1 rw\n")
    p = param("STARTD_ENFORCE_DISK_LIMITS = true\nSPOOL = /var/lib/condor/spool\n")
    assert p["LVM_BACKING_FILE"] == "/var/lib/condor/spool/startd_disk.img"
    d = cron.detect_job_scratch(EXECUTE, str(root), True, "", p["LVM_BACKING_FILE"])
    assert (d.storage_type, list(d.device_models)) == NVME
    # a named group sysfs does not show: EXECUTE, with a warning, never a failure
    d = cron.detect_job_scratch(EXECUTE, str(root), True, "gone_vg", "")
    assert (d.storage_type, list(d.device_models)) == HDD
