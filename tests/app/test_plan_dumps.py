"""``plan --output=json`` writes exactly ``json.dumps(document, indent=1)``, whichever encoder runs."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.plan_output import dumps

CASES = [
    pytest.param({"version": 1, "nodes": []}, id="small"),
    pytest.param({"a": {"b": [1, 2, {"c": None}]}, "d": {}, "e": []}, id="nested-and-empty"),
    pytest.param({"u": [0.0, -0.0, 0.0001, 0.9999, 1.0, 123456.7891]}, id="rounded-floats"),
    pytest.param({"u": [1e-05, 2.5e-7]}, id="small-floats-in-exponent-form"),
    # msgspec spells these 0.00001 and 0.0000999 (no exponent): json's 1e-05 and 9.99e-05.
    pytest.param({"u": [1e-05]}, id="small-float-msgspec-writes-plain"),
    pytest.param({"u": [9.99e-05, -5e-05, 0.0001]}, id="just-below-and-at-1e-4"),
    pytest.param({"u": [1e16, 9.223372036854776e18]}, id="large-floats"),
    pytest.param({"u": [float("nan"), float("inf")]}, id="non-finite"),
    pytest.param({"s": "caf\u00e9", "t": "\u2603"}, id="non-ascii"),
    pytest.param({"s": "del\x7f", "c": "\x00\x1b\x1f\t\n\r\b\f"}, id="control-and-del"),
    pytest.param({"s": "node-1e5", "q": "\"quoted\" \\ /"}, id="exponent-lookalike-and-escapes"),
    pytest.param({"i": [2**63, 2**64, -(2**63), 2**70]}, id="big-ints"),
    pytest.param({"b": [True, False], "n": None}, id="literals"),
]


@pytest.mark.parametrize("document", CASES)
def test_dumps_equals_json_dumps_indent_1(document: dict[str, Any]) -> None:
    assert dumps(document) == json.dumps(document, indent=1) + "\n"
