"""Template copies for simulated new nodes: every field of the template, a name and hostname of their own."""

from __future__ import annotations

import dataclasses

import pytest

from autoscaler.templates import TemplateNode, instantiate
from kube.model import Node
from kube.names import HOSTNAME_LABEL
from tests.factories import node, pod, taint

FULL = dataclasses.replace(
    node("tmpl", cpu="8", labels={"ng": "a", HOSTNAME_LABEL: "tmpl"}, taints=[taint("gpu", "true")],
         storage_free="100Gi", annotations={"example.com/a": "b"}),
    ready_since=5.0, created=3.0, provider_id="sim://a/tmpl", max_local_bytes=7, scale_down_disabled=True,
    disruption_cost=9, unschedulable=True)


@pytest.mark.parametrize("template", [
    pytest.param(node("bare"), id="defaults"),
    pytest.param(FULL, id="every-field-set"),
])
def test_copy_keeps_every_field_but_name_and_hostname(template: Node) -> None:
    daemon = pod("ds", cpu="100m", node=template.name, owner=("DaemonSet", "ds"))
    copy, pods = instantiate(TemplateNode("a", template, (daemon,), "cloud-template", True), "new-3")
    name = f"{template.name}-new-3"
    assert copy == dataclasses.replace(template, name=name, labels={**template.labels, HOSTNAME_LABEL: name})
    assert [(p.name, p.node_name) for p in pods] == [("ds-new-3", name)]


def test_copies_do_not_share_labels() -> None:
    tmpl = TemplateNode("a", FULL, (), "cloud-template", True)
    first, _ = instantiate(tmpl, "1")
    second, _ = instantiate(tmpl, "2")
    assert first.labels[HOSTNAME_LABEL] != second.labels[HOSTNAME_LABEL]
    assert FULL.labels[HOSTNAME_LABEL] == "tmpl"
