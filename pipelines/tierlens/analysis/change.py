"""Did a site change help? Efficiency before against after a change, with its uncertainty.

The IFCA method (seed 004) made one change at a time and compared efficiency before and after.
Two things make that comparison mislead, and this module guards against both:

* Something else changed at the same time (the season, the origin servers' load). Where the change
  touched only part of the site (some nodes, a storage type, an arm), the nodes outside it are the
  control: the effect is the difference in differences,

      (eff_scope_after - eff_scope_before) - (eff_control_after - eff_control_before).

  A site-wide change has no control; the effect is then the plain before/after difference and
  the row says so (control_missing).
* The job mix moved (more I/O-heavy jobs that week). Efficiency is compared within strata of job
  class x bytes read per job (IFCA's table: efficiency against input volume), and the strata are
  combined with fixed weights, the in-scope group's core-hours per stratum over both windows
  (direct standardisation). A mix shift then moves the unstratified difference, which is shown
  beside it, but not the stratified one.

Efficiency is the one definition of docs/architecture.md, a ratio of sums, per cell. Uncertainty: an
hour-block percentile bootstrap like the A/B marts' (analysis.ab), 999 resamples, seeded; a
change's windows are bounded, so its draws need not merge across builds and stay multinomial. Jobs
ending in the same UTC hour share its conditions, so hours are resampled, not jobs. Before and
after are different hours, so each window's hours are resampled on their own; within an hour the
in-scope and control sums stay together (paired, as the A/B arms are). Resamples are drawn as
multinomial counts per block and summed with one matrix product, which keeps memory at
resamples x blocks whatever the number of jobs.

A job belongs to the before window when it ended in [t - window, t) and to the after window when
it started at or after t and ended before t + window; jobs running across the change saw both
settings and are left out (counted in straddling_jobs).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import duckdb
import numpy as np
import pyarrow as pa

from .ab import CONFIDENCE, N_RESAMPLES, check_block

GB = 1_000_000_000
JOB_COLUMNS = (
    "cluster",
    "node",
    "storage_type",
    "ab_arm",
    "job_class",
    "start_time",
    "end_time",
    "cpu_seconds",
    "wall_seconds",
    "core_wall_seconds",
    "bytes_read",
    "bytes_read_remote",
)
CHANGE_COLUMNS = (
    "change_id",
    "changed_at",
    "description",
    "category",
    "cluster",
    "scope_nodes",
    "scope_storage_type",
    "scope_ab_arm",
)
#: Bytes-read bin edges in GB (dbt var bytes_read_bin_edges_gb); the SQL macro bytes_read_bin uses the same.
DEFAULT_EDGES_GB: tuple[float, ...] = (1, 3, 10, 30, 100)


@dataclass(frozen=True)
class ChangeParams:
    """marts.change_effects' parameters (config change_params, from the vars): their defaults live here only."""

    window_days: float = 7.0
    block: str = "hour"
    seed: int = 42
    n_resamples: int = N_RESAMPLES
    bin_edges_gb: tuple[float, ...] = DEFAULT_EDGES_GB
    #: A comparison needs this many jobs in each of its cells (scope/control x before/after) ...
    min_jobs: int = 30
    #: ... and this many blocks with jobs in each window.
    min_blocks: int = 10
    #: A stratum enters the stratified effect only with this many jobs in each of its cells.
    min_stratum_jobs: int = 5

    def __post_init__(self) -> None:
        check_block(self.block, "change_block")
        if self.window_days <= 0:
            raise ValueError(f"var change_window_days must be positive, not {self.window_days}")
        if list(self.bin_edges_gb) != sorted(set(self.bin_edges_gb)) or any(e <= 0 for e in self.bin_edges_gb):
            raise ValueError(f"var bytes_read_bin_edges_gb must be increasing positive numbers: {self.bin_edges_gb}")


def _gb(x: float) -> str:
    return f"{x:g}"


