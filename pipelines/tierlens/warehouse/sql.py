"""SQL a load runs for one record kind, built once from its RecordSpec.

Validation happens in DuckDB, vectorised: each Rule's predicate is wrapped in ``coalesce(...,
false)`` because a rule such as ``end_time < start_time`` is NULL when either side is NULL, and a
NULL must neither reject a row nor (NOT of NULL being NULL) silently drop it from an insert.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from tierlens.records import SPECS, RecordKind, Rule
from tierlens.warehouse.ddl import literal, quote

#: Column the loader appends to every batch: the row's 0-based position, so rejects can name
#: their row and "keep the last duplicate" has an order to go by.
ROW = "__tierlens_row"
DUPLICATE_REASON = "duplicate natural key in batch"


@dataclass(frozen=True)
class KindSql:
    kind: RecordKind
    table: str
    columns: tuple[str, ...]
    key: tuple[str, ...]
    rules: tuple[Rule, ...]
    #: Event-time column a load's rows are inserted in order of (None: load order): with hourly
    #: loads arriving in time order, the raw table is clustered by day, so DuckDB's row-group
    #: min/max skip whole days in a back-fill's or retention's scan by time.
    cluster_by: str | None = None

    @property
    def column_list(self) -> str:
        return ", ".join(quote(c) for c in self.columns)

    @property
    def key_list(self) -> str:
        return ", ".join(quote(c) for c in self.key)

    @property
    def key_field(self) -> str:
        """What raw_rejects.field says for a duplicate: the natural key's fields."""
        return ",".join(self.key)

    def violated(self, rule: Rule) -> str:
        return f"coalesce(({rule.violated_when}), false)"

    @property
    def valid(self) -> str:
        if not self.rules:
            return "true"
        return "NOT (" + " OR ".join(self.violated(r) for r in self.rules) + ")"

    def _first_violation(self, attribute: str) -> str:
        whens = " ".join(f"WHEN {self.violated(r)} THEN {literal(getattr(r, attribute))}" for r in self.rules)
        return f"CASE {whens} END"

    @property
    def row_json(self) -> str:
        return "to_json(struct_pack(" + ", ".join(f"{quote(c)} := {quote(c)}" for c in self.columns) + "))"

    def probe(self, view: str) -> str:
        """One scan: content hash, invalid rows, and whether valid rows may repeat a key.

        The hash is DuckDB's 64-bit row hash (with the row position, so order counts) summed in
        a HUGEINT: order-dependent, logical (null slots and chunking do not matter) and computed
        on both cores in the same pass as the checks. Distinct key *hashes* equal to the valid
        row count prove the keys distinct; fewer (a duplicate, or a 64-bit collision) sends the
        load down the exact window-function path.
        """
        return f"""
            SELECT coalesce(sum(hash({quote(ROW)}, {self.column_list})::HUGEINT), 0)::VARCHAR,
                   count(*) FILTER (WHERE NOT ok),
                   count(*) FILTER (WHERE ok),
                   count(DISTINCT hash({self.key_list})) FILTER (WHERE ok)
            FROM (SELECT *, {self.valid} AS ok FROM {quote(view)})
        """

    def rule_rejects(self, view: str) -> str:
        return f"""
            SELECT {quote(ROW)} AS row_index,
                   {self._first_violation("field")} AS field,
                   {self._first_violation("reason")} AS reason,
                   {self.row_json} AS raw_record
            FROM {quote(view)} WHERE NOT ({self.valid})
        """

    def duplicates(self, view: str) -> str:
        """Valid rows whose key a later valid row of the batch repeats (the last one wins)."""
        return f"""
            SELECT {quote(ROW)} AS row_index, {self.row_json} AS raw_record
            FROM {quote(view)} WHERE {self.valid}
            QUALIFY row_number() OVER (PARTITION BY {self.key_list} ORDER BY {quote(ROW)} DESC) > 1
        """

    def delete_existing(self, view: str, all_valid: bool) -> str:
        # A semi-join on the batch's keys; no index on the raw table (see bench/README.md).
        where = "" if all_valid else f" WHERE {self.valid}"
        return f"""
            DELETE FROM {quote(self.table)}
            WHERE ({self.key_list}) IN (SELECT {self.key_list} FROM {quote(view)}{where})
        """

    def insert(self, view: str, all_valid: bool, skip_view: str | None) -> str:
        # When the probe found every row valid and no duplicate, the filter is skipped: a
        # filtered scan makes DuckDB copy through selection vectors for nothing.
        conditions = [] if all_valid else [self.valid]
        if skip_view:
            conditions.append(f"{quote(ROW)} NOT IN (SELECT row_index FROM {quote(skip_view)})")
        where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        order = f" ORDER BY {quote(self.cluster_by)} NULLS LAST" if self.cluster_by else ""
        return f"""
            INSERT INTO {quote(self.table)} ({self.column_list})
            SELECT {self.column_list} FROM {quote(view)}{where}{order}
        """


def _rules(kind: RecordKind) -> tuple[Rule, ...]:
    """The spec's rules, plus 'missing' for any NOT NULL field no rule covers yet.

    Without it a NULL in such a field would fail the whole batch at the NOT NULL constraint
    instead of rejecting one row.
    """
    spec = SPECS[kind]
    covered = {r.field for r in spec.rules}
    implicit = tuple(
        Rule(f.name, f"{quote(f.name)} IS NULL", "missing")
        for f in spec.schema
        if not f.nullable and f.name not in covered
    )
    return implicit + spec.rules


@cache
def kind_sql(kind: RecordKind) -> KindSql:
    spec = SPECS[kind]
    cluster = "end_time" if kind in (RecordKind.JOB, RecordKind.FILE_ACCESS) else None
    return KindSql(kind, kind.table, tuple(spec.schema.names), spec.natural_key, _rules(kind), cluster)
