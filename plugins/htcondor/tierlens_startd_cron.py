#!/usr/bin/env python3
"""tierlens STARTD_CRON script: publish the storage under the job scratch and the node's A/B arm.

Runs on any HTCondor execution point: Python 3.6+ standard library only, no tierlens install.
The startd runs it periodically (deploy/htcondor/50-tierlens.conf) and adds what it prints to the
machine ad; SYSTEM_JOB_MACHINE_ATTRS then copies the attributes into every job that starts on the
node (as MachineAttrTierlens<X>0), from where `tierlens ingest condor` reads them.

Output (one ClassAd, ended by a line "-"):

    TierlensStorageType = "ssd"          # one of records.STORAGE_TYPES
    TierlensScratchDevices = { "Samsung SSD 870 EVO 1TB" }   # RAID members listed one by one
    TierlensScratchPath = "/var/lib/condor/execute"
    TierlensScratchFsType = "ext4"
    TierlensScratchSource = "/dev/sdb1"
    TierlensAbArm = "A"                  # undefined outside a trial
    TierlensCacheRoute = "cache:xcache01:1094"   # undefined when not set
    TierlensNodeSlots = 64
    TierlensDetectorVersion = 1

It never fails: any problem gives TierlensStorageType = "other" and a message on stderr, and the
exit code is always 0 so the startd keeps the ad.

Where a job's scratch is (HTCondor 25.4 made STARTER_NESTED_SCRATCH true by default): the starter
makes EXECUTE/dir_<starter pid>; the job's scratch (_CONDOR_SCRATCH_DIR) is that directory itself
when STARTER_NESTED_SCRATCH is false, its "scratch" subdirectory when true (``job_scratch_dir``).
Both are below EXECUTE, so measuring EXECUTE is right unless each job gets a file system of its
own: with STARTD_ENFORCE_DISK_LIMITS the starter mounts a logical volume of LVM_VOLUME_GROUP_NAME
(or of a volume group on LVM_BACKING_FILE, a loop file) at the job's scratch directory, in both
layouts, often in a mount namespace the cron cannot see (LVM_HIDE_MOUNT). Then the storage is that
of the volume group's physical volumes (``detect_volume_group``), or of the backing file's file
system. Run inside a job (_CONDOR_SCRATCH_DIR set), the script measures the job's own scratch.

The storage detection below (``detect``) is the one implementation tierlens has in Python; the
tierlens package imports it from this file for its tests (tests/vectors/, shared with the Slurm
plugin's C detector). The algorithm is documented in tests/vectors/README.md.
"""

import argparse
import ctypes
import ctypes.util
import logging
import os
import sys
from collections import namedtuple

__all__ = ["Detection", "detect", "detect_volume_group", "job_scratch_dir", "classad_lines", "main", "DETECTOR_VERSION"]

DETECTOR_VERSION = 1
log = logging.getLogger("tierlens.detect")

#: What detect() returns. storage_type is one of hdd ssd nvme raid0 raid1 raid5 raid6 raid10
#: tmpfs nfs lustre gpfs cephfs other; device_models lists the block devices' models (RAID
#: members one by one, in member-name order); fstype and source_device come from mountinfo.
Detection = namedtuple("Detection", "storage_type device_models fstype source_device")

_FSTYPE = {
    "nfs": "nfs",
    "nfs4": "nfs",
    "lustre": "lustre",
    "gpfs": "gpfs",
    # kernel client; the fstab helper's type; what a ceph-fuse mount shows in mountinfo
    "ceph": "cephfs",
    "fuse.ceph": "cephfs",
    "fuse.ceph-fuse": "cephfs",
    "tmpfs": "tmpfs",
    "ramfs": "tmpfs",
}
_RAID_LEVELS = ("raid0", "raid1", "raid5", "raid6", "raid10")
#: statfs f_type magic numbers (linux/magic.h and the file systems' own headers).
_MAGIC = {
    0x6969: "nfs",
    0x01021994: "tmpfs",
    0x858458F6: "tmpfs",  # ramfs
    0x0BD00BD0: "lustre",
    0x47504653: "gpfs",
    0x00C36400: "cephfs",
}
_MAX_LINKS = 40
_MAX_DEPTH = 8
#: devices one detection may classify: members that lead back to their own array (a sysfs the
#: kernel would not write) would otherwise multiply the work at every level of the stack
_MAX_VISITS = 64


