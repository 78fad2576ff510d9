"""Price tables for the ``price`` expander: a provider's shipped table, overridden by a file.

Every provider ships a snapshot of public on-demand prices per instance type / machine
type / VM size; ``--price-file`` (JSON or YAML, ``{type: pricePerHour}``) overrides it
entry by entry. One loader for all of them, so a bad file reads the same everywhere:
one line naming the file and the entry.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path

import yaml

from cloudproviders.config import CloudConfigError

__all__ = ["load_price_table"]


def load_price_table(shipped: Mapping[str, float], price_file: str | None, *, kind: str,
                     key: Callable[[str], str] = str) -> dict[str, float]:
    """``shipped`` with ``price_file``'s entries on top; ``key`` normalizes names (e.g. lower-cases them).

    ``kind`` names what the keys are (``instance type``) in error messages.
    """
    prices = {key(k): float(v) for k, v in shipped.items()}
    if price_file is None:
        return prices
    try:
        loaded = yaml.safe_load(Path(price_file).read_text(encoding="utf-8"))  # YAML reads JSON too
    except OSError as error:
        raise CloudConfigError(f"price file {price_file}: cannot read: {error.strerror}") from None
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise CloudConfigError(f"price file {price_file}: not JSON/YAML: {error}") from None
    if not isinstance(loaded, dict):
        raise CloudConfigError(f"price file {price_file}: expected a mapping {{{kind}: pricePerHour}}")
    for name, value in loaded.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
            raise CloudConfigError(f"price file {price_file}: {name}: price must be a non-negative number, "
                                   f"got {value!r}")
        prices[key(str(name))] = float(value)
    return prices
