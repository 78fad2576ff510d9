"""``Converter``: one object at a time into a ``ClusterObjects``, errors with file and object."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kube.convert.errors import FieldError, InputError, Json, object_ref
from kube.convert.fields import as_map, as_str, describe, name_of, parse_time, string_map
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
    convert_volume_attachment,
)
from kube.convert.workloads import (
    CONTROLLER_KINDS,
    NODE_GROUP_KIND,
    convert_controller,
    convert_node_group,
    convert_pdb,
)
from kube.featuregates import FeatureGates
from kube.model import ClusterObjects, Node, PersistentVolume, PersistentVolumeClaim, Pod
from kube.names import PRIORITY_CONFIGMAP, StorageNames

__all__ = ["Converter"]

#: Kinds whose namespace defaults to ``default`` (the others are cluster-scoped, or
#: namespaced without a default as CSIStorageCapacity in the model).
_CHECKED_BY_CONVERTER = frozenset(("Pod", "Node"))
_NAMESPACED = frozenset(("Pod", "PersistentVolumeClaim", "PodDisruptionBudget", "ConfigMap", *CONTROLLER_KINDS))


class Converter:
    """Accumulates converted objects into a ``ClusterObjects``.

    Repeated values (requests, times, owners, scheduling constraints) are memoized
    in tables this converter owns, each bounded, so a long-lived converter does not
    grow. An object that appears twice (same kind, namespace and name) is read once
    when the copies are identical (with a warning), and is an error naming both places
    when they differ: keeping either copy would be a guess.
    """

    def __init__(self, names: StorageNames, gates: FeatureGates | None = None) -> None:
        self.names = names
        self.objects = ClusterObjects()
        self.memos = Memos(gates=gates or FeatureGates())
        #: What was read leniently and already warned about (one warning per kind of thing).
        self._noted: set[str] = set()
        self._source = ""
        #: Objects read per source, to name where each copy of a duplicate is.
        self._counts: dict[str, int] = {}
        #: The current object's number in its source (0: added by a typed path, unnumbered).
        self._position = 0
        #: Refuse every second copy, identical or not (``kube.typedload`` sets it: the
        #: ordinary path then reads the input, merges identical copies or names both).
        self.refuse_copies = False
        #: identity -> (source and position it was first read at, what a copy is compared with).
        self._seen: dict[tuple[str, str, str], tuple[str, int, object]] = {}
        #: Whether ``add`` checks and remembers identities (False for watch streams).
        self._unique_only = True
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
            "VolumeAttachment": self._volume_attachment,
            "Namespace": self._namespace,
            "ConfigMap": self._configmap,
            NODE_GROUP_KIND: self._node_group,
        }
        for kind in CONTROLLER_KINDS:
            self._handlers[kind] = self._controller

    def add(self, obj: object, source: str, *, unique: bool = True) -> None:
        """Convert one object; unknown kinds are ignored (a kubectl dump holds many).

        ``unique=False`` is for a stream of versions of the same objects (the live
        adapter's watch events): no duplicate check, and nothing is remembered per
        object, so a converter that lives for weeks does not grow.
        """
        if not isinstance(obj, dict):
            raise InputError(source, "", "", f"expected a Kubernetes object (a map), got {describe(obj)}")
        kind = obj.get("kind")
        if type(kind) is not str or not kind:
            field_error = FieldError("kind", "required" if kind is None or kind == "" else
                                     f"expected a string, got {describe(kind)}")
            raise InputError(source, object_ref(obj), field_error.field, field_error.message)
        handler = self._handlers.get(kind)
        if handler is None:
            return
        self._counts[source] = self._position = self._counts.get(source, 0) + 1
        self._source = source
        self._unique_only = unique
        try:
            if kind not in _CHECKED_BY_CONVERTER and not self._unique(obj, kind, self._source):
                return  # an identical copy of an object already read
            handler(obj)
        except FieldError as exc:
            raise InputError(source, object_ref(obj), exc.field, exc.message) from None
        except (TypeError, AttributeError, ValueError, KeyError, OverflowError, RecursionError) as exc:
            # A safety net only: every field reader raises FieldError on bad input.
            raise InputError(source, object_ref(obj), "", f"unreadable object ({type(exc).__name__})") from None

    def add_pod(self, pod: Pod) -> None:
        """A pod converted elsewhere (``kube.typedpods``); the caller looks for duplicates, all at
        once (``kube.typedload``: one set of refs is cheaper than this converter's per-object check)."""
        self.objects.pods.append(pod)

    def add_node(self, node: Node, source: str) -> None:
        """A node converted elsewhere (``kube.typednodes``), checked for duplicates as ``add`` does."""
        if self._add_identity("Node", "", node.name, source, node):
            self.objects.nodes.append(node)

    def add_claim(self, claim: PersistentVolumeClaim, source: str) -> None:
        """A claim converted elsewhere (``kube.typedvolumes``), checked for duplicates as ``add`` does."""
        self._add_identity("PersistentVolumeClaim", claim.namespace, claim.name, source, claim)
        self.objects.claims[(claim.namespace, claim.name)] = claim

    def add_volume(self, volume: PersistentVolume, namespace: str, source: str) -> None:
        """A PV converted elsewhere; ``namespace`` as its metadata says (the duplicate check's key)."""
        self._add_identity("PersistentVolume", namespace, volume.name, source, volume)
        self.objects.volumes[volume.name] = volume

    def _add_identity(self, kind: str, namespace: str, name: str, source: str, content: object) -> bool:
        self._unique_only = True
        self._position = 0  # converted elsewhere: no position in the source
        try:
            return self._once(kind, namespace, name, source, content)
        except FieldError as exc:
            raise InputError(source, f"{kind}/{namespace + '/' if namespace else ''}{name}", exc.field,
                             exc.message) from None

    def _unique(self, obj: Json, kind: str, source: str) -> bool:
        api_version = obj.get("apiVersion")
        if api_version is not None and type(api_version) is not str:
            raise FieldError("apiVersion", f"expected a string, got {describe(api_version)}")
        meta = as_map(obj.get("metadata"), "metadata")
        name = name_of(meta)
        string_map(meta.get("labels"), "metadata.labels")
        string_map(meta.get("annotations"), "metadata.annotations")
        parse_time(meta.get("creationTimestamp"), "metadata.creationTimestamp", self.memos.times)
        namespace = as_str(meta.get("namespace"), "metadata.namespace")
        if not namespace and kind in _NAMESPACED:
            namespace = "default"
        return self._once(kind, namespace, name, source, obj)

    def _once(self, kind: str, namespace: str, name: str, source: str, content: object) -> bool:
        """True the first time an identity is seen; False for an identical copy (merged, one warning).

        ``content`` is what the copies are compared by: the raw object, or for pods and
        nodes (checked after conversion) the model. Copies that differ are an error
        naming both places: keeping either would be a guess.
        """
        if not self._unique_only:
            return True
        key = (kind, namespace, name)
        first = self._seen.get(key)
        if first is None:
            self._seen[key] = (source, self._position, content)
            return True
        ref = f"{namespace + '/' if namespace else ''}{name}"
        if self.refuse_copies:
            raise FieldError("metadata.name", f"{kind} {ref} appears twice")
        where = f"in {_place(first[0], first[1])} and in {_place(source, self._position)}"
        if first[2] == content:
            # ``kubectl get all,ds`` lists a DaemonSet twice, for one.
            self.note(f"{kind}/{ref}", [("metadata.name", f"listed twice ({where}); the copies are identical "
                                                          "and read as one")])
            return False
        raise FieldError("metadata.name", f"{kind} {ref} appears twice ({where}) and the copies differ")

    # --- handlers -------------------------------------------------------
    # Pods and nodes check their own metadata (the hot path), then their identity.
    def _pod(self, obj: Json) -> None:
        pod = convert_pod(obj, memos=self.memos)
        if not self._once("Pod", pod.namespace, pod.name, self._source, pod):
            return
        self.objects.pods.append(pod)
        if pod.scheduling.notes:
            self.note(f"Pod/{pod.namespace}/{pod.name}", pod.scheduling.notes)

    def note(self, ref: str, notes: Iterable[tuple[str, str]]) -> None:
        """One warning per thing read leniently (a value a newer API server may hold), naming the first object."""
        for field, what in notes:
            if what in self._noted:
                continue
            self._noted.add(what)
            self.objects.warnings.append(f"{ref}: {field}: {what} (warned once; objects like it are read alike)")

    def _node(self, obj: Json) -> None:
        node = convert_node(obj, self.names, self.objects.warnings, self.memos.times)
        if self._once("Node", "", node.name, self._source, node):
            self.objects.nodes.append(node)

    def _pvc(self, obj: Json) -> None:
        notes: list[tuple[str, str]] = []
        pvc = convert_pvc(obj, notes)
        self.objects.claims[(pvc.namespace, pvc.name)] = pvc
        self.note(f"PersistentVolumeClaim/{pvc.namespace}/{pvc.name}", notes)

    def _pv(self, obj: Json) -> None:
        notes: list[tuple[str, str]] = []
        pv = convert_pv(obj, notes)
        self.objects.volumes[pv.name] = pv
        self.note(f"PersistentVolume/{pv.name}", notes)

    def _sc(self, obj: Json) -> None:
        notes: list[tuple[str, str]] = []
        sc = convert_storage_class(obj, notes)
        self.objects.storage_classes[sc.name] = sc
        self.note(f"StorageClass/{sc.name}", notes)

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

    def _volume_attachment(self, obj: Json) -> None:
        self.objects.volume_attachments.append(convert_volume_attachment(obj))

    def _namespace(self, obj: Json) -> None:
        meta = as_map(obj.get("metadata"), "metadata")
        self.objects.namespaces[name_of(meta)] = string_map(meta.get("labels"), "metadata.labels")

    def _configmap(self, obj: Json) -> None:
        meta = as_map(obj.get("metadata"), "metadata")
        if name_of(meta) == PRIORITY_CONFIGMAP:
            data = string_map(obj.get("data"), "data")
            if "priorities" not in data:
                raise FieldError("data.priorities", "the priority expander's ConfigMap needs this key")
            self.objects.priority_config = data["priorities"]

    def _controller(self, obj: Json) -> None:
        notes: list[tuple[str, str]] = []
        controller = convert_controller(obj, self.memos, notes)
        self.objects.controllers[(controller.kind, controller.namespace, controller.name)] = controller
        self.note(f"{controller.kind}/{controller.namespace}/{controller.name}", notes)

    def _node_group(self, obj: Json) -> None:
        self.objects.node_groups.append(convert_node_group(obj, self.names, self.objects.warnings))


def _place(source: str, position: int) -> str:
    """Where an object was read: its source, and its number there when known."""
    return f"{source} (object {position})" if position else source
