"""Names and uids for objects the world creates, drawn from the run's seeded generator.

Kubernetes names pods of a ReplicaSet ``<rs>-<5 random characters>`` and PVs
``pvc-<uuid>``; drawing them from one ``random.Random(seed)`` keeps runs reproducible.
"""

from __future__ import annotations

import random
import uuid

__all__ = ["IdSource"]

#: The characters Kubernetes uses for generated name suffixes (no vowels, no look-alikes).
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


class IdSource:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def uid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def suffix(self, length: int = 5) -> str:
        return "".join(self.rng.choice(_ALPHABET) for _ in range(length))

    def pv_name(self) -> str:
        return f"pvc-{self.uid()}"
