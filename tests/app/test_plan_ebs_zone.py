"""``plan`` on ``examples/ebs-zonal-volume.yaml``: a pod on a zonal EBS volume scales up its zone's group from zero.

The node groups' templates carry the labels the AWS provider builds (``topology.ebs.csi.aws.com/zone``
beside ``topology.kubernetes.io/zone``); the volume's zone decides which group grows, and a
node of another zone with room does not help.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.app.badinput import NOW_FLAG, Run

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ebs-zonal-volume.yaml"


def snapshot(tmp_path: Path, volume_zone: str) -> str:
    docs = list(yaml.safe_load_all(EXAMPLE.read_text()))
    for doc in docs:
        if doc["kind"] == "PersistentVolume":
            term = doc["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]
            term["matchExpressions"][0]["values"] = [volume_zone]
    path = tmp_path / "snapshot.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


@pytest.mark.parametrize(("volume_zone", "increases"), [
    pytest.param("us-east-1b", [{"nodeGroup": "ebs-us-east-1b", "delta": 1, "newSize": 1}], id="other-zone-from-zero"),
    pytest.param("us-east-1a", [], id="own-zone-node-has-room"),
])
def test_the_volume_zone_decides_the_group(cli: Run, tmp_path: Path, volume_zone: str,
                                           increases: list[dict[str, object]]) -> None:
    code, out, err = cli(["plan", snapshot(tmp_path, volume_zone), NOW_FLAG])
    assert (code, err) == (0, "")
    assert json.loads(out)["scaleUp"]["increases"] == increases


def test_a_volume_in_a_zone_without_a_group_scales_nothing(cli: Run, tmp_path: Path) -> None:
    code, out, _ = cli(["plan", snapshot(tmp_path, "us-east-1c"), NOW_FLAG])
    assert code == 0
    up = json.loads(out)["scaleUp"]
    assert up["increases"] == [] and up["stillUnschedulable"]
