"""`tierlens doctor`: what a site admin checks on a worker node, a submit/accounting host or the
analytics host, each finding with its fix.

Each check looks at one part (Slurm plugin, HTCondor tags, sacct, XRootD collector, warehouse,
dbt, Airflow) and applies only where that part is on the host: a worker node without a warehouse
is not a failure. Nothing here changes the host: files are read, the warehouse is opened
read-only, and the one job it may start (a test `srun`) runs only when asked for.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .warehouse.publish import PublishStats

PLUGIN_FILE = "tierlens_spank.so"
#: Where Slurm looks for plugins when slurm.conf gives no PluginDir (Debian, then EL/SchedMD builds).
DEFAULT_PLUGIN_DIRS = (
    "/usr/lib/x86_64-linux-gnu/slurm-wlm",
    "/usr/lib/aarch64-linux-gnu/slurm-wlm",
    "/usr/lib64/slurm",
    "/usr/lib/slurm",
    "/usr/local/lib/slurm",
)
#: The collector rewrites its stats every second; older than this, it is not running.
STATS_STALE_SECONDS = 60.0
JOURNAL_BACKLOG_WARN_BYTES = 256 * 1024 * 1024


class Status(str, Enum):
    OK = "ok"
    WARN = "warn"
    FAIL = "fail"
    INFO = "info"


@dataclass(frozen=True)
class Finding:
    area: str
    check: str
    status: Status
    detail: str
    fix: str = ""


@dataclass
class Options:
    """What doctor looks at; every default is what the host itself says."""

    slurm_conf: Path | None = None  # default $SLURM_CONF, else /etc/slurm/slurm.conf
    test_srun: bool = False  # submit one tiny job to see the plugin's variables
    srun_args: list[str] = field(default_factory=list)  # e.g. ["-p", "debug"]
    collector_stats: Path | None = None  # default $TIERLENS_HOME/spool/xrootd/collector-stats.json
    warehouse: Path | None = None  # default: the tierlens setting
    airflow: str | None = None  # the airflow executable; default: on PATH, if any
    timeout: float = 60.0


def _not_here(area: str, why: str, fix: str) -> list[Finding]:
    """A part that is not on this host: said once, so the admin sees what was not checked, and
    what to pass or install to have it checked where it does belong."""
    return [Finding(area, "present", Status.INFO, f"not checked: {why}", fix)]


def _given_but_missing(area: str, check: str, what: str, path: Path | str, fix: str) -> list[Finding]:
    """A path the admin named (an option or a TIERLENS_/SLURM_ variable) that is not there: a failure
    for every part alike, since doctor cannot check what it was pointed at."""
    return [Finding(area, check, Status.FAIL, f"no {what} at {path}", fix)]


def _last_line(text: str) -> str:
    """The last non-empty line of a command's error output: the message, not the traceback above it."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else "(no error output)"


def _run(argv: list[str], timeout: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)


