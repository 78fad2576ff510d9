"""``run``'s log lines: klog-like text or one JSON object, structured fields from ours and the library's."""

from __future__ import annotations

import dataclasses
import json
import logging
import sys
from pathlib import Path

import pytest

from app.run.flags import LogSettings
from app.run.logs import JSONFormatter, TextFormatter, configure_logging, remove_logging


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


@pytest.mark.parametrize(("settings", "in_file", "on_stderr"), [
    pytest.param(LogSettings(), None, ["info line", "error line"], id="logtostderr"),
    pytest.param(LogSettings(to_stderr=False), ["info line", "error line"], ["error line"], id="file-errors-also"),
    pytest.param(LogSettings(to_stderr=False, stderr_threshold=logging.INFO), ["info line", "error line"],
                 ["info line", "error line"], id="stderrthreshold-info"),
    pytest.param(LogSettings(to_stderr=False, also_to_stderr=True, stderr_threshold=logging.CRITICAL),
                 ["info line", "error line"], ["info line", "error line"], id="alsologtostderr"),
    pytest.param(LogSettings(skip_headers=True), None, ["info line", "error line"], id="skip-headers"),
])
def test_klog_flags_route_records(settings: LogSettings, in_file: list[str] | None, on_stderr: list[str],
                                  tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "autoscaler.log"
    settings = dataclasses.replace(settings, file=str(path))
    handlers = configure_logging(settings)
    try:
        logging.getLogger("app.run").info("info line")
        logging.getLogger("app.run").error("error line")
    finally:
        remove_logging(handlers)
    err = capsys.readouterr().err.splitlines()
    assert [line.split("] ")[-1] for line in err] == on_stderr
    assert all(line.startswith(("I", "E")) != settings.skip_headers for line in err)
    if in_file is None:
        assert not path.exists()
    else:
        assert [line.split("] ")[-1] for line in path.read_text().splitlines()] == in_file


def test_vmodule_raises_one_logger_to_debug(capsys: pytest.CaptureFixture[str]) -> None:
    handlers = configure_logging(LogSettings(vmodule=(("kubeapi.leader", 4),)))
    try:
        logging.getLogger("kubeapi.leader").debug("lease detail")
        logging.getLogger("kubeapi.informer").debug("cache detail")
    finally:
        remove_logging(handlers)
        logging.getLogger("kubeapi.leader").setLevel(logging.NOTSET)
    err = capsys.readouterr().err
    assert "lease detail" in err
    assert "cache detail" not in err
