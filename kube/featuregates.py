"""Kubernetes feature gates the decisions model, read from CA's ``--feature-gates``.

``--feature-gates=Key=true,Key2=false`` as upstream CA and every Kubernetes component
take it (``k8s.io/component-base/featuregate``). Only the gates that change what the
scheduler simulation decides are modelled; each defaults to Kubernetes' own default in
the release it was introduced (an alpha gate is off). A gate of Kubernetes that is not
modelled is accepted and ignored (named in one log line), so a flag list copied from a
cluster's components still starts the autoscaler.

* ``TaintTolerationComparisonOperators`` (alpha in Kubernetes 1.35, default off):
  tolerations with operator ``Gt``/``Lt`` compare the taint's value numerically
  (``k8s.io/api/core/v1/toleration.go``, ``ToleratesTaint``); off, such a toleration
  tolerates nothing, as kube-scheduler passes the gate to that function.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

__all__ = ["GATES", "FeatureGates", "parse_feature_gates"]


@dataclass(frozen=True, slots=True)
class FeatureGates:
    """The modelled gates, each at Kubernetes' default unless the flag set it."""

    taint_toleration_comparison_operators: bool = False


#: Gate name as Kubernetes spells it -> ``FeatureGates`` field.
GATES = {
    "TaintTolerationComparisonOperators": "taint_toleration_comparison_operators",
}

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_BOOLS = {"true": True, "false": False}


def parse_feature_gates(text: str) -> tuple[FeatureGates, tuple[str, ...]]:
    """``Key=bool,...`` -> the gates and the names of gates given but not modelled.

    Raises ``ValueError`` naming the bad pair (the caller names the flag). Values are
    Go ``strconv.ParseBool`` words as ``featuregate.Set`` takes them.
    """
    values: dict[str, bool] = {}
    ignored: list[str] = []
    for pair in (p.strip() for p in text.split(",")):
        if not pair:
            continue
        name, sep, value = (s.strip() for s in pair.partition("="))
        if not sep or not _NAME.fullmatch(name):
            raise ValueError(f"{pair!r} is not Key=true or Key=false")
        flag = _parse_bool(value)
        if flag is None:
            raise ValueError(f"{pair!r}: {value!r} is not a boolean (true or false)")
        field = GATES.get(name)
        if field is None:
            ignored.append(name)
        else:
            values[field] = flag
    return dataclasses.replace(FeatureGates(), **values), tuple(ignored)


def _parse_bool(text: str) -> bool | None:
    if text in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if text in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    return None
