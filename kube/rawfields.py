"""What the typed decoders (``kube.typedpods``, ``typednodes``, ``typedvolumes``) share.

Nested values they do not type are kept as undecoded ``msgspec.Raw`` bytes; ``raw_value``
reads one as the dict path sees it. ``Declined`` is what a decoder raises when an object
must go through the dict path instead (which names the problem, if there is one).
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import Raw

__all__ = ["ABSENT", "Declined", "decode_any", "raw_value"]

#: An absent nested field (``len`` 0); an explicit ``null`` is ``Raw(b"null")``.
ABSENT = Raw()
decode_any = msgspec.json.Decoder().decode


class Declined(Exception):
    """This object needs the dict path (which names the problem, if there is one)."""


def raw_value(raw: Raw) -> Any:
    """A nested field as the dict path sees it (absent and ``null`` are both None)."""
    return decode_any(raw) if len(raw) else None