def bin_labels(edges_gb: tuple[float, ...]) -> list[str]:
    """'<1 GB', '1-3 GB', ..., '>=100 GB': the labels macros/bytes_read_bin.sql writes too."""
    labels = [f"<{_gb(edges_gb[0])} GB"]
    labels += [f"{_gb(a)}-{_gb(b)} GB" for a, b in zip(edges_gb, edges_gb[1:])]
    labels.append(f">={_gb(edges_gb[-1])} GB")
    return labels


def assign_bins(bytes_read: np.ndarray, edges_gb: tuple[float, ...]) -> np.ndarray:
    """Bin label per job; 'unknown' where bytes read is not known (NaN)."""
    labels = np.array(bin_labels(edges_gb) + ["unknown"], dtype=object)
    b = np.asarray(bytes_read, dtype=float)
    idx = np.searchsorted(np.asarray(edges_gb, dtype=float) * GB, b, side="right")
    idx = np.where(np.isnan(b), len(labels) - 1, idx)
    return labels[idx]


@dataclass(frozen=True)
class Effect:
    """One difference (stratified or not) with its percentile interval."""

    value: float | None
    ci_low: float | None
    ci_high: float | None


@dataclass
class Cells:
    """Per-block sums of one window: axis 1 is (group, stratum), group 0 in scope, 1 control."""

    num: np.ndarray  # (blocks, 2, strata) cpu seconds
    den: np.ndarray  # (blocks, 2, strata) core-wall seconds
    jobs: np.ndarray  # (2, strata) job counts
    wall: np.ndarray  # (2, strata) wall seconds

    @property
    def blocks(self) -> int:
        return self.num.shape[0]


def _cells(
    block_ids: np.ndarray,
    group: np.ndarray,
    stratum: np.ndarray,
    n_strata: int,
    cpu: np.ndarray,
    core_wall: np.ndarray,
    wall: np.ndarray,
) -> Cells:
    _, inv = np.unique(block_ids, return_inverse=True) if len(block_ids) else (None, np.zeros(0, int))
    k = int(inv.max()) + 1 if len(inv) else 0
    flat = (inv * 2 + group) * n_strata + stratum
    size = k * 2 * n_strata
    num = np.bincount(flat, weights=cpu, minlength=size).reshape(k, 2, n_strata)
    den = np.bincount(flat, weights=core_wall, minlength=size).reshape(k, 2, n_strata)
    cell = group * n_strata + stratum
    jobs = np.bincount(cell, minlength=2 * n_strata).reshape(2, n_strata)
    wsum = np.bincount(cell, weights=wall, minlength=2 * n_strata).reshape(2, n_strata)
    return Cells(num, den, jobs, wsum)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def _effect(nb, db, na, da, weights: np.ndarray | None, control: bool) -> np.ndarray:
    """DiD (or before/after) of efficiency from sums shaped (..., 2, strata).

    weights None: ratio of sums over all strata; else Σ_s w_s eff_s over the weighted strata.
    """
    if weights is None:
        eb = _ratio(nb.sum(-1), db.sum(-1))
        ea = _ratio(na.sum(-1), da.sum(-1))
    else:
        # strata outside the weights may be empty (NaN): they must not poison the sum
        eb = (np.where(weights > 0, _ratio(nb, db), 0.0) * weights).sum(-1)
        ea = (np.where(weights > 0, _ratio(na, da), 0.0) * weights).sum(-1)
    diff = ea - eb  # (..., 2)
    return diff[..., 0] - diff[..., 1] if control else diff[..., 0]


