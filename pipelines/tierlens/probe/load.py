"""device_probe records into the warehouse, like any other source."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa


def load_probe(table: pa.Table, source: str, warehouse: Path):
    """Load device_probe rows through the warehouse loader (validation, rejects, idempotence)."""
    from ..pipeline import ingest
    from ..records import Batch, RecordKind

    return ingest([Batch(RecordKind.DEVICE_PROBE, table, source)], warehouse)
