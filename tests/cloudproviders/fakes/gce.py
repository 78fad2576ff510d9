"""A fake of the compute v1 REST API subset the GCE provider uses, with the API's JSON shapes.

instanceGroupManagers get/list/resize/deleteInstances/listManagedInstances,
instanceTemplates get (global and regional), machineTypes get, zoneOperations get. Operations finish on the
first poll (``pending_polls`` controls it). Faults are injected per operation
(``fail_next("increase"|"delete"|<any route name>, kind)``) and returned at the wire:
HTTP errors for throttle/server/notfound, failed operations for capacity/quota.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from tests.cloudproviders.fakes.http import FakeServer, Request, Response

__all__ = ["FakeGce", "FakeMig"]

BASE = "https://www.googleapis.com/compute/v1"
_P = r"/compute/v1/projects/(?P<project>[^/]+)"
_MIG = _P + r"/zones/(?P<zone>[^/]+)/instanceGroupManagers/(?P<mig>[^/]+)"

_HTTP_FAULTS = {
    "throttle": (429, "rateLimitExceeded", "Rate Limit Exceeded", "RESOURCE_EXHAUSTED"),
    "server": (503, "backendError", "Backend Error", "UNAVAILABLE"),
    "notfound": (404, "notFound", "The resource was not found", "NOT_FOUND"),
}
_OPERATION_FAULTS = {
    "capacity": ("ZONE_RESOURCE_POOL_EXHAUSTED",
                 "The zone does not have enough resources available to fulfill the request."),
    "quota": ("QUOTA_EXCEEDED", "Quota 'CPUS' exceeded.  Limit: 24.0 in region europe-west4."),
}


@dataclass
class FakeInstance:
    name: str
    action: str = "NONE"
    status: str = "RUNNING"
    errors: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class FakeMig:
    project: str
    zone: str
    name: str
    template: str
    instances: list[FakeInstance] = field(default_factory=list)
    target: int = 0
    #: Set: new instances stay CREATING with this lastAttempt error code (a stock-out).
    stockout: str | None = None
    template_region: str | None = None


class FakeGce(FakeServer):
    def __init__(self) -> None:
        super().__init__()
        self.migs: dict[tuple[str, str], FakeMig] = {}
        self.templates: dict[str, dict[str, Any]] = {}
        self.machine_types: dict[str, dict[str, Any]] = {}
        self.operations: dict[str, dict[str, Any]] = {}
        self.faults: dict[str, list[str]] = {}
        #: Any HTTP error, or any failed-operation code, for the next "increase"/"delete".
        self.raw_faults: dict[str, list[Response]] = {}
        self.operation_faults: dict[str, list[tuple[str, str]]] = {}
        #: zoneOperations.get calls an operation answers RUNNING before DONE.
        self.pending_polls = 1
        #: Page size of listManagedInstances and instanceGroupManagers.list.
        self.page_size = 500
        self.retry_after = "0"
        self._ids = itertools.count(1000)
        self.route("GET", _MIG, self._get_mig)
        self.route("GET", _P + r"/zones/(?P<zone>[^/]+)/instanceGroupManagers", self._list_migs)
        self.route("POST", _MIG + "/resize", self._resize)
        self.route("POST", _MIG + "/deleteInstances", self._delete_instances)
        self.route("POST", _MIG + "/listManagedInstances", self._list_instances)
        self.route("GET", _P + r"/global/instanceTemplates/(?P<name>[^/]+)", self._get_template)
        self.route("GET", _P + r"/regions/(?P<region>[^/]+)/instanceTemplates/(?P<name>[^/]+)", self._get_template)
        self.route("GET", _P + r"/zones/(?P<zone>[^/]+)/machineTypes/(?P<name>[^/]+)", self._get_machine_type)
        self.route("GET", _P + r"/zones/(?P<zone>[^/]+)/operations/(?P<name>[^/]+)", self._get_operation)

    # --- set-up ------------------------------------------------------------------------

    def add_machine_type(self, name: str, cpus: int, memory_mb: int, zone: str = "europe-west4-a",
                         project: str = "proj") -> None:
        self.machine_types[name] = {
            "kind": "compute#machineType", "id": str(next(self._ids)), "name": name, "guestCpus": cpus,
            "memoryMb": memory_mb, "zone": zone, "isSharedCpu": False, "maximumPersistentDisks": 128,
            "selfLink": f"{BASE}/projects/{project}/zones/{zone}/machineTypes/{name}"}

    def add_template(self, name: str, machine_type: str, *, local_ssds: int = 0, kube_env: str | None = None,
                     project: str = "proj", accelerators: int = 0, accelerator_type: str = "nvidia-tesla-t4",
                     boot_disk_gb: int = 100, **overrides: Any) -> None:
        """A template; ``overrides`` replace top-level ``properties`` fields (``metadata=None`` drops it)."""
        disks: list[dict[str, Any]] = [{"type": "PERSISTENT", "boot": True, "mode": "READ_WRITE", "autoDelete": True,
                                        "initializeParams": {"diskSizeGb": str(boot_disk_gb),
                                                             "diskType": "pd-balanced"}}]
        disks += [{"type": "SCRATCH", "interface": "NVME", "autoDelete": True,
                   "initializeParams": {"diskType": "local-ssd", "diskSizeGb": "375"}} for _ in range(local_ssds)]
        properties: dict[str, Any] = {"machineType": machine_type, "disks": disks,
                                      "metadata": {"kind": "compute#metadata", "items": []}}
        if kube_env is not None:
            properties["metadata"]["items"].append({"key": "kube-env", "value": kube_env})
        if accelerators:
            properties["guestAccelerators"] = [{"acceleratorType": accelerator_type,
                                                "acceleratorCount": accelerators}]
        properties.update(overrides)
        properties = {k: v for k, v in properties.items() if v is not None}
        self.templates[name] = {"kind": "compute#instanceTemplate", "id": str(next(self._ids)), "name": name,
                                "properties": properties,
                                "selfLink": f"{BASE}/projects/{project}/global/instanceTemplates/{name}"}

    def add_mig(self, name: str, template: str, size: int = 0, zone: str = "europe-west4-a",
                project: str = "proj", *, template_region: str | None = None) -> FakeMig:
        """A MIG; ``template_region``: its template is a regional one (served from the same table)."""
        mig = FakeMig(project, zone, name, template, template_region=template_region)
        self.migs[(zone, name)] = mig
        self._grow(mig, size)
        for inst in mig.instances:  # the group's first members are up already
            inst.action, inst.status = "NONE", "RUNNING"
        return mig

    def fail_next(self, operation: str, kind: str) -> None:
        """The next ``operation`` ("increase", "delete", or a route name like "get") fails once with ``kind``."""
        if kind not in _HTTP_FAULTS and kind not in _OPERATION_FAULTS:
            raise ValueError(f"unknown fault kind {kind!r}")
        with self.lock:
            self.faults.setdefault(operation, []).append(kind)

    def fail_next_http(self, operation: str, status: int, reason: str, message: str) -> None:
        """The next ``operation`` answers this HTTP error (GCE's error body, ``errors[].reason``)."""
        with self.lock:
            self.raw_faults.setdefault(operation, []).append(Response(status, {"error": {
                "code": status, "message": message, "errors": [{"message": message, "reason": reason}]}}))

    def fail_next_operation(self, operation: str, code: str, message: str) -> None:
        """The next ``operation`` is accepted, and its zone operation finishes with this error."""
        with self.lock:
            self.operation_faults.setdefault(operation, []).append((code, message))

    def settle(self) -> None:
        """Instances that are being created without error come up (RUNNING)."""
        with self.lock:
            for mig in self.migs.values():
                for inst in mig.instances:
                    if inst.action == "CREATING" and not inst.errors:
                        inst.action, inst.status = "NONE", "RUNNING"

    # --- helpers -------------------------------------------------------------------------

    def _fault(self, operation: str) -> str | None:
        queue = self.faults.get(operation)
        return queue.pop(0) if queue else None

    def _http_error(self, kind: str) -> Response:
        status, reason, message, grpc = _HTTP_FAULTS[kind]
        headers = {"Retry-After": self.retry_after} if status == 429 else {}
        return Response(status, {"error": {"code": status, "message": message, "status": grpc, "errors": [
            {"message": message, "domain": "global" if status != 429 else "usageLimits", "reason": reason}]}},
            headers)

    def _grow(self, mig: FakeMig, size: int) -> None:
        while len(mig.instances) < size:
            name = f"{mig.name}-{next(self._ids):04x}"
            if mig.stockout:
                mig.instances.append(FakeInstance(name, "CREATING", "", [(mig.stockout, f"{mig.stockout}: zone "
                                                                          f"{mig.zone} has no capacity")]))
            else:
                # As on GCE, a new instance is listed at once, CREATING, until it is up (settle()).
                mig.instances.append(FakeInstance(name, "CREATING", "PROVISIONING"))
        mig.target = size

    def _mig(self, request: Request) -> FakeMig | None:
        return self.migs.get((request.match["zone"], request.match["mig"]))

    def _mig_json(self, mig: FakeMig) -> dict[str, Any]:
        zone_url = f"{BASE}/projects/{mig.project}/zones/{mig.zone}"
        creating = sum(1 for i in mig.instances if i.action == "CREATING")
        template_scope = f"regions/{mig.template_region}" if mig.template_region else "global"
        return {"kind": "compute#instanceGroupManager", "id": str(abs(hash(mig.name)) % 10**12), "name": mig.name,
                "zone": zone_url, "baseInstanceName": mig.name, "targetSize": mig.target,
                "instanceTemplate": f"{BASE}/projects/{mig.project}/{template_scope}/instanceTemplates/{mig.template}",
                "instanceGroup": f"{zone_url}/instanceGroups/{mig.name}",
                "currentActions": {"none": len(mig.instances) - creating, "creating": creating},
                "status": {"isStable": creating == 0},
                "selfLink": f"{zone_url}/instanceGroupManagers/{mig.name}"}

    def _operation(self, mig: FakeMig, kind: str, error: tuple[str, str] | None = None) -> Response:
        name = f"operation-{next(self._ids)}"
        zone_url = f"{BASE}/projects/{mig.project}/zones/{mig.zone}"
        op: dict[str, Any] = {"kind": "compute#operation", "id": str(next(self._ids)), "name": name,
                              "zone": zone_url, "operationType": f"compute.instanceGroupManagers.{kind}",
                              "targetLink": f"{zone_url}/instanceGroupManagers/{mig.name}",
                              "status": "RUNNING", "progress": 0, "selfLink": f"{zone_url}/operations/{name}",
                              "_polls": self.pending_polls}
        if error is not None:
            op["_error"] = {"errors": [{"code": error[0], "message": error[1]}]}
        self.operations[name] = op
        if self.pending_polls == 0:
            self._finish(op)
        return Response(200, self._public(op))

    def _finish(self, op: dict[str, Any]) -> None:
        op["status"], op["progress"] = "DONE", 100
        if "_error" in op:
            op["error"] = op.pop("_error")

    @staticmethod
    def _public(op: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in op.items() if not k.startswith("_")}

    def _page(self, items: list[Any], request: Request, key: str, kind: str) -> Response:
        start = int(request.query.get("pageToken") or 0)
        body: dict[str, Any] = {key: items[start:start + self.page_size]}
        if kind:
            body["kind"] = kind
        if start + self.page_size < len(items):
            body["nextPageToken"] = str(start + self.page_size)
        return Response(200, body)

    # --- handlers ----------------------------------------------------------------------

    def _get_mig(self, request: Request) -> Response:
        if (kind := self._fault("get")) is not None:
            return self._http_error(kind)
        mig = self._mig(request)
        return Response(200, self._mig_json(mig)) if mig else self._http_error("notfound")

    def _list_migs(self, request: Request) -> Response:
        if (kind := self._fault("list")) is not None:
            return self._http_error(kind)
        items = [self._mig_json(m) for m in self.migs.values() if m.zone == request.match["zone"]]
        return self._page(items, request, "items", "compute#instanceGroupManagerList")

    def _resize(self, request: Request) -> Response:
        mig = self._mig(request)
        if self.raw_faults.get("increase"):
            return self.raw_faults["increase"].pop(0)
        kind = self._fault("increase")
        if kind in _HTTP_FAULTS:
            return self._http_error(kind)
        if mig is None:
            return self._http_error("notfound")
        if kind is not None:
            return self._operation(mig, "resize", _OPERATION_FAULTS[kind])
        if self.operation_faults.get("increase"):
            return self._operation(mig, "resize", self.operation_faults["increase"].pop(0))
        size = int(request.query["size"])
        if size < len(mig.instances):
            del mig.instances[size:]
        self._grow(mig, size)
        return self._operation(mig, "resize")

    def _delete_instances(self, request: Request) -> Response:
        mig = self._mig(request)
        if self.raw_faults.get("delete"):
            return self.raw_faults["delete"].pop(0)
        kind = self._fault("delete")
        if kind in _HTTP_FAULTS:
            return self._http_error(kind)
        if mig is None:
            return self._http_error("notfound")
        if kind is not None:
            return self._operation(mig, "deleteInstances", _OPERATION_FAULTS[kind])
        if self.operation_faults.get("delete"):
            return self._operation(mig, "deleteInstances", self.operation_faults["delete"].pop(0))
        names = [url.rsplit("/", 1)[-1] for url in request.body["instances"]]
        known = {i.name for i in mig.instances}
        if not set(names) <= known:
            return Response(400, {"error": {"code": 400, "message": "Instance is not a member of the group",
                                            "errors": [{"reason": "invalid", "message": "not a member"}]}})
        mig.instances = [i for i in mig.instances if i.name not in names]
        mig.target -= len(names)
        return self._operation(mig, "deleteInstances")

    def _list_instances(self, request: Request) -> Response:
        if (kind := self._fault("listManagedInstances")) is not None:
            return self._http_error(kind)
        mig = self._mig(request)
        if mig is None:
            return self._http_error("notfound")
        items = []
        for inst in mig.instances:
            item: dict[str, Any] = {
                "instance": f"{BASE}/projects/{mig.project}/zones/{mig.zone}/instances/{inst.name}",
                "id": str(abs(hash(inst.name)) % 10**12), "name": inst.name, "currentAction": inst.action}
            if inst.status:
                item["instanceStatus"] = inst.status
            if inst.errors:
                item["lastAttempt"] = {"errors": {"errors": [{"code": c, "message": m} for c, m in inst.errors]}}
            items.append(item)
        return self._page(items, request, "managedInstances", "")

    def _get_template(self, request: Request) -> Response:
        template = self.templates.get(request.match["name"])
        return Response(200, template) if template else self._http_error("notfound")

    def _get_machine_type(self, request: Request) -> Response:
        machine = self.machine_types.get(request.match["name"])
        return Response(200, machine) if machine else self._http_error("notfound")

    def _get_operation(self, request: Request) -> Response:
        op = self.operations.get(request.match["name"])
        if op is None:
            return self._http_error("notfound")
        if op["status"] != "DONE":
            op["_polls"] -= 1
            if op["_polls"] <= 0:
                self._finish(op)
        return Response(200, self._public(op))