def _bootstrap(
    before: Cells, after: Cells, weights, control: bool, p: ChangeParams, rng: np.random.Generator
) -> tuple[float | None, float | None]:
    """Percentile interval of the effect over hour blocks resampled within each window."""
    r = p.n_resamples

    def resampled(c: Cells):
        counts = rng.multinomial(c.blocks, np.full(c.blocks, 1.0 / c.blocks), size=r).astype(float)
        num = (counts @ c.num.reshape(c.blocks, -1)).reshape(r, *c.num.shape[1:])
        den = (counts @ c.den.reshape(c.blocks, -1)).reshape(r, *c.den.shape[1:])
        return num, den

    nb, db = resampled(before)
    na, da = resampled(after)
    stats = _effect(nb, db, na, da, weights, control)
    stats = stats[np.isfinite(stats)]
    if len(stats) < r * 0.9:  # too many resamples left a cell empty: no honest interval
        return None, None
    alpha = (1 - CONFIDENCE) / 2
    lo, hi = np.percentile(stats, [100 * alpha, 100 * (1 - alpha)])
    return float(lo), float(hi)


def _none(x) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def _conclusion(effect: Effect, enough: bool) -> str:
    if not enough:
        return "insufficient data"
    if effect.ci_low is None or effect.ci_high is None:
        return "insufficient data"
    if effect.ci_low > 0:
        return "efficiency higher after"
    if effect.ci_high < 0:
        return "efficiency lower after"
    return "no significant difference"


def _load(jobs: pa.Table, changes: pa.Table, p: ChangeParams) -> tuple[dict, list[dict]]:
    con = duckdb.connect()
    try:
        con.execute("set TimeZone = 'UTC'")
        con.register("j", jobs.select(list(JOB_COLUMNS)))
        trunc = "hour" if p.block == "hour" else "day"
        data = con.execute(f"""
            select cluster, node, storage_type, ab_arm, coalesce(job_class, 'unknown') as job_class,
                   epoch_us(cast(start_time as timestamptz)) as start_us,
                   epoch_us(cast(end_time as timestamptz)) as end_us,
                   epoch_us(date_trunc('{trunc}', timezone('UTC', cast(end_time as timestamptz)))) as block_us,
                   cast(cpu_seconds as double) as cpu, cast(wall_seconds as double) as wall,
                   cast(core_wall_seconds as double) as core_wall,
                   cast(coalesce(bytes_read, bytes_read_remote) as double) as bytes_read
            from j
            where core_wall_seconds > 0 and start_time is not null and end_time is not null
            -- a fixed order: the bootstrap sees the same arrays however the rows arrived
            order by end_time, start_time, cluster, node, cpu_seconds, core_wall_seconds
        """).fetchnumpy()
    finally:
        con.close()
    return data, _change_rows(changes)


def _change_rows(changes: pa.Table) -> list[dict]:
    """The recorded changes in time order, with their instant and recording time in epoch us."""
    con = duckdb.connect()
    try:
        con.execute("set TimeZone = 'UTC'")
        con.register(
            "c",
            changes.select(list(CHANGE_COLUMNS) + (["recorded_at"] if "recorded_at" in changes.column_names else [])),
        )
        # recorded_at is optional: a change list without it is taken as recorded on time
        recorded = (
            "epoch_us(cast(recorded_at as timestamptz))"
            if "recorded_at" in changes.column_names
            else "cast(null as bigint)"
        )
        change_rows = con.execute(f"""
            select change_id, cast(changed_at as timestamptz) as changed_at, description, category, cluster,
                   scope_nodes, scope_storage_type, scope_ab_arm, epoch_us(cast(changed_at as timestamptz)) as at_us,
                   {recorded} as recorded_us
            from c where changed_at is not null order by changed_at, change_id
        """).fetchall()
    finally:
        con.close()
    names = (*CHANGE_COLUMNS, "at_us", "recorded_us")  # the select's order
    return [dict(zip(names, r)) for r in change_rows]


def _overlapping(changes: list[dict], i: int, window_us: int) -> list[dict]:
    """The other changes within a window of change i in time, on its cluster or site-wide."""
    ch, t = changes[i], int(changes[i]["at_us"])
    return [
        o
        for j, o in enumerate(changes)
        if j != i
        and abs(int(o["at_us"]) - t) < window_us
        and (o["cluster"] is None or ch["cluster"] is None or o["cluster"] == ch["cluster"])
    ]


