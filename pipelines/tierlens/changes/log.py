"""site_change batches from `tierlens change add` or from a change log a site already keeps.

A change log is CSV (a header row naming the site_change fields) or YAML (a list of mappings, or
a mapping with a ``changes`` list). Whatever cannot become a row (an unreadable time, an unknown
column, a list where text belongs) is a parse reject located at 'FILE:line N'; a row that parses
but breaks a rule of records.SPECS (unknown category or storage type) carries the same location,
so the warehouse loader's reject names the file and line as well.
"""

from __future__ import annotations

import csv
import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import yaml

from ..records import SITE_CHANGE, Batch, RecordKind, Reject

FIELDS: tuple[str, ...] = tuple(f.name for f in SITE_CHANGE)
#: Columns a change log may use besides the record's own names (the CLI's option names).
ALIASES: dict[str, str] = {
    "at": "changed_at",
    "when": "changed_at",
    "id": "change_id",
    "what": "description",
    "nodes": "scope_nodes",
    "storage_type": "scope_storage_type",
    "arm": "scope_ab_arm",
    "ab_arm": "scope_ab_arm",
    "by": "changed_by",
    "who": "changed_by",
}


@dataclass
class ChangeEntry:
    """One change before it becomes a row; ``change_id`` is derived when not given."""

    changed_at: datetime
    description: str
    category: str | None = None
    cluster: str | None = None
    scope_nodes: list[str] | None = None
    scope_storage_type: str | None = None
    scope_ab_arm: str | None = None
    changed_by: str | None = None
    change_id: str | None = None
    recorded_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))

    def row(self) -> dict:
        return {name: getattr(self, name) for name in FIELDS} | {"change_id": self.change_id or self.derived_id()}

    def derived_id(self) -> str:
        """Stable across re-loads of the same log line: time, text and scope, not recorded_at."""
        key = "\0".join(
            str(x)
            for x in (
                self.changed_at.isoformat(),
                self.description,
                self.cluster,
                ",".join(self.scope_nodes or []),
                self.scope_storage_type,
                self.scope_ab_arm,
            )
        )
        return (
            "chg-"
            + self.changed_at.strftime("%Y%m%d%H%M")
            + "-"
            + hashlib.blake2b(key.encode(), digest_size=4).hexdigest()
        )


def parse_time(text: object) -> datetime:
    """An ISO 8601 time; 'Z' accepted; a time without zone is taken as UTC (stated in the docs)."""
    if isinstance(text, datetime):
        value = text
    else:
        s = str(text).strip()
        if not s:
            raise ValueError("empty")
        value = datetime.fromisoformat(s[:-1] + "+00:00" if s.endswith(("Z", "z")) else s)
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)


def parse_nodes(value: object) -> list[str] | None:
    if value is None:
        return None
    items = value if isinstance(value, list) else str(value).replace(";", ",").split(",")
    nodes = [str(n).strip() for n in items if str(n).strip()]
    return nodes or None


def _text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, (list, dict)):
        raise ValueError(f"expected text, got {type(value).__name__}")
    s = str(value).strip()
    return s or None


