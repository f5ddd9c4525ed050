"""The report's sections, in page order, and what is derived from their specs.

Adding a section: a module in ``sections/`` that defines ``SPEC`` (a ``SectionSpec``), and its
name in ``SECTION_MODULES`` where it should appear. Its id, its entry in the table of contents, its
CSV files (and their removal when a later run does not write them) all follow from the spec.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import import_module

from .reader import MartReader
from .spec import CORE, Group, SectionSpec, Shown

SECTION_MODULES = (
    "verdict",
    "summary",
    "efficiency",
    "ab",
    "cache",
    "price_performance",
    "ab_uncertainty",
    "occupancy",
    "fairness",
    "popularity",
    "prediction",
    "changes",
    "input_size",
    "completeness",
    "hardware",
)

REGISTRY: tuple[SectionSpec, ...] = tuple(
    import_module(f"{__package__}.sections.{name}").SPEC for name in SECTION_MODULES
)


def of_group(group: Group, registry: Sequence[SectionSpec] = REGISTRY) -> tuple[SectionSpec, ...]:
    return tuple(s for s in registry if s.group == group)


def section_ids(group: Group = CORE, registry: Sequence[SectionSpec] = REGISTRY) -> tuple[str, ...]:
    return tuple(s.id for s in of_group(group, registry))


def csv_names(group: Group | None = None, registry: Sequence[SectionSpec] = REGISTRY) -> tuple[str, ...]:
    """The CSV files the sections (of ``group``, or all) may write."""
    specs = registry if group is None else of_group(group, registry)
    return tuple(name for s in specs for name in s.csv_names)


def group_marts(group: Group, registry: Sequence[SectionSpec] = REGISTRY) -> tuple[str, ...]:
    return tuple(dict.fromkeys(m for s in of_group(group, registry) for m in s.marts))


def shown_sections(wh: MartReader, registry: Sequence[SectionSpec] = REGISTRY) -> list[SectionSpec]:
    """The sections this warehouse gets, in registry order: a group is in or out as a whole."""
    decided: dict[Group, bool] = {}
    for spec in registry:
        if spec.group not in decided:
            decided[spec.group] = _group_shown(wh, spec.group, group_marts(spec.group, registry))
    return [s for s in registry if decided[s.group]]


def _group_shown(wh: MartReader, group: Group, marts: Sequence[str]) -> bool:
    if group.shown is Shown.ALWAYS:
        return True
    if group.shown is Shown.ANY_MART_EXISTS:
        return any(wh.has("marts", m) for m in marts)
    return any(wh.mart_has_rows(m) for m in marts)
