"""Slurm: the SPANK plugin (slurm.conf, plugstack.conf, the built .so, a test srun) and sacct's JSON."""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .findings import Finding, Options, Status, given_but_missing, last_line, not_here, run

PLUGIN_FILE = "tierlens_spank.so"
#: Where Slurm looks for plugins when slurm.conf gives no PluginDir (Debian, then EL/SchedMD builds).
DEFAULT_PLUGIN_DIRS = (
    "/usr/lib/x86_64-linux-gnu/slurm-wlm",
    "/usr/lib/aarch64-linux-gnu/slurm-wlm",
    "/usr/lib64/slurm",
    "/usr/lib/slurm",
    "/usr/local/lib/slurm",
)

#: Where Slurm's commands read their configuration when neither --slurm-conf nor $SLURM_CONF says.
DEFAULT_SLURM_CONF = Path("/etc/slurm/slurm.conf")


def slurm_conf_path(opts: Options) -> Path:
    return opts.slurm_conf or Path(os.environ.get("SLURM_CONF") or DEFAULT_SLURM_CONF)


def _slurm_env(opts: Options) -> dict[str, str]:
    """The environment for Slurm's commands: the slurm.conf doctor reads is the one they use."""
    return {**os.environ, "SLURM_CONF": str(slurm_conf_path(opts))}


def read_slurm_conf(path: Path) -> dict[str, str]:
    """slurm.conf's top-level Key=Value settings, keys lower-cased (Slurm ignores their case)."""
    out: dict[str, str] = {}
    for line in path.read_text(errors="replace").splitlines():
        line = line.split("#", 1)[0].strip()
        key, sep, value = line.partition("=")
        if sep and " " not in key.strip():
            out.setdefault(key.strip().lower(), value.strip())
    return out


@dataclass(frozen=True)
class PlugstackLine:
    file: Path
    line: int
    control: str  # optional | required
    plugin: str
    args: tuple[str, ...]


def plugstack_lines(path: Path, depth: int = 0) -> Iterator[PlugstackLine]:
    """Every plugin line of a plugstack.conf, following its `include` globs (Slurm's syntax)."""
    if depth > 8:
        return
    for n, raw in enumerate(path.read_text(errors="replace").splitlines(), 1):
        words = shlex.split(raw, comments=True)
        if not words:
            continue
        if words[0] == "include":
            for inc in sorted(glob.glob(" ".join(words[1:]))):
                yield from plugstack_lines(Path(inc), depth + 1)
        elif len(words) >= 2:
            yield PlugstackLine(path, n, words[0], words[1], tuple(words[2:]))


def installed_slurm_version(opts: Options) -> tuple[int, int, int] | None:
    for exe in ("slurmd", "srun", "sinfo"):
        if shutil.which(exe):
            try:
                out = run([exe, "-V"], opts.timeout, _slurm_env(opts)).stdout
            except (OSError, subprocess.TimeoutExpired):
                continue
            m = re.search(r"(\d+)\.(\d+)\.(\d+)", out)
            if m:
                return tuple(int(x) for x in m.groups())  # type: ignore[return-value]
    return None