# ---- Slurm -------------------------------------------------------------------------------------

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
                out = _run([exe, "-V"], opts.timeout, _slurm_env(opts)).stdout
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
            return _given_but_missing(
                "slurm", "slurm.conf", "slurm.conf", conf_path, "check the path given with --slurm-conf or $SLURM_CONF"
            )
        return _not_here(
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
        proc = _run(argv, opts.timeout, env={**_slurm_env(opts), "XRD_MONINFO": ""})
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
            f"test srun failed: {_last_line(proc.stderr)}",
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
        proc = _run(["sacct", "--json", "-X", "-S", "now-10minutes", "-E", "now"], opts.timeout, _slurm_env(opts))
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
                f"sacct --json failed: {_last_line(proc.stderr)}",
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


# ---- HTCondor -----------------------------------------------------------------------------------


def check_htcondor(opts: Options) -> list[Finding]:
    if not shutil.which("condor_status"):
        return _not_here(
            "htcondor",
            "no condor_status on PATH",
            "on an HTCondor access point or EP, put condor_status on PATH; elsewhere nothing to do",
        )
    area = "htcondor"
    try:
        proc = _run(["condor_status", "-af", "Name", "TierlensStorageType"], opts.timeout)
    except subprocess.TimeoutExpired:
        return [
            Finding(
                area,
                "startd attributes",
                Status.FAIL,
                "condor_status did not answer",
                "check CONDOR_HOST and the collector",
            )
        ]
    if proc.returncode != 0:
        return [
            Finding(
                area,
                "startd attributes",
                Status.FAIL,
                f"condor_status failed: {_last_line(proc.stderr)}",
                "check CONDOR_HOST and the collector",
            )
        ]
    rows = [line.split() for line in proc.stdout.splitlines() if line.strip()]
    untagged = [r[0] for r in rows if len(r) < 2 or r[1] == "undefined"]
    if not rows:
        return [
            Finding(
                area,
                "startd attributes",
                Status.WARN,
                "condor_status lists no slots",
                "check that the EPs' startds report to this collector (condor_status -any)",
            )
        ]
    if untagged:
        return [
            Finding(
                area,
                "startd attributes",
                Status.FAIL,
                f"{len(untagged)} of {len(rows)} slots have no TierlensStorageType (e.g. {untagged[0]})",
                "install tierlens-condor-cron on those EPs and condor_reconfig them",
            )
        ]
    return [Finding(area, "startd attributes", Status.OK, f"all {len(rows)} slots publish TierlensStorageType")]


# ---- collector ----------------------------------------------------------------------------------


def _collector_stats_path(opts: Options) -> Path:
    from .config import paths

    return opts.collector_stats or paths().home / "spool" / "xrootd" / "collector-stats.json"


def check_collector(opts: Options) -> list[Finding]:
    path = _collector_stats_path(opts)
    if not path.exists():
        if opts.collector_stats is None:
            return _not_here(
                "collector",
                f"no {path}",
                "on the collector's host, give --collector-stats FILE (in its spool folder); "
                "to collect here: tierlens collect xrootd (deploy/README.md)",
            )
        return _given_but_missing(
            "collector",
            "running",
            "collector stats",
            path,
            "check the path, or start the collector: tierlens collect xrootd (deploy/README.md)",
        )
    try:
        stats = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        return [_bad_stats(path, str(e))]
    problem = _stats_problem(stats)
    if problem:
        return [_bad_stats(path, problem)]
    return [_collector_freshness(path, stats), *_collector_losses(stats)]


#: The fields of collector-stats.json doctor reads, and the JSON types each may have (null: absent).
STATS_FIELDS: dict[str, tuple[type, ...]] = {
    "updated_at": (int, float),
    "state": (str,),
    "kernel_drops": (int,),
    "journal_backlog_bytes": (int,),
}


def _stats_problem(stats: object) -> str | None:
    """What is wrong with a parsed collector-stats.json, naming the field; None when doctor can read it."""
    if not isinstance(stats, dict):
        return f"top level is a JSON {type(stats).__name__}, not an object"
    for name, types in STATS_FIELDS.items():
        value = stats.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, types)):
            return f"field {name!r} is {value!r}, not a {' or '.join(t.__name__ for t in types)}"
    if stats.get("updated_at") is None:
        return "field 'updated_at' is missing"
    return None


def _bad_stats(path: Path, why: str) -> Finding:
    return Finding(
        "collector",
        "running",
        Status.FAIL,
        f"{path} is not a collector stats file: {why}",
        "check that the path is the collector's collector-stats.json; the collector rewrites it every "
        "second, so restart it (systemctl restart tierlens-collector) if the file is damaged",
    )


def _collector_freshness(path: Path, stats: dict) -> Finding:
    age = time.time() - float(stats.get("updated_at") or 0)
    state = stats.get("state", "?")
    if state == "finished":
        return Finding(
            "collector",
            "running",
            Status.WARN,
            f"the collector stopped ({path}, {age:.0f} s ago)",
            "start it again (systemctl start tierlens-collector) if it should run here",
        )
    if age > STATS_STALE_SECONDS:
        return Finding(
            "collector",
            "running",
            Status.FAIL,
            f"{path} last updated {age:.0f} s ago in state '{state}': the collector died",
            "systemctl status tierlens-collector; its journal says why",
        )
    return Finding("collector", "running", Status.OK, f"state '{state}', stats {age:.0f} s old")


