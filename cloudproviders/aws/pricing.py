"""On-demand prices per instance type, for the ``price`` expander (``Priced``).

The shipped table (``prices.json``, next to this file) is a dated snapshot of AWS's
public on-demand Linux prices in us-east-1; ``ProviderConfig.price_file`` (JSON or YAML
``{instanceType: pricePerHour}``) overrides or extends it, e.g. for another region or a
negotiated discount. An unknown type has no price (the expander then falls back).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib import resources

from cloudproviders.pricing import load_price_table

__all__ = ["load_prices"]


def _shipped() -> dict[str, float]:
    raw = json.loads(resources.files("cloudproviders.aws").joinpath("prices.json").read_text(encoding="utf-8"))
    return {str(k): float(v) for k, v in raw["prices"].items()}


def load_prices(price_file: str | None) -> Mapping[str, float]:
    """The shipped table with ``price_file``'s entries on top; ``CloudConfigError`` names a bad file or entry."""
    return load_price_table(_shipped(), price_file, kind="instanceType")
