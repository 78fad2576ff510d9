"""Template source 3, the scale set's tags, read as upstream reads them: a bad tag drops that tag only.

Transcribed from upstream's ``TestExtractLabelsFromTags``, ``TestExtractTaintsFromTags``,
``TestExtractAllocatableResourcesFromScaleSet`` and ``TestGetScaleSetOptions``, through
the provider over the Microsoft.Compute fake.
"""

from __future__ import annotations

import pytest

from cloudproviders.interface import GroupOptions
from kube.model import Taint
from kube.names import StorageNames
from tests.cloudproviders.azure.build import TAG, built, template
from tests.cloudproviders.fakes.azure import FakeAzure

LABEL = StorageNames().max_capacity_label


def test_labels_from_tags(fake: FakeAzure, sleeps: list[float]) -> None:
    labels = template(fake, sleeps, tags={
        TAG + "label_zip": "zap", "fizz": "buzz", "bip": "", TAG + "label_spam_egg": "foo",
        TAG + "label_foo~2bar": "egg", TAG + "label_": "no-key"}).labels
    assert (labels["zip"], labels["spam/egg"], labels["foo_bar"]) == ("zap", "foo", "egg")
    assert "" not in labels
    # Upstream puts every tag on the template as a label, raw.
    assert (labels["fizz"], labels["bip"], labels[TAG + "label_zip"]) == ("buzz", "", "zap")


def test_a_label_tag_overrides_a_generic_label(fake: FakeAzure, sleeps: list[float]) -> None:
    labels = template(fake, sleeps, zones=["1"], tags={TAG + "label_topology.kubernetes.io_zone": "custom"}).labels
    assert labels["topology.kubernetes.io/zone"] == "custom"
    assert labels["failure-domain.beta.kubernetes.io/zone"] == "westeurope-1"


@pytest.mark.parametrize(("tags", "taints"), [
    pytest.param({TAG + "taint_dedicated": "foo:NoSchedule", TAG + "taint_group": "bar:NoExecute",
                  TAG + "taint_app": "fizz:PreferNoSchedule",
                  TAG + "taint_k8s.io_testing_underscore_to_slash": "fizz:PreferNoSchedule", "bar": "baz",
                  TAG + "taint_blank": "", TAG + "taint_nosplit": "some_value"},
                 {Taint("dedicated", "foo", "NoSchedule"), Taint("group", "bar", "NoExecute"),
                  Taint("app", "fizz", "PreferNoSchedule"),
                  Taint("k8s.io/testing/underscore/to/slash", "fizz", "PreferNoSchedule")}, id="upstream-table"),
    pytest.param({TAG + "taint_dedicated": "foo:NoSchedule", TAG + "taint_odd": "b:Sometimes"},
                 {Taint("dedicated", "foo", "NoSchedule")}, id="unknown-effect-dropped-the-rest-kept"),
])
def test_taints_from_tags(fake: FakeAzure, sleeps: list[float], tags: dict[str, str], taints: set[Taint]) -> None:
    assert set(template(fake, sleeps, tags=tags).taints) == taints


def test_a_malformed_taint_tag_is_reported(fake: FakeAzure, sleeps: list[float],
                                           caplog: pytest.LogCaptureFixture) -> None:
    template(fake, sleeps, tags={TAG + "taint_odd": "b:Sometimes"})
    assert any(r.getMessage() == "template tag left out" and "taint_odd" in str(r.__dict__.get("error"))
               for r in caplog.records)


@pytest.mark.parametrize(("tags", "expected"), [
    pytest.param({TAG + "resources_cpu": "100m", TAG + "resources_memory": "100M",
                  TAG + "resources_ephemeral-storage": "20G", TAG + "resources_nvidia.com_Tesla-P100-PCIE": "4",
                  TAG + "resources_example.com~2dongle": "2"},
                 (100, 100_000_000, 20_000_000_000, (("example.com/dongle", 2), ("nvidia.com/Tesla-P100-PCIE", 4))),
                 id="upstream-table-tilde-two-is-a-slash-too"),
    pytest.param({TAG + "resources_memory": "much", TAG + "resources_cpu": "3"}, (3000, 16 * 2**30, 128 * 2**30, ()),
                 id="bad-quantity-dropped-the-rest-kept"),
])
def test_resources_from_tags(fake: FakeAzure, sleeps: list[float], tags: dict[str, str],
                             expected: tuple[int, int, int, tuple[tuple[str, int], ...]]) -> None:
    """(cpu millicores, memory, ephemeral storage, extended) after the tags."""
    capacity = template(fake, sleeps, tags=tags).capacity
    assert (capacity.cpu, capacity.memory, capacity.ephemeral_storage, capacity.extended) == expected


OPTION = TAG + "autoscaling-options_"


@pytest.mark.parametrize(("tags", "expected"), [
    pytest.param({OPTION + "scaledownutilizationthreshold": "0.2", OPTION + "scaledowngpuutilizationthreshold": "0.3",
                  OPTION + "scaledownunneededtime": "30M", OPTION + "scaledownunreadytime": "1H"},
                 GroupOptions(scale_down_utilization_threshold=0.2, scale_down_gpu_utilization_threshold=0.3,
                              scale_down_unneeded_seconds=1800.0, scale_down_unready_seconds=3600.0),
                 id="all-four-values-lower-cased"),
    pytest.param({OPTION + "scaledowngpuutilizationthreshold": "not-a-float", OPTION + "scaledownunneededtime": "1m",
                  OPTION + "scaledownunreadytime": "not-a-duration"},
                 GroupOptions(scale_down_unneeded_seconds=60.0), id="bad-values-dropped-the-rest-kept"),
    pytest.param({OPTION + "scaledownspeed": "3", OPTION + "scaledownunneededtime": "2M"},
                 GroupOptions(scale_down_unneeded_seconds=120.0), id="unknown-ignored-values-lower-cased"),
])
def test_options_from_tags(fake: FakeAzure, sleeps: list[float], tags: dict[str, str],
                           expected: GroupOptions) -> None:
    group = built(fake, sleeps, tags=tags)
    assert group.template_node() is not None
    assert group.group_options() == expected


def test_options_without_a_template(fake: FakeAzure, sleeps: list[float]) -> None:
    """Upstream's GetOptions reads the tags even when the VM size is unknown and no template is built."""
    group = built(fake, sleeps, "Standard_Z99_v9", tags={OPTION + "scaledownunneededtime": "3m"})
    assert group.template_node() is None
    assert group.group_options() == GroupOptions(scale_down_unneeded_seconds=180.0)


@pytest.mark.parametrize(("value", "max_local"), [
    pytest.param("lots", 1831054 * 2**20, id="not-bytes-dropped-size-nvme-kept"),
])
def test_max_capacity_label_tag(fake: FakeAzure, sleeps: list[float], value: str, max_local: int) -> None:
    node = template(fake, sleeps, "Standard_L8s_v3", tags={TAG + "label_" + LABEL.replace("/", "_"): value})
    assert node.max_local_bytes == max_local
    assert node.labels[LABEL] == str(max_local)
