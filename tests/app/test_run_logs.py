"""``run``'s log lines: klog-like text or one JSON object, structured fields from ours and the library's."""

from __future__ import annotations

import json
import logging
import sys

import pytest

from app.run.logs import JSONFormatter, TextFormatter


def _record(**extra: object) -> logging.LogRecord:
    record = logging.LogRecord("autoscaler.run", logging.INFO, __file__, 1, "loop", (), None)
    record.created = 1_780_000_000.25
    record.msecs = 250.0
    for key, value in extra.items():
        setattr(record, key, value)
    return record


@pytest.mark.parametrize("extra", [
    pytest.param({"fields": {"loop": 3, "phasesMs": {"scaleUp": 1.5}}}, id="ours"),
    pytest.param({"autoscaler": {"loop": 3, "phasesMs": {"scaleUp": 1.5}}}, id="library"),
])
def test_fields_are_structured_in_both_formats(extra: dict[str, object]) -> None:
    text = TextFormatter().format(_record(**extra))
    assert text.startswith("I")
    assert text.endswith('autoscaler.run] loop loop=3 phasesMs={"scaleUp":1.5}')
    payload = json.loads(JSONFormatter().format(_record(**extra)))
    assert payload == {"ts": 1_780_000_000.25, "level": "info", "logger": "autoscaler.run", "msg": "loop",
                       "loop": 3, "phasesMs": {"scaleUp": 1.5}}


def test_an_exception_stays_in_one_json_object() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.LogRecord("app.run", logging.ERROR, __file__, 1, "failed", (), None)
        record.exc_info = sys.exc_info()
    line = JSONFormatter().format(record)
    assert "\n" not in line
    assert "ValueError: boom" in json.loads(line)["error"]
