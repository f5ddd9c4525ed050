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

__all__ = ["Detection", "detect", "classad_lines", "main", "DETECTOR_VERSION"]

DETECTOR_VERSION = 1
log = logging.getLogger("tierlens.detect")

#: What detect() returns. storage_type is one of hdd ssd nvme raid0 raid1 raid5 raid6 raid10
#: tmpfs nfs lustre gpfs cephfs other; device_models lists the block devices' models (RAID
#: members one by one, in member-name order); fstype and source_device come from mountinfo.
Detection = namedtuple("Detection", "storage_type device_models fstype source_device")

_FSTYPE = {
    "nfs": "nfs", "nfs4": "nfs",
    "lustre": "lustre",
    "gpfs": "gpfs",
    # kernel client; the fstab helper's type; what a ceph-fuse mount shows in mountinfo
    "ceph": "cephfs", "fuse.ceph": "cephfs", "fuse.ceph-fuse": "cephfs",
    "tmpfs": "tmpfs", "ramfs": "tmpfs",
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
        if field[i] == "\\" and i + 3 < len(field) + 1 and field[i + 1:i + 4].isdigit():
            out.append(chr(int(field[i + 1:i + 4], 8)))
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

def _classify(root, dev, depth=0):
    """Storage type and device models of the sysfs block device directory ``dev`` (in-root path)."""
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
            _, member_models = _classify(root, member, depth + 1)
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
            kind, member_models = _classify(root, member, depth + 1)
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
    kind, models = _classify(root, dev)
    return Detection(kind, models, fstype, source)


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


def classad_lines(d, scratch, ab_arm, cache_route,
                  slots):
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
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="tierlens_startd_cron: %(message)s")
    p = argparse.ArgumentParser(description="Publish tierlens machine attributes (STARTD_CRON).")
    p.add_argument("--scratch", default=os.environ.get("_CONDOR_EXECUTE", "/var/lib/condor/execute"),
                   help="job scratch directory (the startd's EXECUTE)")
    p.add_argument("--ab-arm", default="", help="this node's A/B arm; empty outside a trial")
    p.add_argument("--cache-route", default="", help="where jobs' remote reads go, e.g. cache:host:1094")
    p.add_argument("--slots", default="", help="cores the startd offers jobs (NUM_CPUS)")
    p.add_argument("--root", default="/", help=argparse.SUPPRESS)  # tests: a fake /proc and /sys
    try:
        args, unknown = p.parse_known_args(argv)
        if unknown:
            log.warning("ignoring arguments %s", unknown)
        d = detect(args.scratch, args.root)
        lines = classad_lines(d, args.scratch, args.ab_arm.strip() or None,
                              args.cache_route.strip() or None, _slots(args.slots))
    except BaseException as e:  # noqa: BLE001 - including SystemExit from argparse
        log.warning("failed: %s", e)
        lines = ['TierlensStorageType = "other"', "TierlensDetectorVersion = %d" % DETECTOR_VERSION, "-"]
    sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
