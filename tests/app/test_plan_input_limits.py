"""Issue 8, item 17: no input crashes, hangs or exhausts memory; each limit is named in the error."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest

import kube.documents
from tests.app.badinput import NOW_FLAG, Run, assert_one_line_error, base, dump, write

BILLION_LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(8))


@pytest.mark.parametrize(("content", "parts"), [
    pytest.param(BILLION_LAUGHS, ("aliases expand to more than the limit",), id="alias-bomb"),
    pytest.param("a: &a [*a]\n", ("alias refers to a node that contains it",), id="recursive-alias"),
    pytest.param("[" * 100_000 + "]" * 100_000, ("nested deeper than the limit of 100",), id="deep-flow-yaml"),
    pytest.param("".join(" " * i + "- \n" for i in range(0, 600, 2)) + " " * 600 + "x\n",
                 ("nested deeper than the limit of 100",), id="deep-block-yaml"),
    pytest.param('{"a":' * 100_000 + "1" + "}" * 100_000, ("invalid JSON", "nested too deeply"),
                 id="deep-json"),
    pytest.param('{"kind": "Node", "metadata": {"name": "w1"}, "x": NaN}', ("invalid JSON", "NaN"),
                 id="json-nan"),
    pytest.param('{"kind": "Node", "metadata": {"name": "w1"}, "x": ' + "9" * 5000 + "}",
                 ("invalid JSON", "digits"), id="json-overlong-integer"),
    pytest.param("kind: Node\nmetadata: {name: w1}\nx: " + "9" * 5000 + "\n", ("invalid YAML", "digits"),
                 id="yaml-overlong-integer"),
    pytest.param("kind: Node\nmetadata: {name: w1, creationTimestamp: 2026-13-45T00:00:00Z}\n",
                 ("invalid YAML", "month"), id="yaml-impossible-timestamp"),
    pytest.param("kind: Node\nmetadata: {name: w1}\nstatus: {capacity: {cpu: .inf}}\n",
                 ("Node/w1: status.capacity.cpu: inf is not a finite quantity",), id="yaml-inf"),
    pytest.param("kind: Node\nmetadata: {name: w1}\nstatus: {capacity: {memory: 1e9999999999}}\n",
                 ("Node/w1: status.capacity.memory:", "out of range"), id="quantity-exponent"),
    pytest.param("kind: Pod\nmetadata: {name: p}\nspec: {nodeSelector: " + "{a: " * 60 + "1" + "}" * 60 + "}\n",
                 ("Pod/p: spec.nodeSelector", "nested deeper"), id="deep-but-within-document-limit"),
    pytest.param(b"kind: Node\nmetadata: {name: \xff\xfe}\n", ("not UTF-8 text (byte 0xff at offset 28)",),
                 id="not-utf8"),
    pytest.param("kind: !!python/object:os.system {}\n", ("invalid YAML",), id="python-tag"),
])
def test_hostile_files(cli: Run, tmp_path: Path, content: str | bytes, parts: tuple[str, ...]) -> None:
    snapshot = write(tmp_path, content, "snapshot.json" if str(content).startswith('{"') else "snapshot.yaml")
    started = time.monotonic()
    assert_one_line_error(cli(["plan", snapshot, NOW_FLAG]), f"autoscaler plan: {snapshot}: ", *parts)
    assert time.monotonic() - started < 10


def test_size_limit(cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kube.documents, "MAX_BYTES", 2**20)
    snapshot = write(tmp_path, "# padding\n" * 200_000)
    assert_one_line_error(cli(["plan", snapshot, NOW_FLAG]), snapshot, "larger than the limit of 1 MiB")


def test_stdin_that_is_not_utf8(cli: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    stdin = io.TextIOWrapper(io.BytesIO(b"kind: Node\nmetadata: {name: \xc3\x28}\n"), encoding="utf-8")
    monkeypatch.setattr("sys.stdin", stdin)
    assert_one_line_error(cli(["plan", "-", NOW_FLAG]), "autoscaler plan: -: not UTF-8 text")


@pytest.mark.parametrize(("content", "parts"), [
    pytest.param(b"10: [\xff]\n", ("not UTF-8 text",), id="not-utf8"),
    pytest.param("10: [unclosed\n", ("invalid YAML",), id="not-yaml"),
    pytest.param("ten: ['.*']\n", ("not an integer",), id="priority-not-integer"),
    pytest.param("10: ['(']\n", ("not a regex",), id="bad-regex"),
    pytest.param("- a\n", ("expected a mapping",), id="a-list"),
    pytest.param(BILLION_LAUGHS, ("aliases expand",), id="alias-bomb"),
])
def test_bad_priority_config(cli: Run, tmp_path: Path, content: str | bytes, parts: tuple[str, ...]) -> None:
    """Every error names the flag first, then the file (issue 16, item 10)."""
    config = write(tmp_path, content, "priorities.yaml")
    snapshot = write(tmp_path, dump(base()))
    assert_one_line_error(cli(["plan", snapshot, NOW_FLAG, "--expander=priority", f"--priority-config={config}"]),
                          f"autoscaler plan: --priority-config: {config}: ", *parts)


@pytest.mark.parametrize(("name", "parts"), [
    pytest.param("missing.yaml", ("cannot read",), id="missing-file"),
    pytest.param("", ("cannot read",), id="a-directory"),
])
def test_unreadable_priority_config_names_the_flag(cli: Run, tmp_path: Path, name: str,
                                                   parts: tuple[str, ...]) -> None:
    config = str(tmp_path / name) if name else str(tmp_path)
    snapshot = write(tmp_path, dump(base()))
    assert_one_line_error(cli(["plan", snapshot, NOW_FLAG, f"--priority-config={config}"]),
                          f"autoscaler plan: --priority-config: {config}: ", *parts)


DURATION_FLAGS = ["--max-nodegroup-binpacking-duration", "--max-node-provision-time", "--max-node-startup-time",
                  "--new-pod-scale-up-delay", "--scale-down-unneeded-time", "--scale-down-delay-after-add",
                  "--scale-down-delay-after-delete", "--scale-down-delay-after-failure", "--max-pod-eviction-time",
                  "--scale-down-simulation-timeout", "--scan-interval"]


@pytest.mark.parametrize("flag", DURATION_FLAGS)
def test_negative_durations_are_rejected(cli: Run, tmp_path: Path, flag: str) -> None:
    snapshot = write(tmp_path, dump(base()))
    assert_one_line_error(cli(["plan", snapshot, NOW_FLAG, f"{flag}=-1s"]), flag, "negative")


@pytest.mark.parametrize("value", [
    pytest.param("1e400s", id="infinite"), pytest.param("\u0661\u0662s", id="non-ascii-digits"),
    pytest.param("9" * 70 + "s", id="overlong"),
])
def test_unusable_durations_are_rejected(cli: Run, tmp_path: Path, value: str) -> None:
    snapshot = write(tmp_path, dump(base()))
    assert_one_line_error(cli(["plan", snapshot, NOW_FLAG, f"--scale-down-unneeded-time={value}"]),
                          "--scale-down-unneeded-time")


def test_negative_unready_time_keeps_its_meaning(cli: Run, tmp_path: Path) -> None:
    code, _, err = cli(["plan", write(tmp_path, dump(base())), NOW_FLAG, "--scale-down-unready-time=-1s"])
    assert code == 0, err


@pytest.mark.parametrize("flag", [
    pytest.param("--max-nodes-total=\u0661\u0662", id="non-ascii-int"),
    pytest.param("--cores-total=\u0661:\u0662", id="non-ascii-min-max"),
    pytest.param("--expendable-pods-priority-cutoff=\u0661", id="non-ascii-cutoff"),
])
def test_non_ascii_digits_in_flags(cli: Run, tmp_path: Path, flag: str) -> None:
    assert_one_line_error(cli(["plan", write(tmp_path, dump(base())), NOW_FLAG, flag]), flag.split("=", maxsplit=1)[0])
