"""Kubernetes JSON -> snapshot model, once, at the edge.

Only the fields the decision reads are parsed. Bad input raises ``InputError``
naming the source, the object (``kind/namespace/name``) and the field; the CLI
turns it into one line on stderr and exit status 2. Converting ~200,000 objects
is on the critical path of ``plan``, so the pod converter avoids per-field
helpers on the common path and memoizes repeated values in bounded tables owned
by the ``Converter``.

Modules, by what they convert: ``errors`` (the errors and object names),
``fields`` (quantities, times), ``resources`` (resource lists, pod requests),
``selectors``, ``pods``, ``nodes``, ``storage`` (claims, volumes, classes, CSI),
``workloads`` (budgets, controllers, node groups) and ``converter`` (the facade).
"""

from kube.convert.converter import Converter
from kube.convert.errors import FieldError, InputError, Json, object_ref
from kube.convert.fields import parse_time
from kube.convert.memo import Memo, Memos
from kube.convert.nodes import convert_node
from kube.convert.pods import convert_pod, pod_scheduling
from kube.convert.resources import pod_requests, resource_list
from kube.convert.selectors import label_selector, node_selector, parse_label_selector_string
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
    NODE_GROUP_API,
    NODE_GROUP_KIND,
    convert_controller,
    convert_node_group,
    convert_pdb,
)

__all__ = [
    "NODE_GROUP_API",
    "NODE_GROUP_KIND",
    "Converter",
    "FieldError",
    "InputError",
    "Json",
    "Memo",
    "Memos",
    "convert_controller",
    "convert_csi_capacity",
    "convert_csi_driver",
    "convert_csi_node",
    "convert_node",
    "convert_node_group",
    "convert_pdb",
    "convert_pod",
    "convert_pv",
    "convert_pvc",
    "convert_storage_class",
    "convert_volume_attachment",
    "label_selector",
    "node_selector",
    "object_ref",
    "parse_label_selector_string",
    "parse_time",
    "pod_requests",
    "pod_scheduling",
    "resource_list",
]