def _rebuilt(until: dt.date, changes_from: dt.date | None, changes_until: dt.date | None) -> bool:
    return not (
        (changes_from is not None and until < changes_from) or (changes_until is not None and until >= changes_until)
    )


def jobs_needed_from(
    site_change: pa.Table,
    params: ChangeParams | None = None,
    changes_from: dt.date | None = None,
    changes_until: dt.date | None = None,
) -> dt.datetime | None:
    """The earliest job end a build of ``change_effects`` with this window reads, or None for
    every job (a full build). An incremental build reads the jobs ending from this instant on, plus
    the earliest-ending job of each cluster (``needed_jobs_sql``): nothing else alters the rows of
    the changes it rebuilds. Without a change to rebuild it is the far future (no job)."""
    if changes_from is None and changes_until is None:
        return None
    p = params or ChangeParams()
    window_us = int(p.window_days * 86400 * 1_000_000)
    changes = _change_rows(site_change)
    starts = [
        int(ch["at_us"]) - window_us
        for i, ch in enumerate(changes)
        if _rebuilt(_inputs_until(ch, _overlapping(changes, i, window_us), window_us), changes_from, changes_until)
    ]
    if not starts:
        return dt.datetime.max.replace(tzinfo=dt.timezone.utc)
    return dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=min(starts))


def needed_jobs_sql(relation: str, since: dt.datetime | None) -> str:
    """SQL over a job_efficiency relation: the columns change_effects reads, of the jobs ending at
    or after ``since`` (all jobs for None), and of each cluster's earliest-ending job before it,
    which gives a change the first day with data (before_days_with_data) as a full build sees it."""
    columns = ", ".join(f'"{c}"' for c in JOB_COLUMNS)
    usable = "core_wall_seconds > 0 and start_time is not null and end_time is not null"
    if since is None:
        return f"select {columns} from {relation}"
    if since.year >= 9999:
        return f"select {columns} from {relation} where false"
    at = f"cast('{since.isoformat()}' as timestamptz)"
    # each cluster's earliest end first (an aggregate), then the order among the jobs ending then:
    # numbering every job of history per cluster sorted all of it, the most of an hourly
    # change_effects on a year of jobs
    return f"""
        select {columns} from {relation} where end_time >= {at}
        union all
        select {columns} from (
            select {columns}, row_number() over (partition by cluster order by end_time, start_time) as earliest
            from {relation} as jobs
            semi join (
                select cluster, min(end_time) as end_time from {relation}
                where end_time < {at} and {usable}
                group by cluster
            ) as first_end
            on first_end.cluster is not distinct from jobs.cluster and first_end.end_time = jobs.end_time
            where jobs.end_time < {at} and {usable}
        ) where earliest = 1
    """


def _utc_day(epoch_us: int) -> dt.date:
    return (dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=epoch_us)).date()


def _inputs_until(change: dict, overlapping: list[dict], window_us: int) -> dt.date:
    """The last UTC day whose jobs or change records can alter the change's rows: its after
    window's end, or a later day on which it or a change overlapping it was recorded."""
    days = [_utc_day(int(change["at_us"]) + window_us)]
    days += [_utc_day(int(c["recorded_us"])) for c in (change, *overlapping) if c.get("recorded_us") is not None]
    return max(days)


def _scope(change: dict) -> tuple[str, str]:
    """(kind, text): kind 'site', 'nodes', 'storage_type' or 'arm'."""
    if change["scope_nodes"]:
        return "nodes", "nodes " + ",".join(change["scope_nodes"])
    if change["scope_storage_type"]:
        return "storage_type", "storage type " + change["scope_storage_type"]
    if change["scope_ab_arm"]:
        return "arm", "arm " + change["scope_ab_arm"]
    return "site", "site"


def _short(host: str) -> str:
    return host.split(".")[0].lower() if host and not host[0].isdigit() else (host or "").lower()


