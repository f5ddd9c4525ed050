"""The synthetic site as an interval source: simulated once per options, kept as Parquet, read in batches.

The ingest DAG loads one data interval at a time; simulating the whole site for each would repeat
the same work, so the first task writes the simulation to a folder named by a hash of its options
(written aside and renamed into place: byte-identical for the same options) and every interval,
and every rerun, reads that folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ...records import Batch, RecordKind
from .generate import SyntheticOptions, generate
from .site import demo_site


def synthetic_options(
    start: str = "2026-10-01", days: float = 30, seed: int = 42, nodes_per_type: int = 2
) -> SyntheticOptions:
    """Options from the DAG's settings (plain strings and numbers); ``start`` a UTC date."""
    t0 = datetime.fromisoformat(start)
    t0 = t0.replace(tzinfo=timezone.utc) if t0.tzinfo is None else t0.astimezone(timezone.utc)
    return SyntheticOptions(
        days=float(days), seed=int(seed), start=t0, site=demo_site(nodes_per_type=int(nodes_per_type))
    )


def _key(options: SyntheticOptions) -> str:
    spec = {
        "days": options.days,
        "seed": options.seed,
        "start": options.start.isoformat(),
        "warmup": options.warmup_days,
        "nodes": [n.name for n in options.site.nodes],
        "cluster": options.site.cluster,
    }
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]


def synthetic_site_files(options: SyntheticOptions, cache_dir: Path) -> Path:
    """The folder holding one simulation's records, one Parquet file per record kind."""
    target = Path(cache_dir) / _key(options)
    if (target / "_SUCCESS").exists():
        return target
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    writers: dict[RecordKind, pq.ParquetWriter] = {}
    try:
        for b in generate(options):
            w = writers.get(b.kind)
            if w is None:
                w = writers[b.kind] = pq.ParquetWriter(tmp / f"{b.kind.value}.parquet", b.table.schema)
            w.write_table(b.table)
    finally:
        for w in writers.values():
            w.close()
    (tmp / "_SUCCESS").write_text(json.dumps({"days": options.days, "seed": options.seed}))
    try:
        tmp.rename(target)
    except OSError:  # another task got there first: its copy is identical
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def batches(options: SyntheticOptions, cache_dir: Path, rows: int = 100_000) -> Iterator[Batch]:
    """Every record of the simulation, in bounded batches, nodes first then jobs, tags, accesses."""
    folder = synthetic_site_files(options, cache_dir)
    source = f"synthetic:{folder.name}"
    for kind in (RecordKind.NODE, RecordKind.JOB, RecordKind.JOB_TAG, RecordKind.FILE_ACCESS):
        path = folder / f"{kind.value}.parquet"
        if not path.exists():
            continue
        first = 0
        for rb in pq.ParquetFile(path).iter_batches(batch_size=rows):
            yield Batch(kind, pa.Table.from_batches([rb]), source, row_offset=first)
            first += rb.num_rows
