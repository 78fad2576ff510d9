"""Tripwire: every key the pod, node, PV and claim converters read is declared by a typed decoder.

``kube.typedload``, ``kube.typedpods``, ``kube.typednodes`` and ``kube.typedvolumes`` decode Pods, Nodes, PVs
and claims into Structs that declare only the fields the
converters read; a key the converters start reading that no Struct declares would be
read as absent on the typed path, silently. This test lists the string keys the
converter modules look up (``.get("key")`` and ``["key"]``) and requires each to be a
field of a typed Struct, or one of the keys known to live inside a subtree the Structs
keep whole (declared ``Any``: affinity terms, tolerations, volumes, resources, ...).
Adding a read to a converter therefore means deciding where it lives here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import msgspec

from kube import typedload, typednodes, typedpods, typedvolumes

CONVERTERS = ("pods.py", "nodes.py", "resources.py")
#: Functions of other converter modules that read a typed kind (PVs and claims).
CONVERTER_FUNCTIONS = {"storage.py": ("convert_pv", "convert_pvc", "_access_modes", "_class_name")}

#: Keys read inside subtrees the Structs keep whole (their parent field is ``Any``).
INSIDE_WHOLE_SUBTREES = frozenset({
    # resources, overhead
    "requests", "limits", "cpu", "memory",
    # ports
    "containerPort", "hostPort", "hostIP", "protocol",
    # affinity
    "nodeAffinity", "podAffinity", "podAntiAffinity",
    # tolerations, taints
    "key", "operator", "value", "effect", "tolerationSeconds",
    # topology spread
    "maxSkew", "topologyKey", "whenUnsatisfiable", "minDomains", "labelSelector", "matchLabelKeys",
    # volumes
    "persistentVolumeClaim", "claimName", "hostPath", "emptyDir", "medium", "sizeLimit", "ephemeral",
    # conditions
    "type", "reason", "lastTransitionTime",
    # owner references
    "controller",
    # a PV's nodeAffinity (kept as bytes), capacity and a claim's requests (maps kept whole)
    "required", "storage",
})


def _trees() -> list[ast.AST]:
    root = Path(typedload.__file__).parent / "convert"
    trees: list[ast.AST] = [ast.parse((root / name).read_text(encoding="utf-8")) for name in CONVERTERS]
    for name, functions in CONVERTER_FUNCTIONS.items():
        module = ast.parse((root / name).read_text(encoding="utf-8"))
        trees.extend(node for node in module.body if isinstance(node, ast.FunctionDef) and node.name in functions)
    return trees


def _read_keys() -> set[str]:
    keys: set[str] = set()
    for tree in _trees():
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                    and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                keys.add(node.args[0].value)
            elif (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant)
                  and isinstance(node.slice.value, str)):
                keys.add(node.slice.value)
    return keys


def _declared() -> set[str]:
    fields: set[str] = set()
    for module in (typedload, typednodes, typedpods, typedvolumes):
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, msgspec.Struct):
                fields.update(value.__struct_fields__)
    return fields


def test_every_key_the_converters_read_is_declared_or_inside_a_whole_subtree() -> None:
    missing = _read_keys() - _declared() - INSIDE_WHOLE_SUBTREES
    assert not missing, (f"converter keys no typed Struct declares: {sorted(missing)}; declare them in "
                         "kube/typedload.py (or list them here if they live inside a subtree kept whole)")
