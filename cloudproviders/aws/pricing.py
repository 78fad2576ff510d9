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
from pathlib import Path

import yaml

from cloudproviders.config import CloudConfigError

__all__ = ["load_prices"]


def _shipped() -> dict[str, float]:
    raw = json.loads(resources.files("cloudproviders.aws").joinpath("prices.json").read_text(encoding="utf-8"))
    return {str(k): float(v) for k, v in raw["prices"].items()}


def load_prices(price_file: str | None) -> Mapping[str, float]:
    """The shipped table with ``price_file``'s entries on top; ``CloudConfigError`` names a bad file or entry."""
    prices = _shipped()
    if price_file is None:
        return prices
    try:
        loaded = yaml.safe_load(Path(price_file).read_text(encoding="utf-8"))  # YAML reads JSON too
    except OSError as error:
        raise CloudConfigError(f"price file {price_file}: cannot read: {error.strerror}") from None
    except yaml.YAMLError as error:
        raise CloudConfigError(f"price file {price_file}: not JSON/YAML: {error}") from None
    if not isinstance(loaded, dict):
        raise CloudConfigError(f"price file {price_file}: expected a mapping {{instanceType: pricePerHour}}")
    for key, value in loaded.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise CloudConfigError(f"price file {price_file}: {key}: price must be a non-negative number, "
                                   f"got {value!r}")
        prices[str(key)] = float(value)
    return prices
