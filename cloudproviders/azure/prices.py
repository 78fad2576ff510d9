"""On-demand prices per VM size for the price expander, overridable by ``--price-file``.

The table is a snapshot of Microsoft's public pay-as-you-go Linux VM prices for
``eastus``, in USD per hour, as of mid-2024. Prices differ by region and change over
time: give ``ProviderConfig.price_file`` (a JSON/YAML map ``{vmSize: pricePerHour}``)
for real decisions. The L-series prices include their local NVMe disks.
"""

from __future__ import annotations

from collections.abc import Mapping

from cloudproviders.pricing import load_price_table

__all__ = ["PRICES", "load_prices"]

PRICES: Mapping[str, float] = {
    "Standard_D2s_v5": 0.096, "Standard_D4s_v5": 0.192, "Standard_D8s_v5": 0.384, "Standard_D16s_v5": 0.768,
    "Standard_D4ds_v5": 0.226, "Standard_D8ds_v5": 0.452,
    "Standard_D4s_v3": 0.192, "Standard_D8s_v3": 0.384,
    "Standard_E4s_v5": 0.252, "Standard_E8s_v5": 0.504, "Standard_E16s_v5": 1.008,
    "Standard_L8s_v2": 0.624, "Standard_L16s_v2": 1.248,
    "Standard_L8s_v3": 0.624, "Standard_L16s_v3": 1.248, "Standard_L32s_v3": 2.496,
    "Standard_L8as_v3": 0.544, "Standard_L16as_v3": 1.088,
}


def load_prices(price_file: str | None) -> dict[str, float]:
    """The shipped table (keys lower-cased), overridden entry by entry by the price file."""
    return load_price_table(PRICES, price_file, kind="VM size", key=str.lower)