def scope_text(change: dict) -> str:
    """The change's scope as the mart's ``scope`` column words it ('storage type nfs')."""
    return _scope(change)[1]


def scope_from_text(text: str) -> dict | None:
    """The scope fields (scope_nodes, scope_storage_type, scope_ab_arm) that ``scope_text`` words
    as ``text``; None for a text it does not write. A reader of the mart alone (the report) finds
    a change's jobs from its row's ``cluster`` and ``scope`` by the rule the mart applied."""
    scope: dict = {"scope_nodes": None, "scope_storage_type": None, "scope_ab_arm": None}
    for prefix, key in (("nodes ", "scope_nodes"), ("storage type ", "scope_storage_type"), ("arm ", "scope_ab_arm")):
        if text.startswith(prefix) and len(text) > len(prefix):
            value = text[len(prefix) :]
            scope[key] = value.split(",") if key == "scope_nodes" else value
            return scope
    return scope if text == "site" else None


def job_in_scope(
    change: dict, cluster: str | None, node: str | None, storage_type: str | None, ab_arm: str | None
) -> bool:
    """Whether a job of ``cluster`` on ``node`` (its storage type and arm) is in the scope of
    ``change`` (a stg_site_change row): the rule ``change_effects`` applies to its jobs, for a reader
    that shows the same jobs (the report's before/after plot)."""
    if change["cluster"] is not None and cluster != change["cluster"]:
        return False
    kind, _ = _scope(change)
    if kind == "nodes":
        return _short(node or "") in {_short(x) for x in change["scope_nodes"]}
    if kind == "storage_type":
        return storage_type == change["scope_storage_type"]
    if kind == "arm":
        return ab_arm == change["scope_ab_arm"]
    return True


