"""``Converter``: one object at a time into a ``ClusterObjects``, errors with file and object."""

from __future__ import annotations

from collections.abc import Callable

from kube.convert.errors import FieldError, InputError, Json, object_ref
from kube.convert.memo import Memos
from kube.convert.nodes import convert_node
from kube.convert.pods import convert_pod
from kube.convert.storage import (
    convert_csi_capacity,
    convert_csi_driver,
    convert_csi_node,
    convert_pv,
    convert_pvc,
    convert_storage_class,
)
from kube.convert.workloads import (
    CONTROLLER_KINDS,
    NODE_GROUP_KIND,
    convert_controller,
    convert_node_group,
    convert_pdb,
)
from kube.model import ClusterObjects
from kube.names import PRIORITY_CONFIGMAP, StorageNames

__all__ = ["Converter"]


class Converter:
    """Accumulates converted objects into a ``ClusterObjects``.

    Repeated values (requests, times, owners, scheduling constraints) are memoized
    in tables this converter owns, each bounded, so a long-lived converter does not grow.
    """

    def __init__(self, names: StorageNames) -> None:
        self.names = names
        self.objects = ClusterObjects()
        self.memos = Memos()
        self._handlers: dict[str, Callable[[Json], None]] = {
            "Pod": self._pod,
            "Node": self._node,
            "PersistentVolumeClaim": self._pvc,
            "PersistentVolume": self._pv,
            "StorageClass": self._sc,
            "PodDisruptionBudget": self._pdb,
            "CSIStorageCapacity": self._csi_capacity,
            "CSIDriver": self._csi_driver,
            "CSINode": self._csi_node,
            "Namespace": self._namespace,
            "ConfigMap": self._configmap,
            NODE_GROUP_KIND: self._node_group,
        }
        for kind in CONTROLLER_KINDS:
            self._handlers[kind] = self._controller

    def add(self, obj: object, source: str) -> None:
        """Convert one object; unknown kinds are ignored (a kubectl dump holds many)."""
        if not isinstance(obj, dict):
            raise InputError(source, "", "", f"expected a Kubernetes object, got {type(obj).__name__}")
        handler = self._handlers.get(obj.get("kind"))  # type: ignore[arg-type]
        if handler is None:
            return
        try:
            handler(obj)
        except FieldError as exc:
            raise InputError(source, object_ref(obj), exc.field, exc.message) from None
        except (TypeError, AttributeError, ValueError, KeyError) as exc:
            raise InputError(source, object_ref(obj), "", f"malformed object ({exc})") from None

    # --- handlers -------------------------------------------------------
    def _pod(self, obj: Json) -> None:
        self.objects.pods.append(convert_pod(obj, memos=self.memos))

    def _node(self, obj: Json) -> None:
        self.objects.nodes.append(convert_node(obj, self.names, self.objects.warnings, self.memos.times))

    def _pvc(self, obj: Json) -> None:
        pvc = convert_pvc(obj)
        self.objects.claims[(pvc.namespace, pvc.name)] = pvc

    def _pv(self, obj: Json) -> None:
        pv = convert_pv(obj)
        self.objects.volumes[pv.name] = pv

    def _sc(self, obj: Json) -> None:
        sc = convert_storage_class(obj)
        self.objects.storage_classes[sc.name] = sc

    def _pdb(self, obj: Json) -> None:
        self.objects.pdbs.append(convert_pdb(obj))

    def _csi_capacity(self, obj: Json) -> None:
        self.objects.csi_capacities.append(convert_csi_capacity(obj))

    def _csi_driver(self, obj: Json) -> None:
        driver = convert_csi_driver(obj)
        self.objects.csi_drivers[driver.name] = driver

    def _csi_node(self, obj: Json) -> None:
        node = convert_csi_node(obj)
        self.objects.csi_nodes[node.name] = node

    def _namespace(self, obj: Json) -> None:
        meta = obj.get("metadata") or {}
        self.objects.namespaces[str(meta.get("name"))] = meta.get("labels") or {}

    def _configmap(self, obj: Json) -> None:
        meta = obj.get("metadata") or {}
        if meta.get("name") == PRIORITY_CONFIGMAP:
            data = obj.get("data") or {}
            if "priorities" not in data:
                raise FieldError("data.priorities", "the priority expander's ConfigMap needs this key")
            self.objects.priority_config = str(data["priorities"])

    def _controller(self, obj: Json) -> None:
        controller = convert_controller(obj, self.memos)
        self.objects.controllers[(controller.kind, controller.namespace, controller.name)] = controller

    def _node_group(self, obj: Json) -> None:
        self.objects.node_groups.append(convert_node_group(obj, self.names, self.objects.warnings))
