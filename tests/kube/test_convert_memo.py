"""Issue 7, item 1: conversion caches belong to a converter and are bounded; the library leaves the GC alone."""

from __future__ import annotations

import gc
from pathlib import Path

import yaml

from kube.convert import Converter, Memo
from kube.load import load_snapshot
from kube.names import StorageNames


def test_memo_empties_itself_at_its_bound() -> None:
    memo: Memo[int, int] = Memo(bound=3)
    for i in range(10):
        memo.put(i, i)
        assert len(memo) <= 3
    assert memo.get(9) == 9


def _pod(i: int) -> dict[str, object]:
    return {"kind": "Pod", "metadata": {"name": f"p{i}", "creationTimestamp": f"2026-05-01T00:00:{i % 60:02d}Z",
                                        "ownerReferences": [{"kind": "ReplicaSet", "name": f"rs{i}", "uid": str(i),
                                                             "controller": True}]},
            "spec": {"containers": [{"resources": {"requests": {"cpu": f"{i}m", "memory": f"{i}Mi"}}}],
                     "nodeSelector": {"n": str(i)}}}


def test_converter_tables_stay_within_their_bound() -> None:
    converter = Converter(StorageNames())
    for table in (converter.memos.times, converter.memos.requests, converter.memos.scheduling,
                  converter.memos.owners):
        table.bound = 50
    for i in range(500):
        converter.add(_pod(i), "watch")
    assert len(converter.objects.pods) == 500
    for table in (converter.memos.times, converter.memos.requests, converter.memos.scheduling,
                  converter.memos.owners):
        assert 0 < len(table) <= 50


def test_two_converters_share_nothing() -> None:
    first, second = Converter(StorageNames()), Converter(StorageNames())
    first.add(_pod(1), "a")
    assert len(first.memos.requests) == 1
    assert len(second.memos.requests) == 0


def test_equal_constraints_are_one_object_within_a_converter() -> None:
    converter = Converter(StorageNames())
    a, b = _pod(1), _pod(1)
    b["metadata"]["name"] = "other"  # type: ignore[index]
    converter.add(a, "s")
    converter.add(b, "s")
    first, second = converter.objects.pods
    assert first.scheduling is second.scheduling and first.owner is second.owner


def test_loading_leaves_the_collector_alone(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump_all([_pod(i) for i in range(5)]), encoding="utf-8")
    frozen = gc.get_freeze_count()
    enabled = gc.isenabled()
    load_snapshot([str(path)], StorageNames())
    assert gc.get_freeze_count() == frozen
    assert gc.isenabled() == enabled