def change_effects(
    job_efficiency: pa.Table,
    site_change: pa.Table,
    params: ChangeParams | None = None,
    changes_from: dt.date | None = None,
    changes_until: dt.date | None = None,
) -> pa.Table:
    """The rows of marts.change_effects (schema SCHEMA) from marts.job_efficiency and stg_site_change.

    ``changes_from`` / ``changes_until`` (an incremental build): only the changes whose
    inputs_until lies in [changes_from, changes_until) get rows.
    """
    p = params or ChangeParams()
    for name, table, needed in (
        ("job_efficiency", job_efficiency, JOB_COLUMNS),
        ("site_change", site_change, CHANGE_COLUMNS),
    ):
        missing = [c for c in needed if c not in table.column_names]
        if missing:
            raise ValueError(f"{name} lacks column(s) {missing}")
    data, changes = _load(job_efficiency, site_change, p)
    n = len(data["cpu"])
    window_us = int(p.window_days * 86400 * 1_000_000)
    cluster = np.asarray(data["cluster"], dtype=object)
    node_short = np.array([_short(x) for x in data["node"]], dtype=object) if n else np.zeros(0, object)
    storage = np.asarray(data["storage_type"], dtype=object)
    arm = np.asarray(data["ab_arm"], dtype=object)
    start, end, block = (np.asarray(data[k], dtype=np.int64) for k in ("start_us", "end_us", "block_us"))
    cpu, wall, core_wall = (np.asarray(data[k], dtype=float) for k in ("cpu", "wall", "core_wall"))
    bins = assign_bins(np.asarray(data["bytes_read"], dtype=float), p.bin_edges_gb)
    job_class = np.asarray(data["job_class"], dtype=object)
    stratum_keys = sorted(set(zip(job_class.tolist(), bins.tolist())))
    stratum_index = {k: i for i, k in enumerate(stratum_keys)}
    stratum = np.array([stratum_index[k] for k in zip(job_class.tolist(), bins.tolist())], dtype=np.int64)
    rows: list[dict] = []
    for i, ch in enumerate(changes):
        t = int(ch["at_us"])
        overlapping = _overlapping(changes, i, window_us)
        until = _inputs_until(ch, overlapping, window_us)
        if not _rebuilt(until, changes_from, changes_until):
            continue
        in_cluster = np.ones(n, bool) if ch["cluster"] is None else (cluster == ch["cluster"])
        kind, scope_text = _scope(ch)
        if kind == "nodes":
            wanted = {_short(x) for x in ch["scope_nodes"]}
            in_scope = np.isin(node_short, list(wanted))
        elif kind == "storage_type":
            in_scope = storage == ch["scope_storage_type"]
        elif kind == "arm":
            in_scope = arm == ch["scope_ab_arm"]
        else:
            in_scope = np.ones(n, bool)
        before = in_cluster & (end >= t - window_us) & (end < t)
        after = in_cluster & (start >= t) & (end < t + window_us)
        straddling = int((in_cluster & (start < t) & (end >= t) & (end < t + window_us)).sum())
        group = np.where(in_scope, 0, 1)
        control = kind != "site" and all(((m & (group == 1)).sum() > 0) for m in (before, after))
        cb = _cells(
            block[before],
            group[before],
            stratum[before],
            len(stratum_keys),
            cpu[before],
            core_wall[before],
            wall[before],
        )
        ca = _cells(
            block[after], group[after], stratum[after], len(stratum_keys), cpu[after], core_wall[after], wall[after]
        )
        span_first = int(end[in_cluster].min()) if in_cluster.any() else t
        span_last = int(end[in_cluster].max()) if in_cluster.any() else t
        others = [o["change_id"] for o in overlapping]
        context = dict(
            change_id=ch["change_id"],
            cluster=ch["cluster"],
            changed_at=ch["changed_at"],
            description=ch["description"],
            category=ch["category"],
            scope=scope_text,
            comparison="difference-in-differences" if control else "before-after",
            window_days=float(p.window_days),
            before_days_with_data=max(0.0, (t - max(t - window_us, span_first)) / 86400e6),
            after_days_with_data=max(0.0, (min(t + window_us, span_last) - t) / 86400e6),
            straddling_jobs=straddling,
            overlapping_changes=", ".join(others) or None,
            control_missing=not control,
            inputs_until=until,
        )
        rng = np.random.default_rng(p.seed)
        rows.append(_change_row(cb, ca, control, stratum_keys, context, p, rng, kind))
        for s, (jc, b) in enumerate(stratum_keys):
            if cb.jobs[0, s] + ca.jobs[0, s] == 0:
                continue
            sub_b = Cells(
                cb.num[:, :, s : s + 1], cb.den[:, :, s : s + 1], cb.jobs[:, s : s + 1], cb.wall[:, s : s + 1]
            )
            sub_a = Cells(
                ca.num[:, :, s : s + 1], ca.den[:, :, s : s + 1], ca.jobs[:, s : s + 1], ca.wall[:, s : s + 1]
            )
            rows.append(_stratum_row(sub_b, sub_a, control, jc, b, context, p, rng, kind))
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def _describe(before: Cells, after: Cells, control: bool) -> dict:
    out = {}
    for g, gname in ((0, "scope"), (1, "control")):
        for c, w in ((before, "before"), (after, "after")):
            num = c.num[:, g, :].sum()
            den = c.den[:, g, :].sum()
            wall = c.wall[g].sum()
            out[f"jobs_{gname}_{w}"] = int(c.jobs[g].sum())
            if g == 1 and not control:
                out[f"efficiency_{gname}_{w}"] = None
                continue
            out[f"efficiency_{gname}_{w}"] = float(num / den) if den > 0 else None
            if g == 0:
                out[f"core_hours_{gname}_{w}"] = float(den / 3600)
                out[f"cpu_per_wall_{gname}_{w}"] = float(num / wall) if wall > 0 else None
    return out


