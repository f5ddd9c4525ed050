"""The XRootD collector: is it running, what does it lose, how far behind is its journal?"""

from __future__ import annotations

import json
import time
from pathlib import Path

from .findings import Finding, Options, Status, given_but_missing, not_here

#: The collector rewrites its stats every second; older than this, it is not running.
STATS_STALE_SECONDS = 60.0
JOURNAL_BACKLOG_WARN_BYTES = 256 * 1024 * 1024


def _collector_stats_path(opts: Options) -> Path:
    from ..config import paths

    return opts.collector_stats or paths().home / "spool" / "xrootd" / "collector-stats.json"


def check_collector(opts: Options) -> list[Finding]:
    path = _collector_stats_path(opts)
    if not path.exists():
        if opts.collector_stats is None:
            return not_here(
                "collector",
                f"no {path}",
                "on the collector's host, give --collector-stats FILE (in its spool folder); "
                "to collect here: tierlens collect xrootd (deploy/README.md)",
            )
        return given_but_missing(
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
