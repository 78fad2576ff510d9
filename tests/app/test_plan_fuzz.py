"""Issue 8, item 17 as a property: random and randomly corrupted snapshots never end in a traceback.

``plan`` runs in-process on a snapshot built from ``badinput.base`` with a few fields
replaced by hostile values (wrong types, NaN, huge numbers, control characters,
non-ASCII digits), removed, or with objects duplicated; the answer is always a
decision (exit 0) or one line on stderr (exit 2), never an exception.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.app.badinput import NOW_FLAG, Run, base, dump

SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["", "-1", "1e9999999999", "0.5", "1Gi", "-5Gi", "\u0661\u0662", "true", "false", "NoSchedule",
                     "In", "Exists", "Always", "nan", "2026-05-01T00:00:00Z", "yesterday", "a\nb\x1b[0m", "w1",
                     "default", "general", "rok"]),
    st.text(max_size=8),
)
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["kind", "name", "cpu", "key", "x"]), inner,
                                                 max_size=3)), max_leaves=6)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            out.extend(_paths(item, (*prefix, key)))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out.extend(_paths(item, (*prefix, i)))
    return out


#: Fields the converters read, to add where they are absent.
KEYS = ["metadata", "spec", "status", "labels", "annotations", "name", "namespace", "kind", "items", "hostPort",
        "containerPort", "tolerations", "affinity", "nodeSelector", "topologySpreadConstraints", "initContainers",
        "overhead", "limits", "requests", "volumes", "emptyDir", "sizeLimit", "hostPath", "ephemeral", "claimRef",
        "nodeAffinity", "allowedTopologies", "selector", "matchExpressions", "template", "nodes", "targetSize",
        "deletionTimestamp", "conditions", "taints", "unschedulable", "rok.arrikto.com/capacity", "priority"]


def _at(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


def _corrupt(objects: list[Any], data: st.DataObject) -> None:
    target = data.draw(st.integers(0, len(objects) - 1), label="object")
    action = data.draw(st.integers(0, 9), label="action")
    if action == 0:
        objects.append(json.loads(json.dumps(objects[target])))  # a duplicate
        return
    if action <= 3:
        maps = [p for p in [(), *_paths(objects[target])] if isinstance(_at(objects[target], p), dict)]
        where = _at(objects[target], data.draw(st.sampled_from(maps), label="map"))
        where[data.draw(st.sampled_from(KEYS), label="key")] = data.draw(VALUES, label="added")
        return
    paths = _paths(objects[target])
    path = data.draw(st.sampled_from(paths), label="path")
    parent = objects[target]
    for step in path[:-1]:
        parent = parent[step]
    if isinstance(parent, dict) and data.draw(st.booleans(), label="delete"):
        del parent[path[-1]]
    else:
        parent[path[-1]] = data.draw(VALUES, label="value")


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), corruptions=st.integers(0, 3), as_json=st.booleans())
def test_plan_never_raises(cli: Run, tmp_path: Path, data: st.DataObject, corruptions: int, as_json: bool) -> None:
    objects: list[Any] = base()
    for _ in range(corruptions):
        _corrupt(objects, data)
    path = tmp_path / ("snapshot.json" if as_json else "snapshot.yaml")
    if as_json:
        path.write_text(json.dumps({"kind": "List", "items": objects}), encoding="utf-8")
    else:
        path.write_text(dump(objects), encoding="utf-8")
    code, out, err = cli(["plan", str(path), NOW_FLAG])
    assert code in (0, 2), err
    if code == 2:
        assert out == "" and err.count("\n") == 1 and err.startswith("autoscaler plan: "), err
        assert "unreadable" not in err, err
    else:
        assert json.loads(out)["version"] == 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(alphabet=st.sampled_from(list("{}[]:,-&*! \n\"'abk0123.eE")), max_size=80))
def test_random_text_never_raises(cli: Run, tmp_path: Path, text: str) -> None:
    path = tmp_path / "snapshot.yaml"
    path.write_text(text, encoding="utf-8")
    code, out, err = cli(["plan", str(path), NOW_FLAG])
    assert code in (0, 2), err
    assert code == 0 or (out == "" and err.count("\n") == 1), err


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), corruptions=st.integers(0, 3))
def test_typed_decoding_equals_the_dict_path(tmp_path: Path, data: st.DataObject, corruptions: int) -> None:
    """Issue 11, item 2: a corrupted JSON List converts (or fails) the same on the typed and the dict path."""
    from kube.convert import InputError
    from kube.load import load_objects
    from kube.names import StorageNames
    from kube.typedload import try_load

    objects: list[Any] = base()
    for _ in range(corruptions):
        _corrupt(objects, data)
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps({"kind": "List", "items": objects}), encoding="utf-8")
    try:
        plain: object = load_objects([str(path)], StorageNames())
    except InputError as exc:
        plain = str(exc)
    typed = try_load([str(path)], StorageNames())
    if isinstance(plain, str):
        assert typed is None, plain
    elif typed is not None:
        assert typed == plain