def _enough(before: Cells, after: Cells, control: bool, p: ChangeParams, context: dict) -> list[str]:
    reasons = []
    groups = ((0, "in scope"), (1, "control")) if control else ((0, "in scope"),)
    for g, name in groups:
        for c, w in ((before, "before"), (after, "after")):
            if c.jobs[g].sum() < p.min_jobs:
                reasons.append(f"{name} {w}: {int(c.jobs[g].sum())} jobs (< {p.min_jobs})")
    for c, w in ((before, "before"), (after, "after")):
        if c.blocks < p.min_blocks:
            reasons.append(f"{w}: {c.blocks} {p.block}s with jobs (< {p.min_blocks})")
    return reasons


def _flags(context: dict, reasons: list[str], p: ChangeParams, kind: str) -> tuple[bool, list[str]]:
    notes = list(reasons)
    short = (
        context["before_days_with_data"] < p.window_days - 1 / 24
        or context["after_days_with_data"] < p.window_days - 1 / 24
    )
    if short:
        notes.append(
            f"short window: {context['before_days_with_data']:.1f} d before and "
            f"{context['after_days_with_data']:.1f} d after have data (window {p.window_days:g} d)"
        )
    if context["overlapping_changes"]:
        notes.append(f"overlaps change(s) {context['overlapping_changes']}: the effect is theirs too")
    if context["control_missing"]:
        notes.append(
            "site-wide change: no control group, before/after only"
            if kind == "site"
            else "no jobs outside the scope in a window: no control group, before/after only"
        )
    return short, notes


@dataclass(frozen=True)
class _Estimate:
    """What one row of SCHEMA says of the effect: a change's over all its jobs (standardised over
    strata, beside the plain ratio of sums) or one stratum's (the two are the same)."""

    row_kind: str
    job_class: str
    bin_label: str
    effect: Effect
    unstratified: Effect
    strata_used: int
    share: float | None


def _point(before: Cells, after: Cells, weights: np.ndarray | None, control: bool) -> float | None:
    """The effect on the windows' own sums, not resampled: standardised over strata by ``weights``,
    or one ratio of sums (None); None where a window has no core-hours to divide by."""
    return _none(_effect(before.num.sum(0), before.den.sum(0), after.num.sum(0), after.den.sum(0), weights, control))


def _change_row(
    before: Cells,
    after: Cells,
    control: bool,
    strata,
    context: dict,
    p: ChangeParams,
    rng: np.random.Generator,
    kind: str,
) -> dict:
    groups = [0, 1] if control else [0]
    # Strata usable for standardisation: enough jobs in every cell the comparison reads.
    usable = np.ones(len(strata), bool)
    for g in groups:
        usable &= (before.jobs[g] >= p.min_stratum_jobs) & (after.jobs[g] >= p.min_stratum_jobs)
    scope_den = before.den[:, 0, :].sum(0) + after.den[:, 0, :].sum(0)
    # a subset's sum can exceed the whole's by a rounding step when summed in another order
    share = min(1.0, float(scope_den[usable].sum() / scope_den.sum())) if scope_den.sum() > 0 else 0.0
    weights = np.where(usable, scope_den, 0.0)
    weights = weights / weights.sum() if weights.sum() > 0 else None
    unstrat = Effect(
        _point(before, after, None, control),
        *(_bootstrap(before, after, None, control, p, rng) if before.blocks and after.blocks else (None, None)),
    )
    if weights is not None and before.blocks and after.blocks:
        strat = Effect(_point(before, after, weights, control), *_bootstrap(before, after, weights, control, p, rng))
    else:
        strat = Effect(None, None, None)
    reasons = _enough(before, after, control, p, context)
    if weights is None:
        reasons.append("no stratum has enough jobs in every cell")
    estimate = _Estimate("change", "all", "all", strat, unstrat, int(usable.sum()), share)
    return _result_row(before, after, control, context, p, kind, estimate, reasons)