def _collector_losses(stats: dict) -> list[Finding]:
    out = []
    drops = stats.get("kernel_drops")
    if drops is None:
        out.append(
            Finding(
                "collector",
                "kernel drops",
                Status.INFO,
                "this collector does not report kernel_drops",
                "upgrade the collector to see datagrams the kernel dropped",
            )
        )
    elif int(drops) > 0:
        out.append(
            Finding(
                "collector",
                "kernel drops",
                Status.WARN,
                f"the kernel dropped {int(drops):,} monitoring datagrams (socket buffer full)",
                "raise net.core.rmem_max and the collector's receive buffer",
            )
        )
    else:
        out.append(Finding("collector", "kernel drops", Status.OK, "none"))
    backlog = stats.get("journal_backlog_bytes")
    if backlog is not None and int(backlog) > JOURNAL_BACKLOG_WARN_BYTES:
        out.append(
            Finding(
                "collector",
                "journal backlog",
                Status.WARN,
                f"{int(backlog) / 1e6:,.0f} MB received but not yet decoded",
                "the decoder falls behind: give the collector a core of its own",
            )
        )
    elif backlog is not None:
        out.append(Finding("collector", "journal backlog", Status.OK, f"{int(backlog):,} bytes"))
    return out


# ---- warehouse, dbt, Airflow ----------------------------------------------------------------------


def check_warehouse(opts: Options) -> list[Finding]:
    from .orchestration.settings import warehouse_path

    wh = opts.warehouse or warehouse_path()
    if not wh.exists():
        if opts.warehouse is None and not os.environ.get("TIERLENS_WAREHOUSE"):
            return _not_here(
                "warehouse",
                f"no {wh}",
                "on the analytics host, give --warehouse FILE (or set $TIERLENS_WAREHOUSE or "
                "$TIERLENS_HOME); the first tierlens load, ingest or demo creates one",
            )
        return _given_but_missing(
            "warehouse",
            "readable",
            "warehouse",
            wh,
            "check the path given with --warehouse or $TIERLENS_WAREHOUSE; the first "
            "tierlens load or ingest creates it",
        )
    findings = [_warehouse_schema(wh)]
    writable = os.access(wh, os.W_OK) and os.access(wh.parent, os.W_OK)
    findings.append(
        Finding(
            "warehouse",
            "writable",
            Status.OK if writable else Status.FAIL,
            f"{wh} {'is' if writable else 'is not'} writable by this user",
            "" if writable else f"run the pipeline as the owner of {wh.parent}",
        )
    )
    if findings[0].status is Status.OK:
        findings += _warehouse_history(wh)
    return findings


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _warehouse_history(wh: Path) -> list[Finding]:
    """Size, how far back raw goes, retention, the last transform and the last publish."""
    import duckdb

    from .orchestration.settings import setting
    from .warehouse.history import load_history, raw_span
    from .warehouse.publish import PUBLISHED_DIR, SLOTS_DIR, last_publish

    slots = wh.parent / PUBLISHED_DIR / SLOTS_DIR
    published = sum(_size(p) for p in slots.iterdir()) if slots.is_dir() else 0
    pub = last_publish(wh)
    if pub is not None and pub.compared_by == "clone":
        snapshots = f"a {published / 1e9:.2f} GB published snapshot sharing its unchanged blocks with it (a clone)"
    else:
        snapshots = f"{published / 1e9:.2f} GB published snapshots (current and spare)"
    # Facts about a readable warehouse are OK findings: INFO is kept for parts doctor did not check.
    out = [Finding("warehouse", "size", Status.OK, f"{_size(wh) / 1e9:.2f} GB working file, {snapshots}")]
    try:
        con = duckdb.connect(str(wh), read_only=True)
        try:
            span = raw_span(con)
        finally:
            con.close()
        out.append(
            Finding(
                "warehouse",
                "raw history",
                Status.OK,
                f"raw records from {span.oldest_day or '-'} to {span.newest_day or '-'}; oldest raw file "
                f"access {span.oldest_file_access_day or '-'}; newest load {span.loaded_until or '-'}",
            )
        )
    except duckdb.Error as e:
        out.append(
            Finding(
                "warehouse",
                "raw history",
                Status.WARN,
                f"could not read raw tables: {e}",
                "tierlens migrate --dry-run shows whether the schema is behind this tierlens",
            )
        )
    try:
        history = load_history(wh)
    except ValueError as e:
        return out + [Finding("warehouse", "history file", Status.FAIL, str(e), "upgrade tierlens")]
    r = history.retention
    months = setting("raw_retention_months")
    out.append(
        Finding(
            "warehouse",
            "retention",
            Status.OK,
            f"raw file accesses kept {months + ' months' if months not in ('', '0') else 'forever'}"
            + (
                f"; deleted before {r.pruned_before} ({r.rows_deleted_total:,} rows so far, "
                f"last applied {r.applied_at}); marts keep them, a full refresh would lose them"
                if r.pruned_before
                else ""
            ),
        )
    )
    run = history.last_run
    if run is None:
        out.append(
            Finding(
                "warehouse",
                "last transform",
                Status.INFO,
                "no transform recorded yet",
                "tierlens transform (or the tierlens_transform DAG) records each run",
            )
        )
    else:
        what = (
            f"{run.kind} run at {run.started_at} ({run.seconds:.0f} s): {run.batches_new:,} new raw batches, "
            f"{run.rows_new:,} rows"
            + (
                f", days {run.range_start}..{run.range_end} in {run.chunks_done}/{run.chunks} chunks"
                if run.range_start
                else ""
            )
            + f"; {run.models} models, {run.tests} tests"
        )
        out.append(
            Finding(
                "warehouse",
                "last transform",
                Status.OK if run.success else Status.FAIL,
                what,
                "" if run.success else "; ".join(run.failures[:3])[:500],
            )
        )
    if pub is not None:
        out.append(
            Finding(
                "warehouse",
                "last publish",
                Status.OK,
                f"{pub.published_at}: {pub.bytes_written / 1e6:,.1f} of {pub.file_bytes / 1e6:,.1f} MB "
                f"written in {pub.seconds:.1f} s ({_publish_method(pub)})",
                ""
                if pub.compared_by == "clone"
                else "on a filesystem that shares blocks (XFS with reflink, btrfs) each publish is a clone: "
                "nothing read or copied, no second snapshot (docs/site-admin.md, sizing)",
            )
        )
    return out