# ----------------------------------------------------------------------------- paths under root


def _under(root, path):
    """The host path of an absolute path as seen inside ``root``."""
    return os.path.join(root, path.lstrip("/")) if root != "/" else path


def _resolve(root, path, must_exist=False):
    """Resolve symlinks in absolute ``path`` as if ``root`` were "/"; returns the in-root path.

    Absolute link targets are taken relative to ``root``; ".." never climbs above it. Components
    that do not exist are kept as they are (unless ``must_exist``, which then gives None).
    """
    parts = [p for p in path.split("/") if p]
    done = []
    links = 0
    while parts:
        part = parts.pop(0)
        if part == ".":
            continue
        if part == "..":
            if done:
                done.pop()
            continue
        candidate = "/" + "/".join(done + [part])
        host = _under(root, candidate)
        if os.path.islink(host):
            links += 1
            if links > _MAX_LINKS:
                return None
            target = os.readlink(host)
            if target.startswith("/"):
                done = []
            parts = [p for p in target.split("/") if p] + parts
            continue
        if must_exist and not os.path.exists(host):
            return None
        done.append(part)
    return "/" + "/".join(done)


def _read(root, path):
    try:
        with open(_under(root, path), encoding="utf-8", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return None


def _exists(root, path):
    return os.path.exists(_under(root, path))


# ----------------------------------------------------------------------------- mountinfo


def _unescape(field):
    """mountinfo escapes space, tab, newline and backslash as \\ooo octal."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and i + 3 < len(field) + 1 and field[i + 1 : i + 4].isdigit():
            out.append(chr(int(field[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


Mount = namedtuple("Mount", "mount_point major_minor fstype source")


def _parse_mountinfo(text):
    mounts = []
    for line in text.splitlines():
        fields = line.split()
        if "-" not in fields:
            continue
        sep = fields.index("-")
        if sep < 6 or len(fields) < sep + 3:
            continue
        mm = fields[2]
        if ":" not in mm or not all(p.isdigit() for p in mm.split(":", 1)):
            continue
        point = _unescape(fields[4])
        if not point.startswith("/"):
            continue
        mounts.append(Mount(point, mm, fields[sep + 1], _unescape(fields[sep + 2])))
    return mounts


def _containing_mount(mounts, path):
    best, best_len = None, -1
    for m in mounts:
        mp = m.mount_point.rstrip("/") or "/"
        if mp == "/" or path == mp or path.startswith(mp + "/"):
            # ">=": a later mount over the same point hides the earlier one
            if len(mp) >= best_len:
                best, best_len = m, len(mp)
    return best


# ----------------------------------------------------------------------------- sysfs


class _Budget(Exception):
    """More devices than _MAX_VISITS under one scratch directory."""


def _classify(root, dev, depth=0, visits=None):
    """Storage type and device models of the sysfs block device directory ``dev`` (in-root path)."""
    if visits is None:
        visits = [0]
    visits[0] += 1
    if visits[0] > _MAX_VISITS:
        raise _Budget(dev)
    if depth > _MAX_DEPTH:
        log.warning("%s: device stack deeper than %d", dev, _MAX_DEPTH)
        return "other", []
    if _exists(root, dev + "/partition"):
        dev = dev.rsplit("/", 1)[0]
    name = dev.rsplit("/", 1)[-1]
    level = _read(root, dev + "/md/level")
    if level is not None:
        models = []
        for member in _slaves(root, dev):
            _, member_models = _classify(root, member, depth + 1, visits)
            models.extend(member_models)
        if level in _RAID_LEVELS:
            return level, models
        log.warning("%s: md level %r is not one tierlens reports", name, level)
        return "other", models
    if name.startswith("dm-"):
        members = _slaves(root, dev)
        if not members:
            log.warning("%s: device-mapper device without slaves/", name)
            return "other", []
        kinds, models = [], []
        for member in members:
            kind, member_models = _classify(root, member, depth + 1, visits)
            kinds.append(kind)
            models.extend(member_models)
        if len(set(kinds)) == 1:  # LVM on one disk (or on disks of one kind): that kind
            return kinds[0], models
        log.warning("%s: device-mapper over mixed devices %s", name, kinds)
        return "other", models
    model = _read(root, dev + "/device/model")
    models = [model] if model else []
    if name.startswith("nvme"):
        return "nvme", models
    rotational = _read(root, dev + "/queue/rotational")
    if rotational == "1":
        return "hdd", models
    if rotational == "0":
        return "ssd", models
    log.warning("%s: no queue/rotational in sysfs", name)
    return "other", models


def _slaves(root, dev):
    """In-root sysfs directories of the devices under ``dev`` (its slaves/), in name order."""
    try:
        names = sorted(os.listdir(_under(root, dev + "/slaves")))
    except OSError:
        return []
    out = []
    for n in names:
        target = _resolve(root, dev + "/slaves/" + n, must_exist=True)
        if target is None or not _exists(root, target):
            for alt in ("/sys/class/block/" + n, "/sys/block/" + n):
                target = _resolve(root, alt, must_exist=True)
                if target is not None:
                    break
        if target is not None:
            out.append(target)
        else:
            log.warning("%s: slave %s not found in sysfs", dev, n)
    return out


# ----------------------------------------------------------------------------- statfs fallback


def _statfs_type(path):
    """File system magic of ``path`` via statfs(2); None when it cannot be called."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        buf = ctypes.create_string_buffer(256)  # struct statfs is 120 bytes on x86_64 and aarch64
        if libc.statfs(os.fsencode(path), buf) != 0:
            return None
        f_type = ctypes.c_long.from_buffer(buf).value & 0xFFFFFFFF
    except (OSError, AttributeError, ValueError):
        return None
    return _MAGIC.get(f_type, "other")


# ----------------------------------------------------------------------------- detect


def detect(scratch, root="/"):
    """Storage type under ``scratch``; every /proc and /sys path is read under ``root``.

    Never raises: any problem gives storage_type 'other' (the reason is logged).
    """
    try:
        return _detect(scratch, root)
    except Exception as e:  # noqa: BLE001 - the cron must publish something whatever happens
        log.warning("detection failed for %s: %s", scratch, e)
        return Detection("other", [], None, None)


def _detect(scratch, root):
    root = os.path.abspath(root)
    path = _resolve(root, os.path.abspath(scratch)) or os.path.abspath(scratch)
    text = _read(root, "/proc/self/mountinfo")
    if text is None:
        if root == "/":
            kind = _statfs_type(path)
            log.warning("no /proc/self/mountinfo; statfs says %s", kind)
            return Detection(kind or "other", [], None, None)
        log.warning("no proc/self/mountinfo under %s", root)
        return Detection("other", [], None, None)
    mount = _containing_mount(_parse_mountinfo(text), path)
    if mount is None:
        log.warning("no mount in mountinfo contains %s", path)
        return Detection("other", [], None, None)
    fstype, source = mount.fstype, mount.source
    if fstype in _FSTYPE:
        return Detection(_FSTYPE[fstype], [], fstype, source)
    dev = _resolve(root, "/sys/dev/block/" + mount.major_minor, must_exist=True)
    if dev is None:
        log.warning("%s (%s on %s): no /sys/dev/block/%s", path, fstype, source, mount.major_minor)
        return Detection("other", [], fstype, source)
    try:
        kind, models = _classify(root, dev)
    except _Budget as e:
        log.warning("%s: more than %d devices under it (at %s)", path, _MAX_VISITS, e)
        return Detection("other", [], fstype, source)
    return Detection(kind, models, fstype, source)


# ----------------------------------------------------------------------------- HTCondor's layouts


def job_scratch_dir(execute, starter_pid, nested=True):
    """The scratch directory the starter gives a job (its _CONDOR_SCRATCH_DIR).

    EXECUTE/dir_<pid>, and its "scratch" subdirectory when STARTER_NESTED_SCRATCH is true (the
    default from HTCondor 25.4; the starter's own metadata then goes to the sibling directories
    "user" and "htcondor").
    """
    slot_dir = os.path.join(execute, "dir_%d" % int(starter_pid))
    return os.path.join(slot_dir, "scratch") if nested else slot_dir


def _lvm_prefix(vg):
    """Device-mapper names of LVM volumes are <vg>-<lv> with each "-" inside a name doubled."""
    return vg.replace("-", "--") + "-"


def _dm_name(root, dev):
    return _read(root, dev + "/dm/name") or ""


def detect_volume_group(vg, root="/"):
    """Storage of the physical volumes of LVM volume group ``vg`` (every device of the group that
    sysfs shows, followed down to what is not the group's own), or None when sysfs shows none.

    HTCondor's per-job scratch volumes (STARTD_ENFORCE_DISK_LIMITS) are logical volumes of it.
    """
    try:
        names = sorted(os.listdir(_under(root, "/sys/block")))
    except OSError:
        return None
    prefix = _lvm_prefix(vg)
    ours = [n for n in names if n.startswith("dm-") and _dm_name(root, "/sys/block/" + n).startswith(prefix)]
    leaves, seen = [], set()
    todo = [_resolve(root, "/sys/block/" + n, must_exist=True) for n in ours]
    while todo:
        dev = todo.pop(0)
        if dev is None or dev in seen:
            continue
        seen.add(dev)
        for member in _slaves(root, dev):
            base = member.rsplit("/", 1)[-1]
            if base.startswith("dm-") and _dm_name(root, member).startswith(prefix):
                todo.append(member)  # a thin pool's data volume, a cache volume...
            elif member not in leaves:
                leaves.append(member)
    if not leaves:
        return None
    kinds, models = [], []
    for leaf in sorted(leaves, key=lambda d: d.rsplit("/", 1)[-1]):
        try:
            kind, leaf_models = _classify(root, leaf)
        except _Budget:
            log.warning("volume group %s: more than %d devices under %s", vg, _MAX_VISITS, leaf)
            kind, leaf_models = "other", []
        kinds.append(kind)
        models.extend(m for m in leaf_models if m not in models)
    kind = kinds[0] if len(set(kinds)) == 1 else "other"
    if kind == "other" and len(set(kinds)) > 1:
        log.warning("volume group %s over mixed devices %s", vg, kinds)
    return Detection(kind, models, "lvm", "/dev/" + vg)


def _truthy(value):
    return str(value).strip().lower() in ("true", "1", "yes", "on")


def detect_job_scratch(scratch, root="/", enforce_disk_limits=False, lvm_vg="", lvm_backing_file=""):
    """What a job on this node writes its scratch to.

    Without per-job volumes: the storage under ``scratch``. With them (enforce_disk_limits): the
    volume group's physical volumes; with no group named, HTCondor makes one on
    ``lvm_backing_file``, so the storage under that file; if neither can be found, ``scratch``.
    """
    if enforce_disk_limits:
        if lvm_vg:
            d = detect_volume_group(lvm_vg, root)
            if d is not None:
                return d
            log.warning("volume group %s: no device in sysfs; measuring %s", lvm_vg, scratch)
        elif lvm_backing_file:
            return detect(os.path.dirname(lvm_backing_file) or "/", root)
    return detect(scratch, root)


# ----------------------------------------------------------------------------- the cron output


def _quote(value):
    """A string literal in the old ClassAd syntax the startd reads from cron output.

    There only a quote is escaped (\\"); a backslash is taken literally, so one before a quote
    would be ambiguous: backslashes become "/" and line breaks spaces (no device model has either).
    """
    clean = value.replace("\\", "/").replace("\r", " ").replace("\n", " ")
    return '"' + clean.replace('"', '\\"') + '"'


def _slots(given):
    if given:
        try:
            return max(1, int(given))
        except ValueError:
            log.warning("--slots %r is not a number", given)
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def classad_lines(d, scratch, ab_arm, cache_route, slots):
    """The STARTD_CRON output for one detection: ``Attr = value`` lines, then "-"."""

    def opt(v):
        return _quote(v) if v else "undefined"

    return [
        "TierlensStorageType = " + _quote(d.storage_type),
        "TierlensScratchDevices = {" + ", ".join(_quote(m) for m in d.device_models) + "}",
        "TierlensScratchPath = " + _quote(scratch),
        "TierlensScratchFsType = " + opt(d.fstype),
        "TierlensScratchSource = " + opt(d.source_device),
        "TierlensAbArm = " + opt(ab_arm),
        "TierlensCacheRoute = " + opt(cache_route),
        "TierlensNodeSlots = %d" % slots,
        "TierlensDetectorVersion = %d" % DETECTOR_VERSION,
        "-",
    ]


def main(argv=None):
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="tierlens_startd_cron: %(message)s")
    p = argparse.ArgumentParser(description="Publish tierlens machine attributes (STARTD_CRON).")
    # in a job the starter sets _CONDOR_SCRATCH_DIR (EXECUTE/dir_<pid>[/scratch]): measure that
    p.add_argument(
        "--scratch",
        default=os.environ.get("_CONDOR_SCRATCH_DIR") or os.environ.get("_CONDOR_EXECUTE", "/var/lib/condor/execute"),
        help="job scratch directory (the startd's EXECUTE; in a job, _CONDOR_SCRATCH_DIR)",
    )
    p.add_argument(
        "--enforce-disk-limits",
        default="",
        help="STARTD_ENFORCE_DISK_LIMITS: each job's scratch is a logical volume of its own",
    )
    p.add_argument("--lvm-vg", default="", help="LVM_VOLUME_GROUP_NAME, the group of those volumes")
    p.add_argument(
        "--lvm-backing-file", default="", help="LVM_BACKING_FILE, where HTCondor makes a group when none is named"
    )
    p.add_argument("--ab-arm", default="", help="this node's A/B arm; empty outside a trial")
    p.add_argument("--cache-route", default="", help="where jobs' remote reads go, e.g. cache:host:1094")
    p.add_argument("--slots", default="", help="cores the startd offers jobs (NUM_CPUS)")
    p.add_argument("--root", default="/", help=argparse.SUPPRESS)  # tests: a fake /proc and /sys
    try:
        args, unknown = p.parse_known_args(argv)
        if unknown:
            log.warning("ignoring arguments %s", unknown)
        d = detect_job_scratch(
            args.scratch,
            args.root,
            _truthy(args.enforce_disk_limits),
            args.lvm_vg.strip(),
            args.lvm_backing_file.strip(),
        )
        lines = classad_lines(
            d, args.scratch, args.ab_arm.strip() or None, args.cache_route.strip() or None, _slots(args.slots)
        )
    except BaseException as e:  # noqa: BLE001 - including SystemExit from argparse
        log.warning("failed: %s", e)
        lines = ['TierlensStorageType = "other"', "TierlensDetectorVersion = %d" % DETECTOR_VERSION, "-"]
    sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
