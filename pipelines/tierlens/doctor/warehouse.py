"""The warehouse: readable at the schema this tierlens writes, writable, its transform and publish history."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..warehouse.publish import PublishStats

from .findings import Finding, Options, Status, given_but_missing, not_here


def check_warehouse(opts: Options) -> list[Finding]:
    from ..orchestration.settings import warehouse_path

    wh = opts.warehouse or warehouse_path()
    if not wh.exists():
        if opts.warehouse is None and not os.environ.get("TIERLENS_WAREHOUSE"):
            return not_here(
                "warehouse",
                f"no {wh}",
                "on the analytics host, give --warehouse FILE (or set $TIERLENS_WAREHOUSE or "
                "$TIERLENS_HOME); the first tierlens load, ingest or demo creates one",
            )
        return given_but_missing(
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

    from ..orchestration.settings import setting
    from ..warehouse.history import load_history, raw_span
    from ..warehouse.publish import PUBLISHED_DIR, SLOTS_DIR, last_publish

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
