"""The shape of the command line and of what it shares with orchestration: the CLI package is one-way,
parsing helpers raise ValueError (a usage error on the command line, a task failure in a DAG), the
sources' batches() entries serve both, one watermark class for Slurm and HTCondor."""

from __future__ import annotations

import ast
from dataclasses import fields
from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import tierlens
from tierlens import config
from tierlens.cli import app
from tierlens.records import FILE_ACCESS

PACKAGE = Path(tierlens.__file__).parent
runner = CliRunner()


def _imports(path: Path, package: str) -> set[str]:
    """Absolute names of the tierlens modules ``path`` imports (``package``: its own dotted package)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            name = ".".join(base + ([node.module] if node.module else []))
            out.add(name)
            out.update(f"{name}.{a.name}" for a in node.names)
    return {n for n in out if n == "tierlens" or n.startswith("tierlens.")}


def _module(path: Path) -> tuple[str, str]:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    package = name if parts[-1] == "__init__" else ".".join(parts[:-1])
    return name, package


def test_the_cli_package_is_one_way():
    for path in PACKAGE.rglob("*.py"):
        name, package = _module(path)
        imported = _imports(path, package)
        if name == "tierlens.cli":
            continue  # the package itself: it attaches the group modules
        if name.startswith("tierlens.cli."):
            assert "tierlens.cli" not in imported, f"{path} imports the CLI package back"
        else:
            assert not any(i == "tierlens.cli" or i.startswith("tierlens.cli.") for i in imported), (
                f"{path} (not a command) imports the command line"
            )


def test_every_group_module_exports_a_typer_app_the_package_attaches():
    import typer

    from tierlens import cli

    modules = sorted(p.stem for p in (PACKAGE / "cli").glob("*.py") if p.stem not in ("__init__", "common"))
    attached = {id(g.typer_instance) for g in app.registered_groups}
    for stem in modules:
        group = getattr(cli, stem).app
        assert isinstance(group, typer.Typer) and id(group) in attached, stem


def test_sizes_and_caches_raise_value_error_for_orchestration(monkeypatch):
    from tierlens.orchestration import settings
    from tierlens.simulator.whatif import CacheOption
    from tierlens.units import parse_bytes

    assert parse_bytes("11TB") == 11 * 10**12 and parse_bytes("10TiB") == 10 * 2**40 and parse_bytes("1e3") == 1000
    with pytest.raises(ValueError, match="not a size"):
        parse_bytes("eleven")
    monkeypatch.setenv("TIERLENS_SIMULATE_CACHES", "lru:11TB, slac2:1TiB")
    assert settings.cache_configs() == [CacheOption("lru", 11 * 10**12), CacheOption("slac2", 2**40)]
    for bad in ("lru", "none", "lru:lots", "nosuch:1TB"):
        monkeypatch.setenv("TIERLENS_SIMULATE_CACHES", bad)
        with pytest.raises(ValueError):  # a plain ValueError: no typer.BadParameter in a DAG task
            settings.cache_configs()


def test_a_bad_value_on_the_command_line_is_a_usage_error_naming_the_option(tmp_path):
    wh = str(tmp_path / "wh.duckdb")
    r = runner.invoke(app, ["ingest", "slurm", "-w", wh, "--start", "yesterday-ish", "--sacct", "/bin/false"])
    assert r.exit_code == 2 and "--start" in r.output and "not a time" in r.output
    r = runner.invoke(app, ["simulate", "efficiency", "-w", wh, "--cache", "lru:big"])
    assert r.exit_code == 2 and "--cache" in r.output and "not a size" in r.output


def test_paths_layout_names_every_place_once(tmp_path):
    p = config.Paths(tmp_path)
    assert {f.name for f in fields(p) if not f.init} == set(config.LAYOUT)
    assert p.warehouse == tmp_path / "warehouse.duckdb" and p.xrootd_spool == tmp_path / "spool" / "xrootd"


def test_one_watermark_class_for_slurm_and_condor(tmp_path):
    from tierlens.sources.condor.schedd import watermark_for
    from tierlens.sources.slurm.source import watermark
    from tierlens.sources.watermark import Watermark

    wh = tmp_path / "site.duckdb"
    a, b = watermark(wh, None), watermark(wh, "cluster2")
    assert a.path == b.path == tmp_path / "site.slurm-state.json" and a.read() == {}
    a.write({"watermark": 10.0, "unfinished": ["7"]})
    b.write({"watermark": 20.0, "unfinished": []})
    assert a.read() == {"watermark": 10.0, "unfinished": ["7"]} and b.read()["watermark"] == 20.0
    c = watermark_for(tmp_path / "state", "ap01/x")
    assert isinstance(c, Watermark) and c.path.name == "condor-history-ap01_x.json"
    c.write({"since": "5.0"})
    assert c.read() == {"since": "5.0"}
    c.path.write_text("[1, 2]")  # valid JSON, not a mark
    assert c.read() == {}


def _accesses(ends: list[datetime], first: int = 0) -> pa.Table:
    rows = [
        {f.name: None for f in FILE_ACCESS}
        | {
            "server_host": "xcache",
            "unique_id": f"u{i}",
            "file_lfn": f"/f{i}",
            "start_time": e - timedelta(minutes=5),
            "end_time": e,
            "close_seen": True,
        }
        for i, e in enumerate(ends, start=first)
    ]
    return pa.Table.from_pylist(rows, schema=FILE_ACCESS)


def test_collector_batches_are_one_source_for_the_command_and_the_dag(tmp_path):
    from tierlens.ingest.xrootd import XrootdOptions, load_interval

    t0 = datetime(2026, 10, 1, 12, tzinfo=timezone.utc)
    ends = [t0 + timedelta(minutes=m) for m in (-30, 5, 59, 61, 125)]
    out = tmp_path / "spool"
    out.mkdir()
    pq.write_table(_accesses(ends[:3]), out / "file_access-g0000000001.parquet")
    pq.write_table(
        _accesses(ends[3:], 3).rename_columns([f"x{i}" for i in range(len(FILE_ACCESS))]),
        out / "collector_stats-g0000000001.parquet",
    )  # not records
    pq.write_table(_accesses(ends[3:], 3), out / "file_access-g0000000002.parquet")

    r = runner.invoke(app, ["ingest", "xrootd", str(out), "-w", str(tmp_path / "cli.duckdb")])
    assert r.exit_code == 0, r.output
    con = duckdb.connect(str(tmp_path / "cli.duckdb"), read_only=True)
    assert con.execute("SELECT count(*) FROM raw_file_access").fetchone()[0] == len(ends)
    assert con.execute("SELECT count(*) FROM raw_rejects").fetchone()[0] == 0
    con.close()

    summary = load_interval(tmp_path / "dag.duckdb", t0, t0 + timedelta(hours=1), XrootdOptions(str(out)))
    in_hour = sum(t0 <= e < t0 + timedelta(hours=1) for e in ends)
    assert summary["rows_loaded"] == {"file_access": in_hour} and summary["rows_rejected"] == {"file_access": 0}