def _publish_method(pub: PublishStats) -> str:
    if pub.compared_by == "clone":
        return "a clone sharing the working file's blocks"
    return "changed blocks" if pub.reused_slot else "whole copy"


def _warehouse_schema(wh: Path) -> Finding:
    import duckdb

    try:
        con = duckdb.connect(str(wh), read_only=True)
    except duckdb.Error as e:
        if "lock" in str(e).lower():  # a load or transform holds it: normal, and brief
            return Finding(
                "warehouse",
                "readable",
                Status.WARN,
                f"{wh} is locked by a writer: {e}",
                "retry when the running load or transform has finished",
            )
        return Finding("warehouse", "readable", Status.FAIL, f"{wh}: {e}", "check the file's owner and mode")
    try:
        has = con.execute(
            "SELECT count(*) FROM information_schema.tables "
            "WHERE table_schema = 'main' AND table_name = 'raw_schema_migrations'"
        ).fetchone()[0]
        version = con.execute("SELECT max(version) FROM raw_schema_migrations").fetchone()[0] if has else None
    finally:
        con.close()
    return Finding(
        "warehouse", "readable", Status.OK, f"{wh}; schema version {version if version is not None else 'unversioned'}"
    )


def check_dbt(opts: Options) -> list[Finding]:
    from .resources import ResourceMissing, dbt_project_dir
    from .transform import _dbt_executable

    try:
        project = dbt_project_dir()
    except ResourceMissing as e:
        return [Finding("dbt", "project", Status.FAIL, str(e), "reinstall the tierlens wheel")]
    if not (project / "dbt_project.yml").is_file():
        return [
            Finding(
                "dbt",
                "project",
                Status.FAIL,
                f"no dbt_project.yml in {project}",
                "unset TIERLENS_DBT_PROJECT_DIR or point it at a dbt project",
            )
        ]
    findings = [Finding("dbt", "project", Status.OK, str(project))]
    try:
        findings.append(Finding("dbt", "executable", Status.OK, _dbt_executable()[0]))
    except FileNotFoundError as e:
        findings.append(Finding("dbt", "executable", Status.FAIL, str(e), "pip install 'dbt-duckdb<1.12'"))
    return findings