def entry_from_mapping(raw: dict, recorded_at: datetime | None = None) -> ChangeEntry:
    """A ChangeEntry from one log record; ValueError('field: why') when it cannot be one."""
    values: dict[str, object] = {}
    for key, value in raw.items():
        name = ALIASES.get(str(key).strip().lower(), str(key).strip().lower())
        if name not in FIELDS:
            raise ValueError(f"{key}: not a site_change field ({', '.join(FIELDS)})")
        values[name] = value
    for name in ("changed_at", "description"):
        if _text(values.get(name)) is None and not isinstance(values.get(name), datetime):
            raise ValueError(f"{name}: missing")
    try:
        at = parse_time(values["changed_at"])
    except ValueError as e:
        raise ValueError(f"changed_at: not an ISO 8601 time ({values['changed_at']!r}): {e}") from e
    kwargs: dict[str, object] = {"changed_at": at, "scope_nodes": parse_nodes(values.get("scope_nodes"))}
    if recorded_at is not None:
        kwargs["recorded_at"] = recorded_at
    for name in ("description", "category", "cluster", "scope_storage_type", "scope_ab_arm", "changed_by", "change_id"):
        try:
            kwargs[name] = _text(values.get(name))
        except ValueError as e:
            raise ValueError(f"{name}: {e}") from e
    if kwargs["category"]:
        kwargs["category"] = str(kwargs["category"]).lower()
    if kwargs["scope_storage_type"]:
        kwargs["scope_storage_type"] = str(kwargs["scope_storage_type"]).lower()
    if values.get("recorded_at") not in (None, ""):
        try:
            kwargs["recorded_at"] = parse_time(values["recorded_at"])
        except ValueError as e:
            raise ValueError(f"recorded_at: not an ISO 8601 time: {e}") from e
    return ChangeEntry(**kwargs)  # type: ignore[arg-type]


def change_batch(
    entries: Iterable[ChangeEntry], source: str, locations: list[str] | None = None, rejects: list[Reject] | None = None
) -> Batch:
    table = pa.Table.from_pylist([e.row() for e in entries], schema=SITE_CHANGE)
    return Batch(RecordKind.SITE_CHANGE, table, source, locations=locations, rejects=rejects or [])


def _csv_records(path: Path) -> Iterator[tuple[int, dict | None, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        start = 2
        for record in reader:
            if None in record:  # more cells than the header has names
                yield start, None, f"{len(record[None])} cell(s) beyond the header's columns"
            else:
                yield start, {k: (v if v != "" else None) for k, v in record.items()}, ""
            start = reader.line_num + 1


def _yaml_records(path: Path) -> Iterator[tuple[int, dict | None, str]]:
    text = path.read_text(encoding="utf-8")
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        yield (mark.line + 1 if mark else 1), None, f"not valid YAML: {getattr(e, 'problem', e)}"
        return
    if root is None:
        return
    if isinstance(root, yaml.MappingNode):  # {changes: [...]}
        items = [v for k, v in root.value if k.value == "changes"]
        if not items:
            yield root.start_mark.line + 1, None, "a mapping without a 'changes' list"
            return
        root = items[0]
    if not isinstance(root, yaml.SequenceNode):
        yield root.start_mark.line + 1, None, "expected a list of changes"
        return
    loader = yaml.SafeLoader("")
    for node in root.value:
        line = node.start_mark.line + 1
        if not isinstance(node, yaml.MappingNode):
            yield line, None, "a change must be a mapping of field: value"
            continue
        yield line, loader.construct_document(node), ""


def read_change_log(path: Path) -> Batch:
    """One batch from a CSV or YAML change log (change logs are small: one batch is bounded)."""
    suffix = path.suffix.lower()
    if suffix == ".csv":
        records = _csv_records(path)
    elif suffix in (".yaml", ".yml"):
        records = _yaml_records(path)
    else:
        raise ValueError(f"{path}: a change log must be .csv, .yaml or .yml")
    # The log's modification time, not now: loading an unchanged log again is then the same
    # batch, which the warehouse skips (rejects are not stored twice).
    recorded_at = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).replace(microsecond=0)
    entries: list[ChangeEntry] = []
    locations: list[str] = []
    rejects: list[Reject] = []
    for line, raw, problem in records:
        location = f"{path}:line {line}"
        if raw is None:
            rejects.append(Reject(RecordKind.SITE_CHANGE, str(path), location, "", problem, ""))
            continue
        try:
            entries.append(entry_from_mapping(raw, recorded_at))
            locations.append(location)
        except ValueError as e:
            name, _, why = str(e).partition(": ")
            rejects.append(Reject(RecordKind.SITE_CHANGE, str(path), location, name, why or str(e), repr(raw)))
    return change_batch(entries, str(path), locations, rejects)