def _stratum_row(
    before: Cells,
    after: Cells,
    control: bool,
    job_class: str,
    bin_label: str,
    context: dict,
    p: ChangeParams,
    rng: np.random.Generator,
    kind: str,
) -> dict:
    # Blocks where this stratum had no job still count as blocks of the window (they were
    # hours of the window too); resampling them keeps the interval honest about sparse strata.
    value = _point(before, after, None, control)
    lo, hi = (None, None)
    if value is not None:
        lo, hi = _bootstrap(before, after, None, control, p, rng)
    effect = Effect(value, lo, hi)
    estimate = _Estimate("stratum", job_class, bin_label, effect, effect, 1, None)
    return _result_row(before, after, control, context, p, kind, estimate, _enough(before, after, control, p, context))


def _result_row(
    before: Cells,
    after: Cells,
    control: bool,
    context: dict,
    p: ChangeParams,
    kind: str,
    estimate: _Estimate,
    reasons: list[str],
) -> dict:
    """One row of SCHEMA: the change, its windows' figures, the estimate and the words on it. A row
    with ``reasons`` (why its data are too few) concludes nothing; its warning says why, and says
    what else weakens it (a short window, overlapping changes, no control group)."""
    short, notes = _flags(context, reasons, p, kind)
    enough = not reasons
    effect, unstratified = estimate.effect, estimate.unstratified
    return dict(
        context,
        **_describe(before, after, control),
        row_kind=estimate.row_kind,
        job_class=estimate.job_class,
        bytes_read_bin=estimate.bin_label,
        effect=effect.value,
        effect_ci_low=effect.ci_low,
        effect_ci_high=effect.ci_high,
        effect_unstratified=unstratified.value,
        effect_unstratified_ci_low=unstratified.ci_low,
        effect_unstratified_ci_high=unstratified.ci_high,
        strata_used=estimate.strata_used,
        strata_core_hours_share=estimate.share,
        blocks_before=before.blocks,
        blocks_after=after.blocks,
        short_window=short,
        enough_data=enough,
        warning="; ".join(notes) or None,
        conclusion=_conclusion(effect, enough),
        conclusion_unstratified=_conclusion(unstratified, enough),
    )


SCHEMA = pa.schema(
    [
        ("change_id", pa.string()),
        ("cluster", pa.string()),
        ("changed_at", pa.timestamp("us", tz="UTC")),
        ("description", pa.string()),
        ("category", pa.string()),
        ("scope", pa.string()),
        ("comparison", pa.string()),
        ("row_kind", pa.string()),
        ("job_class", pa.string()),
        ("bytes_read_bin", pa.string()),
        ("window_days", pa.float64()),
        ("before_days_with_data", pa.float64()),
        ("after_days_with_data", pa.float64()),
        ("jobs_scope_before", pa.int64()),
        ("jobs_scope_after", pa.int64()),
        ("jobs_control_before", pa.int64()),
        ("jobs_control_after", pa.int64()),
        ("core_hours_scope_before", pa.float64()),
        ("core_hours_scope_after", pa.float64()),
        ("efficiency_scope_before", pa.float64()),
        ("efficiency_scope_after", pa.float64()),
        ("efficiency_control_before", pa.float64()),
        ("efficiency_control_after", pa.float64()),
        ("cpu_per_wall_scope_before", pa.float64()),
        ("cpu_per_wall_scope_after", pa.float64()),
        ("effect", pa.float64()),
        ("effect_ci_low", pa.float64()),
        ("effect_ci_high", pa.float64()),
        ("effect_unstratified", pa.float64()),
        ("effect_unstratified_ci_low", pa.float64()),
        ("effect_unstratified_ci_high", pa.float64()),
        ("strata_used", pa.int64()),
        ("strata_core_hours_share", pa.float64()),
        ("blocks_before", pa.int64()),
        ("blocks_after", pa.int64()),
        ("straddling_jobs", pa.int64()),
        ("short_window", pa.bool_()),
        ("overlapping_changes", pa.string()),
        ("control_missing", pa.bool_()),
        ("enough_data", pa.bool_()),
        ("warning", pa.string()),
        ("conclusion", pa.string()),
        ("conclusion_unstratified", pa.string()),
        ("inputs_until", pa.date32()),
    ]
)