def check_airflow(opts: Options) -> list[Finding]:
    from .orchestration.settings import SETTINGS

    exe = opts.airflow or shutil.which("airflow")
    if not exe:
        return _not_here(
            "airflow",
            "no airflow on PATH",
            "on the Airflow host, give --airflow PATH (deploy/airflow/README.md) with its AIRFLOW_HOME set",
        )
    if opts.airflow is not None and not (Path(exe).is_file() and os.access(exe, os.X_OK)):
        return _given_but_missing(
            "airflow",
            "variables",
            "airflow executable",
            exe,
            "give --airflow the airflow command of the deployment's virtualenv",
        )
    unset = _airflow_home_problem()
    if unset:
        # Named with --airflow, the admin meant it checked; merely on PATH, it may be no deployment.
        return [
            Finding(
                "airflow",
                "variables" if opts.airflow else "present",
                Status.WARN if opts.airflow else Status.INFO,
                f"not checked: {unset}",
                "export AIRFLOW_HOME=<the deployment's folder> (the one standalone.sh uses; "
                "deploy/airflow/README.md) and run doctor again",
            )
        ]
    try:
        proc = _run([exe, "variables", "list", "-o", "json"], max(opts.timeout, 120))
    except (OSError, subprocess.TimeoutExpired) as e:
        return [Finding("airflow", "variables", Status.FAIL, f"{exe} variables list: {e}", "check AIRFLOW_HOME")]
    if proc.returncode != 0:
        return [
            Finding(
                "airflow",
                "variables",
                Status.FAIL,
                f"airflow variables list failed: {_last_line(proc.stderr)}",
                "run airflow db migrate, with the AIRFLOW_HOME of the deployment",
            )
        ]
    try:
        keys = {v["key"] for v in json.loads(proc.stdout[proc.stdout.find("[") :] or "[]")}
    except (json.JSONDecodeError, KeyError, TypeError):
        return [
            Finding(
                "airflow",
                "variables",
                Status.FAIL,
                "airflow variables list printed no JSON list",
                f"run {exe} variables list -o json by hand with the deployment's AIRFLOW_HOME and see what it prints",
            )
        ]
    ours = sorted(k for k in keys if k.startswith("tierlens_"))
    unknown = [k for k in ours if k.removeprefix("tierlens_") not in SETTINGS]
    findings = [
        Finding(
            "airflow",
            "variables",
            Status.OK,
            f"{len(ours)} tierlens variables set ({', '.join(ours) or 'none: defaults and TIERLENS_* apply'})",
        )
    ]
    if unknown:
        findings.append(
            Finding(
                "airflow",
                "unknown variables",
                Status.WARN,
                f"ignored, not tierlens settings: {', '.join(unknown)}",
                "fix their names (dags/README.md lists the settings)",
            )
        )
    return findings


def _airflow_home_problem() -> str | None:
    """Why running ``airflow`` here would write to the host, or None. Airflow creates
    ``$AIRFLOW_HOME/airflow.cfg`` (default ``~/airflow``) and a SQLite database on its first command,
    and doctor promises to change nothing: it asks Airflow only where a deployment already is."""
    config = os.environ.get("AIRFLOW_CONFIG")
    if config:
        return None if Path(config).is_file() else f"$AIRFLOW_CONFIG names {config}, which does not exist"
    home = os.environ.get("AIRFLOW_HOME")
    if not home:
        return "AIRFLOW_HOME is not set: airflow would create ~/airflow to answer"
    if not (Path(home) / "airflow.cfg").is_file():
        return f"no airflow.cfg in $AIRFLOW_HOME ({home}): airflow would create one to answer"
    return None


CHECKS: tuple[Callable[[Options], list[Finding]], ...] = (
    check_slurm,
    check_sacct,
    check_htcondor,
    check_collector,
    check_warehouse,
    check_dbt,
    check_airflow,
)


def run_checks(opts: Options) -> list[Finding]:
    findings = []
    for check in CHECKS:
        try:
            findings.extend(check(opts))
        except Exception as e:  # noqa: BLE001 - one broken check must not hide the others
            findings.append(
                Finding(
                    check.__name__.removeprefix("check_"),
                    "doctor",
                    Status.FAIL,
                    f"the check itself failed: {type(e).__name__}: {e}",
                    "check the files this part's option points at; if they are right, send this "
                    "line and `tierlens --version` to the tierlens developers",
                )
            )
    return findings


def failed(findings: list[Finding]) -> bool:
    return any(f.status is Status.FAIL for f in findings)


def to_json(findings: list[Finding]) -> str:
    return json.dumps(
        {"ok": not failed(findings), "findings": [{**asdict(f), "status": f.status.value} for f in findings]}, indent=1
    )