def plugin_built_for(so: Path) -> tuple[int, int, int] | None:
    """The Slurm version a SPANK plugin was built against: its ``plugin_version`` symbol, which
    spank.h's SPANK_PLUGIN() sets to SLURM_VERSION_NUMBER (0xMMmmuu). Read from the ELF file, not
    by loading it: the plugin's Slurm symbols only resolve inside slurmstepd and srun."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    try:
        with so.open("rb") as f:
            elf = ELFFile(f)
            dynsym = elf.get_section_by_name(".dynsym")
            symbols = dynsym.get_symbol_by_name("plugin_version") if dynsym is not None else None
            if not symbols:
                return None
            size = symbols[0]["st_size"] or 4
            f.seek(next(elf.address_offsets(symbols[0]["st_value"], size)))
            n = int.from_bytes(f.read(size), "little" if elf.little_endian else "big")
    except (OSError, ELFError, StopIteration):
        return None
    return n >> 16 & 255, n >> 8 & 255, n & 255


def _resolve_plugin(name: str, conf: dict[str, str]) -> Path:
    if name.startswith("/"):
        return Path(name)
    dirs = conf.get("plugindir", "").split(":") if conf.get("plugindir") else list(DEFAULT_PLUGIN_DIRS)
    for d in dirs:
        if (Path(d) / name).exists():
            return Path(d) / name
    return Path(dirs[0]) / name


def _fmt_version(v: tuple[int, int, int]) -> str:
    return f"{v[0]}.{v[1]:02d}.{v[2]}"


def check_slurm(opts: Options) -> list[Finding]:
    conf_path = slurm_conf_path(opts)
    if not conf_path.is_file():
        if opts.slurm_conf is not None or os.environ.get("SLURM_CONF"):
            return given_but_missing(
                "slurm", "slurm.conf", "slurm.conf", conf_path, "check the path given with --slurm-conf or $SLURM_CONF"
            )
        return not_here(
            "slurm",
            f"no {conf_path}",
            "on a Slurm node or submit host, give --slurm-conf FILE (or set $SLURM_CONF); elsewhere nothing to do",
        )
    area = "slurm"
    try:
        conf = read_slurm_conf(conf_path)
    except OSError as e:
        return [
            Finding(
                area, "slurm.conf", Status.FAIL, f"cannot read {conf_path}: {e}", "run doctor as root or as SlurmUser"
            )
        ]
    plugstack = Path(conf.get("plugstackconfig") or conf_path.with_name("plugstack.conf"))
    if not plugstack.is_file():
        return [
            Finding(
                area,
                "plugstack line",
                Status.WARN,
                f"no {plugstack}: the tierlens plugin is not loaded",
                f"add to {plugstack}: optional {PLUGIN_FILE} (deploy/slurm/README.md)",
            )
        ]
    ours = [ln for ln in plugstack_lines(plugstack) if Path(ln.plugin).name == PLUGIN_FILE]
    if not ours:
        return [
            Finding(
                area,
                "plugstack line",
                Status.WARN,
                f"{plugstack} has no {PLUGIN_FILE} line: jobs are not tagged",
                f"add: optional {PLUGIN_FILE} (deploy/slurm/plugstack.conf.example)",
            )
        ]
    findings = []
    version = installed_slurm_version(opts)
    for ln in ours:
        where = f"{ln.file}:{ln.line}"
        if ln.control == "required":
            findings.append(
                Finding(
                    area,
                    "plugstack line",
                    Status.FAIL,
                    f"{where} loads the plugin as 'required': Slurm kills a job when a required plugin fails",
                    f"change 'required' to 'optional' in {where}",
                )
            )
        elif ln.control == "optional":
            findings.append(Finding(area, "plugstack line", Status.OK, f"{where}: optional {ln.plugin}"))
        else:
            findings.append(
                Finding(
                    area,
                    "plugstack line",
                    Status.FAIL,
                    f"{where}: unknown control '{ln.control}'",
                    "begin the line with 'optional'",
                )
            )
        findings.append(_check_plugin_file(_resolve_plugin(ln.plugin, conf), version))
    if opts.test_srun:
        findings.append(_check_srun(opts))
    return findings


def _check_plugin_file(so: Path, slurm: tuple[int, int, int] | None) -> Finding:
    area = "slurm"
    if not so.is_file():
        return Finding(
            area,
            "plugin installed",
            Status.FAIL,
            f"{so} does not exist: the plugstack line loads nothing",
            "install the tierlens-spank package (make -C plugins/slurm deb, or the RPM) or fix the path",
        )
    built = plugin_built_for(so)
    if built is None:
        return Finding(
            area,
            "plugin installed",
            Status.FAIL,
            f"{so} is not a SPANK plugin (no plugin_version)",
            "rebuild the package against this Slurm's headers (make -C plugins/slurm deb)",
        )
    if slurm is None:
        return Finding(
            area,
            "plugin installed",
            Status.WARN,
            f"{so} built for Slurm {_fmt_version(built)}; the installed Slurm's version is unknown",
            "put slurmd or srun on PATH so doctor can compare",
        )
    if built[:2] != slurm[:2]:
        return Finding(
            area,
            "plugin installed",
            Status.FAIL,
            f"{so} built for Slurm {_fmt_version(built)}, this host runs {_fmt_version(slurm)}: Slurm "
            "refuses to load it",
            "rebuild and reinstall the package against this Slurm's headers",
        )
    if built != slurm:
        return Finding(
            area,
            "plugin installed",
            Status.WARN,
            f"{so} built for Slurm {_fmt_version(built)}, this host runs {_fmt_version(slurm)}",
            "rebuild the package after Slurm upgrades, so its dependency matches",
        )
    return Finding(area, "plugin installed", Status.OK, f"{so}, built for Slurm {_fmt_version(built)} (installed)")


SRUN_PROBE = "echo TL:TIERLENS_STORAGE_TYPE=${TIERLENS_STORAGE_TYPE-}; echo TL:XRD_MONINFO=${XRD_MONINFO-}"


def _check_srun(opts: Options) -> Finding:
    area = "slurm"
    if not shutil.which("srun"):
        return Finding(area, "job variables", Status.WARN, "no srun on this host", "run doctor --srun on a submit host")
    argv = ["srun", "-n1", "-t", "1", "-J", "tierlens-doctor", *opts.srun_args, "sh", "-c", SRUN_PROBE]
    try:
        proc = run(argv, opts.timeout, env={**_slurm_env(opts), "XRD_MONINFO": ""})
    except subprocess.TimeoutExpired:
        return Finding(
            area,
            "job variables",
            Status.WARN,
            f"test srun did not finish in {opts.timeout:.0f} s",
            "retry when the partition has a free core, or give --srun-args '-p PARTITION'",
        )
    if proc.returncode != 0:
        return Finding(
            area,
            "job variables",
            Status.WARN,
            f"test srun failed: {last_line(proc.stderr)}",
            "give --srun-args for a partition and account this user may use",
        )
    seen = dict(line[3:].split("=", 1) for line in proc.stdout.splitlines() if line.startswith("TL:") and "=" in line)
    storage, moninfo = seen.get("TIERLENS_STORAGE_TYPE", ""), seen.get("XRD_MONINFO", "")
    if storage and moninfo:
        return Finding(
            area, "job variables", Status.OK, f"test job saw TIERLENS_STORAGE_TYPE={storage} XRD_MONINFO={moninfo}"
        )
    return Finding(
        area,
        "job variables",
        Status.FAIL,
        "a test job got no TIERLENS_STORAGE_TYPE / XRD_MONINFO",
        "check the plugstack.conf on the node the job ran on, and 'tierlens' lines in its slurmd log",
    )


def check_sacct(opts: Options) -> list[Finding]:
    if not shutil.which("sacct") or not slurm_conf_path(opts).is_file():
        return []  # check_slurm already said Slurm is not here
    area = "slurm"
    try:
        proc = run(["sacct", "--json", "-X", "-S", "now-10minutes", "-E", "now"], opts.timeout, _slurm_env(opts))
    except subprocess.TimeoutExpired:
        return [
            Finding(
                area,
                "sacct --json",
                Status.FAIL,
                f"sacct did not answer in {opts.timeout:.0f} s",
                "check slurmdbd (systemctl status slurmdbd) and AccountingStorageHost",
            )
        ]
    if proc.returncode != 0:
        return [
            Finding(
                area,
                "sacct --json",
                Status.FAIL,
                f"sacct --json failed: {last_line(proc.stderr)}",
                "Slurm 21.08 or newer with accounting through slurmdbd; tierlens falls back to --parsable2",
            )
        ]
    try:
        meta = json.loads(proc.stdout).get("meta", {})
    except json.JSONDecodeError as e:
        return [
            Finding(
                area,
                "sacct --json",
                Status.FAIL,
                f"sacct --json printed no JSON ({e})",
                "tierlens ingest slurm falls back to --parsable2; report the Slurm version to tierlens",
            )
        ]
    return [Finding(area, "sacct --json", Status.OK, f"works; data_parser {data_parser(meta)}")]


def data_parser(meta: dict) -> str:
    """The layout version sacct --json speaks: ``meta.plugin.data_parser`` from Slurm 23.02,
    before that the openapi plugin type (``openapi/dbv0.0.38`` -> ``dbv0.0.38``)."""
    plugin = meta.get("plugin") or meta.get("plugins") or {}
    if plugin.get("data_parser"):
        return str(plugin["data_parser"])
    kind = str(plugin.get("type", ""))
    return kind.rsplit("/", 1)[-1] if kind else "unknown"
