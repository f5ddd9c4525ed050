"""Storage price / performance, Glasgow Table 4 style (marts.storage_price_performance)."""

from __future__ import annotations

from .. import fmt
from ..columns import CURRENCY, priced
from ..page import Column
from ..reader import MartReader
from ..spec import SectionOut, SectionSpec, TableSpec

_NM = fmt.NOT_MEASURED


def body(wh: MartReader, s: SectionOut) -> None:
    rows = wh.rows("""
        SELECT config_name, storage_type, device_model, devices_per_node, unit_price, currency,
               price_per_node, capacity_gb_per_node, price_per_gb, price_per_throughput,
               efficiency, node_throughput, nodes, jobs
        FROM marts.storage_price_performance
        ORDER BY price_per_throughput NULLS LAST, config_name
    """)
    s.table("storage_price_performance", rows)
    currencies = {r["currency"] for r in rows if r["currency"]}
    if len(currencies) > 1:
        s.note(
            f"Prices are in several currencies ({', '.join(sorted(currencies))}): compare rows of the "
            "same currency only."
        )
    s.note(
        "Node throughput is CPU core-hours delivered per node-hour over the observed period "
        "(Glasgow's throughput: at most the node's cores when fully busy). Price / throughput = "
        "price per node / node throughput; price / GB = price per node / GB per node "
        "(both from marts.storage_price_performance)."
    )


SPEC = SectionSpec(
    id="price_performance",
    title="Storage price / performance",
    intro="What each worker-node storage configuration costs against what it delivered, in the "
    "style of Table 4 of the Glasgow SSD study: unit price, price per unit of node throughput "
    "and price per GB, with the efficiency and node throughput measured here. Configurations "
    'in the catalogue that no node runs show "not measured".',
    body=body,
    marts=("storage_price_performance",),
    empty_hint="Load a storage catalogue first.",
    tables=(
        TableSpec(
            "storage_price_performance",
            "Price / performance per configuration",
            (
                Column("config_name", "configuration"),
                Column("storage_type", "storage type"),
                Column("device_model", "device"),
                Column("devices_per_node", "devices / node", "int"),
                priced("unit_price", "unit price"),
                CURRENCY,
                priced("price_per_node", "price / node"),
                Column("capacity_gb_per_node", "GB / node", "num"),
                priced("price_per_gb", "price / GB"),
                priced("price_per_throughput", "price / throughput", _NM),
                Column("efficiency", "measured efficiency", "pct", _NM),
                Column("node_throughput", "node throughput (core-h / node-h)", "num", _NM),
                Column("nodes", "nodes", "int", _NM),
                Column("jobs", "jobs", "int", _NM),
            ),
        ),
    ),
)
