"""Root filesystems of newer Debian releases, so make test runs newer Slurm and XRootD than the host's.

Each generation is a Debian suite built by mmdebstrap from Debian's own packages (the packages a
site installs), kept in a cache folder outside git and rebuilt only when a package version changes:
the folder's name holds a hash of the candidate versions that `apt-cache policy` gives for the
suite, read through a sources file of its own (the host's apt configuration is not touched).

    python tests/matrix/rootfs.py [trixie sid]    # build what is missing, print each tree's path

If the mirror cannot be reached, the newest tree already built for the suite is used (with a
warning), so an offline re-run still tests what was tested before.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

CACHE = Path(os.environ.get("TIERLENS_MATRIX_CACHE", "/var/cache/tierlens-matrix"))
MIRROR = os.environ.get("TIERLENS_MATRIX_MIRROR", "http://deb.debian.org/debian")
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
# Bumped when the recipe below changes in a way the package versions do not show.
RECIPE_VERSION = 1
# Everything the matrix tests run inside a tree: the Slurm cluster with accounting, the plugin's
# build and packaging, an XRootD origin and cache, and a Python for helper scripts.
PACKAGES = (
    "slurmctld",
    "slurmd",
    "slurmdbd",
    "slurm-client",
    "munge",
    "mariadb-server",
    "libslurm-dev",
    "gcc",
    "make",
    "libc6-dev",
    "dpkg-dev",
    "xrootd-server",
    "xrootd-server-plugins",
    "xrootd-client",
    "python3",
    "procps",
)
BUILD_TIMEOUT = 1800  # a fresh tree takes about a minute on a good mirror
APT_TIMEOUT = 300
# A mirror that is a dated snapshot serves unstable's Release past its Valid-Until; the signature
# is still checked.
VALID_UNTIL = "false"


@dataclass(frozen=True)
class Generation:
    """One Debian release whose Slurm and XRootD the tests run."""

    name: str  # the suite, as apt knows it
    release: str  # what a site manager calls it

    @property
    def apt_dir(self) -> Path:
        return CACHE / "apt" / self.name


GENERATIONS = {g.name: g for g in (Generation("trixie", "Debian 13"), Generation("sid", "Debian unstable"))}


def _apt_options(gen: Generation) -> list[str]:
    d = gen.apt_dir
    return [
        "-o",
        f"Dir::Etc::sourcelist={d / 'sources.list'}",
        "-o",
        "Dir::Etc::sourceparts=-",
        "-o",
        f"Dir::State::Lists={d / 'lists'}",
        "-o",
        f"Dir::Cache={d / 'cache'}",
        "-o",
        "APT::Get::List-Cleanup=0",
        "-o",
        f"Dir::State::status={d / 'status'}",
        "-o",
        f"Acquire::Check-Valid-Until={VALID_UNTIL}",
    ]


def candidate_versions(gen: Generation) -> dict[str, str]:
    """The version of each package that a tree of this suite would get today."""
    d = gen.apt_dir
    for sub in ("lists/partial", "cache/archives/partial"):
        (d / sub).mkdir(parents=True, exist_ok=True)
    (d / "sources.list").write_text(f"deb [signed-by={KEYRING}] {MIRROR} {gen.name} main\n")
    (d / "status").touch()  # an empty dpkg status: the host's installed packages do not count
    subprocess.run(
        ["apt-get", *_apt_options(gen), "update", "-q"], check=True, capture_output=True, text=True, timeout=APT_TIMEOUT
    )
    out = subprocess.run(
        ["apt-cache", *_apt_options(gen), "policy", *PACKAGES],
        check=True,
        capture_output=True,
        text=True,
        timeout=APT_TIMEOUT,
    ).stdout
    versions, pkg = {}, None
    for line in out.splitlines():
        if line and not line[0].isspace() and line.endswith(":"):
            pkg = line[:-1]
        elif pkg and line.strip().startswith("Candidate:"):
            versions[pkg] = line.split(":", 1)[1].strip()
    missing = [p for p in PACKAGES if versions.get(p, "(none)") == "(none)"]
    if missing:
        raise RuntimeError(f"{gen.name} has no candidate for {', '.join(missing)} at {MIRROR}")
    return versions


def tree_key(versions: dict[str, str]) -> str:
    text = f"recipe {RECIPE_VERSION}\n" + "".join(f"{p}={v}\n" for p, v in sorted(versions.items()))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _built(gen: Generation) -> list[Path]:
    """Finished trees of this suite, newest first (a tree is finished once its manifest exists)."""
    found = [p.parent for p in CACHE.glob(f"{gen.name}-*/manifest.json")]
    return sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)


def manifest(tree_dir: Path) -> dict:
    return json.loads((tree_dir / "manifest.json").read_text())


def ensure(gen: Generation, log=print) -> Path:
    """The root filesystem of `gen` for today's package versions; built only when missing."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f"{gen.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two test sessions build a suite once
        try:
            versions = candidate_versions(gen)
        except (subprocess.SubprocessError, RuntimeError, OSError) as e:
            old = _built(gen)
            if not old:
                raise RuntimeError(f"cannot build the {gen.name} root filesystem: {e}") from e
            log(f"warning: {gen.name}: {e}; using the tree built before, {old[0]}")
            return old[0] / "root"
        where = CACHE / f"{gen.name}-{tree_key(versions)}"
        if (where / "manifest.json").exists():
            return where / "root"
        _build(gen, versions, where, log)
        for old in _built(gen):
            if old != where:
                shutil.rmtree(old, ignore_errors=True)
        return where / "root"


