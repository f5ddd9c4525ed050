"""`tierlens ingest slurm` (sacct + spool) and `tierlens ingest slurm-spool` (spool only)."""


import json
import os
import threading
import time
from datetime import datetime
from itertools import chain
from pathlib import Path
from typing import Annotated, Optional

import typer

from .sacct import SacctError, SacctRunner, WindowReport, sacct_batches
from .spool import spool_batches


def state_file(warehouse: Path) -> Path:
    """The watermark lives beside the warehouse it describes."""
    return warehouse.parent / f"{warehouse.stem}.slurm-state.json"


def load_state(path: Path, key: str) -> dict:
    try:
        return json.loads(path.read_text()).get(key, {})
    except (OSError, ValueError):
        return {}


def save_state(path: Path, key: str, value: dict) -> None:
    try:
        allstate = json.loads(path.read_text())
    except (OSError, ValueError):
        allstate = {}
    allstate[key] = value
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(allstate, indent=1, sort_keys=True))
    os.replace(tmp, path)


class Checkpoints:
    """Saves a window's watermark only once every batch handed on before it has been loaded.

    The loader runs the source one batch ahead on a thread, so when the source reaches the end
    of a window its last batch may still be loading; saving the watermark then could run ahead
    of the warehouse if that load failed."""

    def __init__(self, save) -> None:
        self.save = save
        self.handed = 0
        self.loaded = 0
        self.waiting: list[tuple[int, float, list[str]]] = []
        self.lock = threading.Lock()

    def count(self, batches):
        for b in batches:
            with self.lock:
                self.handed += 1
            yield b

    def on_window(self, watermark: float, unfinished: list[str]) -> None:
        with self.lock:
            self.waiting.append((self.handed, watermark, unfinished))
        self.flush()

    def on_batch(self, _result) -> None:
        with self.lock:
            self.loaded += 1
        self.flush()

    def flush(self) -> None:
        with self.lock:
            ready = [w for w in self.waiting if w[0] <= self.loaded]
            self.waiting = [w for w in self.waiting if w[0] > self.loaded]
            for _n, watermark, unfinished in ready[-1:]:
                self.save(watermark, unfinished)


def _when(text: str | None) -> float | None:
    if text is None:
        return None
    if text.isdigit():
        return float(text)
    dt = datetime.fromisoformat(text)
    if dt.tzinfo is None:
        dt = dt.astimezone()   # local time, as sacct reads it
    return dt.timestamp()


def register(ingest_app: typer.Typer) -> None:
    from ...cli import WarehouseOpt, _print_ingest, _warehouse, console, err
    from ...pipeline import ingest

    @ingest_app.command("slurm")
    def ingest_slurm(
        warehouse: WarehouseOpt = None,
        spool: Annotated[Optional[list[Path]], typer.Option(
            "--spool", help="Spool folder(s) of the SPANK plugin to join as job tags (repeatable).")] = None,
        start: Annotated[Optional[str], typer.Option(
            help="Window start (ISO time or epoch) [default: the watermark, else --first-hours ago].")] = None,
        end: Annotated[Optional[str], typer.Option(help="Window end [default: now].")] = None,
        first_hours: Annotated[float, typer.Option(help="How far back a first run looks.")] = 24.0,
        overlap_minutes: Annotated[float, typer.Option(
            help="Start this much before the watermark, for records slurmdbd received late "
                 "(loading a job again changes nothing).")] = 10.0,
        window_hours: Annotated[float, typer.Option(
            help="Longest time window per sacct call, so slurmdbd is never asked for too much.")] = 6.0,
        fmt: Annotated[str, typer.Option("--format", help="auto (json, then parsable2), json or parsable2.")] = "auto",
        clusters: Annotated[Optional[str], typer.Option(help="sacct --clusters.")] = None,
        sacct: Annotated[str, typer.Option(help="sacct command.")] = "sacct",
    ) -> None:
        """Jobs and steps from `sacct` since the last run (watermark), joined with spool tags."""
        if fmt not in ("auto", "json", "parsable2"):
            raise typer.BadParameter("--format is auto, json or parsable2")
        wh = _warehouse(warehouse)
        wh.parent.mkdir(parents=True, exist_ok=True)
        sf, key = state_file(wh), clusters or "default"
        state = load_state(sf, key)
        t_end = _when(end) or time.time()
        if start is not None:
            t_start = _when(start)
        elif state.get("watermark"):
            t_start = state["watermark"] - overlap_minutes * 60
        else:
            t_start = t_end - first_hours * 3600
        if t_start >= t_end and not state.get("unfinished"):
            console.print("nothing to do: the watermark is at the window end")
            return
        runner = SacctRunner(sacct=sacct, fmt=fmt, clusters=clusters)

        def save(watermark: float, unfinished: list[str]) -> None:
            if end is None or start is None:  # an explicit window does not move the watermark
                # a window held for retry may start in the overlap before the old watermark
                watermark = max(watermark, state.get("watermark") or watermark)
                save_state(sf, key, {"watermark": watermark, "unfinished": unfinished,
                                     "format": runner.fmt})

        marks = Checkpoints(save)
        retry: list[WindowReport] = []
        batches = marks.count(sacct_batches(runner, t_start, t_end, window_hours * 3600,
                                            list(state.get("unfinished", [])), marks.on_window, retry=retry))
        if spool:
            batches = chain(batches, spool_batches(spool))
        try:
            summary = ingest(batches, wh, on_batch=marks.on_batch)
        except SacctError as e:
            err.print(f"[red]{e}[/red]")
            raise typer.Exit(1) from e
        marks.flush()
        _print_ingest(summary, wh)
        for report in retry:
            err.print(f"[yellow]incomplete sacct output, asked for again on the next run: "
                      f"{report.describe()}[/yellow]")
        console.print(f"sacct format: {runner.fmt}; watermark file {sf}")

    @ingest_app.command("slurm-spool")
    def ingest_slurm_spool(
        dirs: Annotated[list[Path], typer.Argument(exists=True, file_okay=False,
                                                   help="Spool folder(s) of the SPANK plugin.")],
        warehouse: WarehouseOpt = None,
    ) -> None:
        """Job tags from the SPANK plugin's spool records (one JSON line per job step)."""
        wh = _warehouse(warehouse)
        wh.parent.mkdir(parents=True, exist_ok=True)
        _print_ingest(ingest(spool_batches(dirs), wh), wh)
