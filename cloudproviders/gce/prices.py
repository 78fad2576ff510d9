"""On-demand prices per machine type for the price expander, overridable by ``--price-file``.

The table is a snapshot of Google's public Compute Engine on-demand list prices for
``us-central1``, Linux, in USD per hour, as of mid-2024, rounded to 4 decimals. Prices
differ by region and change over time: give ``ProviderConfig.price_file`` (a JSON/YAML
map ``{machineType: pricePerHour}``) for real decisions. Local SSDs cost extra
(~$0.08 per GiB-month: about $0.0411/hour per 375 GiB partition) and are added to the
group's price.
"""

from __future__ import annotations

from collections.abc import Mapping

from cloudproviders.pricing import load_price_table

__all__ = ["LOCAL_SSD_PER_HOUR", "PRICES", "load_prices"]

LOCAL_SSD_PER_HOUR = 0.0411

PRICES: Mapping[str, float] = {
    "e2-standard-2": 0.0670, "e2-standard-4": 0.1340, "e2-standard-8": 0.2681, "e2-standard-16": 0.5362,
    "e2-highmem-4": 0.1809, "e2-highmem-8": 0.3618,
    "n1-standard-4": 0.1900, "n1-standard-8": 0.3800, "n1-highmem-8": 0.4736,
    "n2-standard-4": 0.1942, "n2-standard-8": 0.3885, "n2-standard-16": 0.7769, "n2-standard-32": 1.5539,
    "n2-highmem-4": 0.2620, "n2-highmem-8": 0.5241, "n2-highmem-16": 1.0481,
    "n2d-standard-4": 0.1690, "n2d-standard-8": 0.3380, "n2d-highmem-8": 0.4559,
    "c2-standard-8": 0.4176, "c2-standard-16": 0.8352,
    "c3-standard-8": 0.4029, "c3-standard-8-lssd": 0.4638, "c3-highmem-8": 0.5414,
    "z3-highmem-88": 13.3380,
}


def load_prices(price_file: str | None) -> dict[str, float]:
    """The shipped table, overridden entry by entry by the price file; errors name the file and key."""
    return load_price_table(PRICES, price_file, kind="machine type")