def _build(gen: Generation, versions: dict[str, str], where: Path, log) -> None:
    shutil.rmtree(where, ignore_errors=True)
    where.mkdir(parents=True)
    started = time.monotonic()
    log(
        f"building the {gen.name} root filesystem in {where} (slurmd {versions['slurmd']}, "
        f"xrootd-server {versions['xrootd-server']})"
    )
    # exact versions, so the tree is the one the key names even if the mirror moves meanwhile
    include = ",".join(f"{p}={v}" for p, v in versions.items())
    r = subprocess.run(
        [
            "mmdebstrap",
            "--variant=apt",
            "--mode=root",
            f"--include={include}",
            f'--aptopt=Acquire::Check-Valid-Until "{VALID_UNTIL}"',
            f"--keyring={KEYRING}",
            gen.name,
            str(where / "root"),
            MIRROR,
        ],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT,
    )
    if r.returncode != 0:
        shutil.rmtree(where, ignore_errors=True)
        raise RuntimeError(f"mmdebstrap {gen.name} failed ({r.returncode}):\n{r.stderr[-4000:]}")
    seconds = time.monotonic() - started
    (where / "manifest.json").write_text(
        json.dumps(
            {
                "format": 1,
                "suite": gen.name,
                "release": gen.release,
                "mirror": MIRROR,
                "recipe": RECIPE_VERSION,
                "versions": versions,
                "build_seconds": round(seconds, 1),
                "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            },
            indent=1,
        )
        + "\n"
    )
    log(f"built {gen.name} in {seconds:.0f} s")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("suites", nargs="*", metavar="SUITE", help=f"of {', '.join(GENERATIONS)} (default: all)")
    args = ap.parse_args(argv)
    unknown = [s for s in args.suites if s not in GENERATIONS]
    if unknown:
        ap.error(f"unknown suite(s) {', '.join(unknown)}; known: {', '.join(GENERATIONS)}")
    if os.geteuid() != 0:
        print("not root: cannot build root filesystems; the matrix tests will fail in CI", file=sys.stderr)
        return 0
    for name in args.suites or list(GENERATIONS):
        started = time.monotonic()
        path = ensure(GENERATIONS[name], log=lambda m: print(m, file=sys.stderr))
        print(f"{name} {path} ({time.monotonic() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
