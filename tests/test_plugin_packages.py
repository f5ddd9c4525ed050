"""The plugin packages a site installs: the Slurm SPANK plugin as a .deb built against the installed
Slurm headers (depending on exactly that Slurm) and as an RPM from its spec; the HTCondor startd cron
and its config.d file as a noarch .deb and RPM. rpmbuild is Debian's, which proves the specs build.
The Slurm .deb installed and run in a real cluster: tests/test_slurm_cluster.py."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
VERSION = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
SPANK_H = Path("/usr/include/slurm/spank.h")

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def _need(*tools: str) -> None:
    missing = [t for t in tools if not shutil.which(t)]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (deploy/ci/system-packages.txt)")


def _make(plugin: str, target: str, build: Path) -> None:
    build.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(
        ["make", "-C", str(REPO / "plugins" / plugin), f"BUILD={build}", target], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]


def _out(*args: str) -> str:
    return subprocess.run(args, capture_output=True, text=True, check=True).stdout


def _slurm_version_from_header() -> str:
    """The installed Slurm's version, from slurm_version.h (0xMMmmuu), read here independently."""
    text = (SPANK_H.parent / "slurm_version.h").read_text()
    n = int(re.search(r"#define SLURM_VERSION_NUMBER\s+(0x[0-9a-fA-F]+)", text).group(1), 16)
    return f"{n >> 16 & 255}.{n >> 8 & 255:02d}.{n & 255}"


@pytest.fixture(scope="module")
def build(tmp_path_factory) -> Path:
    _need("make", "gcc", "dpkg-deb", "rpmbuild")
    if not SPANK_H.exists():
        pytest.skip("needs /usr/include/slurm/spank.h (libslurm-dev)")
    return tmp_path_factory.mktemp("packages")


def test_slurm_deb_depends_on_the_slurm_it_was_built_against(build):
    _make("slurm", "deb", build / "slurm")
    slurm = _slurm_version_from_header()
    (deb,) = (build / "slurm").glob("tierlens-spank_*.deb")
    fields = dict(line.split(": ", 1) for line in _out("dpkg-deb", "-f", str(deb)).splitlines() if ": " in line)
    installed = _out("dpkg-query", "-W", "-f", "${Version}", "slurm-wlm-basic-plugins")
    assert fields["Package"] == "tierlens-spank"
    assert fields["Version"] == f"{VERSION}+slurm{slurm}"
    assert fields["Architecture"] == _out("dpkg", "--print-architecture").strip()
    assert f"slurm-wlm-basic-plugins (= {installed})" in fields["Depends"]
    assert installed.split("-")[0] == slurm  # the headers are the installed Slurm's

    multiarch = _out("dpkg-architecture", "-qDEB_HOST_MULTIARCH").strip()
    files = _out("dpkg-deb", "-c", str(deb))
    plugin = f"./usr/lib/{multiarch}/slurm-wlm/tierlens_spank.so"
    assert plugin in files
    assert "./usr/share/doc/tierlens-spank/copyright" in files
    # Not enabled by installing: no plugstack configuration in the package.
    assert "/etc/" not in files

    # The packaged .so is the plugin built for this Slurm: its plugin_version is SLURM_VERSION_NUMBER.
    root = build / "slurm-x"
    subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
    syms = _out("nm", "-D", "--defined-only", str(root / plugin))
    assert " slurm_spank_init\n" in syms and " plugin_version\n" in syms


def test_slurm_rpm_spec_builds_and_requires_that_slurm(build):
    _make("slurm", "rpm", build / "slurm")
    slurm = _slurm_version_from_header()
    (rpm,) = (build / "slurm" / "rpm" / "RPMS").glob("*/tierlens-spank-*.rpm")
    assert _out("rpm", "-qp", "--qf", "%{NAME} %{VERSION} %{RELEASE}", str(rpm)).split() == [
        "tierlens-spank",
        VERSION,
        f"1.slurm{slurm}",
    ]
    requires = _out("rpm", "-qpR", str(rpm)).splitlines()
    assert any(re.fullmatch(rf"slurm\(\S+\) = {re.escape(slurm)}", r.strip()) for r in requires), requires
    assert "/usr/lib64/slurm/tierlens_spank.so" in _out("rpm", "-qpl", str(rpm)).splitlines()


def test_htcondor_packages_install_the_cron_and_its_conffile(build):
    _make("htcondor", "deb", build / "condor")
    _make("htcondor", "rpm", build / "condor")
    (deb,) = (build / "condor").glob("tierlens-condor-cron_*_all.deb")
    assert _out("dpkg-deb", "-f", str(deb), "Architecture").strip() == "all"
    assert _out("dpkg-deb", "--info", str(deb), "conffiles").split() == ["/etc/condor/config.d/50-tierlens.conf"]
    (rpm,) = (build / "condor" / "rpm" / "RPMS" / "noarch").glob("tierlens-condor-cron-*.noarch.rpm")
    assert _out("rpm", "-qpc", str(rpm)).split() == ["/etc/condor/config.d/50-tierlens.conf"]
    assert "/usr/libexec/tierlens/tierlens_startd_cron.py" in _out("rpm", "-qpl", str(rpm)).splitlines()

    # Unpacked, the configuration points the startd at the packaged script, and that script runs.
    root = build / "condor-x"
    subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
    script = root / "usr/libexec/tierlens/tierlens_startd_cron.py"
    assert script.read_bytes() == (REPO / "plugins/htcondor/tierlens_startd_cron.py").read_bytes()
    assert os.access(script, os.X_OK)
    (root / "condor_config").write_text(
        f"EXECUTE = /tmp\nNUM_CPUS = 4\nCOLLECTOR_HOST = pool.test\n"
        f"include : {root / 'etc/condor/config.d/50-tierlens.conf'}\n"
    )
    probe = (
        "import htcondor2 as h; print(h.param['STARTD_CRON_TIERLENS_EXECUTABLE']); "
        "print(h.param['STARTD_CRON_TIERLENS_ARGS'])"
    )
    env = dict(os.environ, CONDOR_CONFIG=str(root / "condor_config"))
    executable, args = _out_env([sys.executable, "-c", probe], env).splitlines()
    assert executable == "/usr/libexec/tierlens/tierlens_startd_cron.py"
    assert "--scratch=/tmp" in args and "--slots=4" in args
    ad = subprocess.run(
        [sys.executable, "-S", "-I", str(script), *args.split()], capture_output=True, text=True, timeout=60
    )
    assert ad.returncode == 0
    attrs = dict(line.split(" = ", 1) for line in ad.stdout.splitlines() if " = " in line)
    assert attrs["TierlensNodeSlots"] == "4" and attrs["TierlensScratchPath"] == '"/tmp"'


def _out_env(args: list[str], env: dict[str, str]) -> str:
    return subprocess.run(args, capture_output=True, text=True, check=True, env=env).stdout
