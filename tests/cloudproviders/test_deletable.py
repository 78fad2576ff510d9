"""The pre-delete checks every provider shares (``cloudproviders/deletable.py``)."""

from __future__ import annotations

import dataclasses

import pytest

from cloudproviders.deletable import check_deletable
from cloudproviders.interface import CloudError
from kube.model import Node
from tests.factories import node


def nodes(*ids: str) -> list[Node]:
    return [dataclasses.replace(node(f"n-{i}"), provider_id=i) for i in ids]


@pytest.mark.parametrize(("ids", "members_after_reload", "complaint"), [
    pytest.param(("a", "b"), None, None, id="fine"),
    pytest.param(("a", "a"), None, "nodes repeated", id="repeated"),
    pytest.param(("a", "z"), {"a", "b", "c", "z"}, None, id="newer-than-the-cache"),
    pytest.param(("a", "z"), {"a", "b", "c"}, "is not one of its instances", id="stranger"),
    pytest.param(("a", "b", "c"), None, "goes below min size 1", id="below-min"),
])
def test_check_deletable(ids: tuple[str, ...], members_after_reload: set[str] | None, complaint: str | None) -> None:
    members = {"a", "b", "c"}
    reloads: list[int] = []

    def reload() -> None:
        reloads.append(1)
        members.update(members_after_reload or ())

    def check() -> None:
        check_deletable("MIG web", nodes(*ids), list(ids), is_member=lambda k: k in members, target=3, min_size=1,
                        reload=reload)

    if complaint is None:
        check()
    else:
        with pytest.raises(CloudError, match=complaint) as caught:
            check()
        assert str(caught.value).startswith("MIG web: ")
    assert len(reloads) == (1 if members_after_reload is not None else 0)
