"""A fake of the Microsoft.Compute REST API subset the Azure provider uses, with ARM's JSON shapes.

virtualMachineScaleSets get/list/update(PATCH)/delete_instances(POST .../delete),
virtualMachineScaleSetVMs list (with instanceView), resourceSkus list, and the
``Azure-AsyncOperation`` status of long-running operations, which finish on the first
poll (``Retry-After: 0``). Faults per operation (``fail_next("increase"|"delete"|"get"|
"list"|"vms", kind)``) are returned at the wire: HTTP errors for throttle/server/notfound
and quota (409 OperationNotAllowed), a failed async operation for capacity.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from tests.cloudproviders.fakes.http import FakeServer, Request, Response

__all__ = ["FakeAzure", "FakeVmss"]

_RG = r"/subscriptions/(?P<sub>[^/]+)/resourceGroups/(?P<rg>[^/]+)/providers/Microsoft\.Compute"
_VMSS = _RG + r"/virtualMachineScaleSets/(?P<name>[^/]+)"
_HTTP_FAULTS = {
    "throttle": (429, "TooManyRequests", "The request is being throttled."),
    "server": (500, "InternalServerError", "An internal server error occurred."),
    "notfound": (404, "ResourceNotFound", "The Resource 'Microsoft.Compute/virtualMachineScaleSets' was not found."),
    "quota": (409, "OperationNotAllowed", "Operation could not be completed as it results in exceeding approved "
                                          "standardLSv3Family Cores quota."),
}
DEFAULT_OS_DISK: dict[str, Any] = {"createOption": "FromImage", "caching": "ReadWrite", "diskSizeGB": 128,
                                   "managedDisk": {"storageAccountType": "Premium_LRS"}}
CAPACITY_FAULT = ("AllocationFailed", "Allocation failed. We do not have sufficient capacity for the requested VM "
                                      "size in this region.")


@dataclass
class FakeVm:
    instance_id: str
    state: str = "Succeeded"
    statuses: list[dict[str, str]] = field(default_factory=list)


@dataclass
class FakeVmss:
    name: str
    size: str
    location: str = "westeurope"
    tags: dict[str, str] = field(default_factory=dict)
    vms: list[FakeVm] = field(default_factory=list)
    capacity: int = 0
    zones: list[str] = field(default_factory=list)
    #: ``virtualMachineProfile.osProfile.windowsConfiguration`` present: a Windows scale set.
    windows: bool = False
    #: ``virtualMachineProfile.storageProfile.osDisk``; None leaves the disk out.
    os_disk: dict[str, Any] | None = field(default_factory=lambda: dict(DEFAULT_OS_DISK))
    #: Set: new VMs fail to provision with this code (a stock-out) instead of succeeding.
    stockout: str | None = None


class FakeAzure(FakeServer):
    def __init__(self, subscription: str = "sub-1", resource_group: str = "rg-nodes") -> None:
        super().__init__()
        self.subscription = subscription
        self.resource_group = resource_group
        self.scale_sets: dict[str, FakeVmss] = {}
        self.skus: list[dict[str, Any]] = []
        self.operations: dict[str, dict[str, Any]] = {}
        self.faults: dict[str, list[str]] = {}
        #: Any HTTP error, or any failed async-operation code, for the next call of an operation.
        self.raw_faults: dict[str, list[Response]] = {}
        self.operation_faults: dict[str, list[tuple[str, str]]] = {}
        self.retry_after = "0"
        self.page_size = 100
        self.tokens: list[str] = []
        self._ids = itertools.count(0)
        self.route("GET", _VMSS, self._get)
        self.route("GET", _RG + r"/virtualMachineScaleSets", self._list)
        self.route("PATCH", _VMSS, self._update)
        self.route("POST", _VMSS + r"/delete", self._delete_instances)
        self.route("GET", _VMSS + r"/virtualMachines", self._list_vms)
        self.route("GET", r"/subscriptions/(?P<sub>[^/]+)/providers/Microsoft\.Compute/skus", self._list_skus)
        self.route("GET", r"/subscriptions/(?P<sub>[^/]+)/providers/Microsoft\.Compute/locations/(?P<loc>[^/]+)"
                          r"/operations/(?P<op>[^/]+)", self._operation)

    # --- set-up ------------------------------------------------------------------------

    def add_sku(self, name: str, cpus: int, memory_gib: float, *, temp_mb: int = 0, nvme_mib: int = 0,
                gpus: int = 0, arch: str | None = "x64", location: str = "westeurope") -> None:
        """A virtualMachines SKU; ``arch=None`` leaves ``CpuArchitectureType`` out."""
        capabilities = [{"name": "vCPUs", "value": str(cpus)}, {"name": "MemoryGB", "value": str(memory_gib)},
                        {"name": "MaxResourceVolumeMB", "value": str(temp_mb)},
                        {"name": "PremiumIO", "value": "True"}]
        if arch is not None:
            capabilities.append({"name": "CpuArchitectureType", "value": arch})
        if gpus:
            capabilities.append({"name": "GPUs", "value": str(gpus)})
        if nvme_mib:
            capabilities.append({"name": "NvmeDiskSizeInMiB", "value": str(nvme_mib)})
        self.skus.append({"resourceType": "virtualMachines", "name": name, "tier": "Standard",
                          "size": name.removeprefix("Standard_"), "family": "standardFamily",
                          "locations": [location], "locationInfo": [{"location": location, "zones": ["1", "2", "3"]}],
                          "capabilities": capabilities, "restrictions": []})

    def add_scale_set(self, name: str, size: str, capacity: int = 0, *, tags: dict[str, str] | None = None,
                      location: str = "westeurope", zones: list[str] | None = None, windows: bool = False,
                      os_disk: dict[str, Any] | None = DEFAULT_OS_DISK) -> FakeVmss:
        vmss = FakeVmss(name, size, location, dict(tags or {}), zones=list(zones or []), windows=windows,
                        os_disk=dict(os_disk) if os_disk is not None else None)
        self.scale_sets[name.lower()] = vmss
        self._grow(vmss, capacity)
        for vm in vmss.vms:  # the scale set's first VMs are up already
            vm.state = "Succeeded"
        return vmss

    def fail_next(self, operation: str, kind: str) -> None:
        if kind not in _HTTP_FAULTS and kind != "capacity":
            raise ValueError(f"unknown fault kind {kind!r}")
        with self.lock:
            self.faults.setdefault(operation, []).append(kind)

    def fail_next_http(self, operation: str, status: int, code: str, message: str) -> None:
        """The next ``operation`` answers this ARM error."""
        with self.lock:
            self.raw_faults.setdefault(operation, []).append(
                Response(status, {"error": {"code": code, "message": message}}))

    def fail_next_operation(self, operation: str, code: str, message: str) -> None:
        """The next ``operation`` is accepted, and its async operation fails with this error."""
        with self.lock:
            self.operation_faults.setdefault(operation, []).append((code, message))

    def settle(self) -> None:
        """VMs being created come up."""
        with self.lock:
            for vmss in self.scale_sets.values():
                for vm in vmss.vms:
                    if vm.state == "Creating":
                        vm.state = "Succeeded"

    # --- helpers -------------------------------------------------------------------------

    def vmss_id(self, name: str) -> str:
        return (f"/subscriptions/{self.subscription}/resourceGroups/{self.resource_group}/providers/"
                f"Microsoft.Compute/virtualMachineScaleSets/{name}")

    def _fault(self, operation: str) -> str | None:
        queue = self.faults.get(operation)
        return queue.pop(0) if queue else None

    def _http_error(self, kind: str) -> Response:
        status, code, message = _HTTP_FAULTS[kind]
        headers = {"Retry-After": self.retry_after} if status == 429 else {}
        return Response(status, {"error": {"code": code, "message": message}}, headers)

    def _grow(self, vmss: FakeVmss, capacity: int) -> None:
        while len(vmss.vms) < capacity:
            iid = str(next(self._ids))
            if vmss.stockout:
                vmss.vms.append(FakeVm(iid, "Failed", [
                    {"code": f"ProvisioningState/failed/{vmss.stockout}", "level": "Error",
                     "displayStatus": "Provisioning failed", "message": f"{vmss.stockout}: no capacity"}]))
            else:
                # As on Azure, a new VM is listed at once, Creating, until it is up (settle()).
                vmss.vms.append(FakeVm(iid, "Creating"))
        vmss.capacity = capacity

    def _vmss_json(self, vmss: FakeVmss) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": self.vmss_id(vmss.name), "name": vmss.name, "type": "Microsoft.Compute/virtualMachineScaleSets",
            "location": vmss.location, "tags": vmss.tags,
            "sku": {"name": vmss.size, "tier": "Standard", "capacity": vmss.capacity},
            "properties": {
                "provisioningState": "Succeeded", "orchestrationMode": "Uniform", "overprovision": False,
                "upgradePolicy": {"mode": "Manual"}, "uniqueId": f"uid-{vmss.name}",
                "virtualMachineProfile": {
                    "osProfile": {"computerNamePrefix": vmss.name, "adminUsername": "azureuser"},
                    "storageProfile": {}}}}
        profile = body["properties"]["virtualMachineProfile"]
        if vmss.windows:
            profile["osProfile"]["windowsConfiguration"] = {"provisionVMAgent": True, "enableAutomaticUpdates": False}
        else:
            profile["osProfile"]["linuxConfiguration"] = {"disablePasswordAuthentication": True}
        if vmss.os_disk is not None:
            profile["storageProfile"]["osDisk"] = vmss.os_disk
        if vmss.zones:
            body["zones"] = vmss.zones
        return body

    def _vm_json(self, vmss: FakeVmss, vm: FakeVm) -> dict[str, Any]:
        statuses = vm.statuses or [{"code": f"ProvisioningState/{vm.state.lower()}", "level": "Info"}]
        return {"id": f"{self.vmss_id(vmss.name)}/virtualMachines/{vm.instance_id}", "instanceId": vm.instance_id,
                "name": f"{vmss.name}_{vm.instance_id}", "location": vmss.location,
                "type": "Microsoft.Compute/virtualMachineScaleSets/virtualMachines",
                "sku": {"name": vmss.size, "tier": "Standard"},
                "properties": {"latestModelApplied": True, "provisioningState": vm.state,
                               "osProfile": {"computerName": f"{vmss.name}{int(vm.instance_id):06d}"},
                               "instanceView": {"statuses": statuses}}}

    def _async(self, vmss: FakeVmss, status: int, body: Any, error: tuple[str, str] | None = None) -> Response:
        op = f"op-{next(self._ids)}"
        self.operations[op] = ({"status": "Failed", "error": {"code": error[0], "message": error[1]}}
                               if error else {"status": "Succeeded"})
        url = (f"{self.url}/subscriptions/{self.subscription}/providers/Microsoft.Compute/locations/"
               f"{vmss.location}/operations/{op}?api-version=2024-07-01")
        return Response(status, body, {"Azure-AsyncOperation": url, "Location": url, "Retry-After": "0"})

    def _page(self, items: list[Any], request: Request) -> Response:
        start = int(request.query.get("$skiptoken") or 0)
        body: dict[str, Any] = {"value": items[start:start + self.page_size]}
        if start + self.page_size < len(items):
            body["nextLink"] = f"{self.url}{request.path}?api-version=2024-07-01&$skiptoken={start + self.page_size}"
        return Response(200, body)

    def _lookup(self, request: Request, operation: str) -> FakeVmss | Response:
        self.tokens.append(request.headers.get("Authorization", ""))
        if self.raw_faults.get(operation):
            return self.raw_faults[operation].pop(0)
        kind = self._fault(operation)
        if kind in _HTTP_FAULTS:
            return self._http_error(kind)
        vmss = self.scale_sets.get(request.match["name"].lower())
        if vmss is None:
            return self._http_error("notfound")
        failure = CAPACITY_FAULT if kind == "capacity" else None
        if failure is None and self.operation_faults.get(operation):
            failure = self.operation_faults[operation].pop(0)
        if failure is not None:
            # PATCH answers 200 with the resource, POST 202; the async operation then fails.
            if request.method == "PATCH":
                return self._async(vmss, 200, self._vmss_json(vmss), failure)
            return self._async(vmss, 202, None, failure)
        return vmss

    # --- handlers ----------------------------------------------------------------------

    def _get(self, request: Request) -> Response:
        found = self._lookup(request, "get")
        return found if isinstance(found, Response) else Response(200, self._vmss_json(found))

    def _list(self, request: Request) -> Response:
        if (kind := self._fault("list")) is not None:
            return self._http_error(kind)
        return self._page([self._vmss_json(v) for v in self.scale_sets.values()], request)

    def _update(self, request: Request) -> Response:
        found = self._lookup(request, "increase")
        if isinstance(found, Response):
            return found
        capacity = int(request.body["sku"]["capacity"])
        del found.vms[capacity:]
        self._grow(found, capacity)
        body = self._vmss_json(found)
        body["properties"]["provisioningState"] = "Updating"
        return self._async(found, 200, body)

    def _delete_instances(self, request: Request) -> Response:
        found = self._lookup(request, "delete")
        if isinstance(found, Response):
            return found
        ids = [str(i) for i in request.body["instanceIds"]]
        if not set(ids) <= {vm.instance_id for vm in found.vms}:
            return Response(400, {"error": {"code": "InvalidParameter",
                                            "message": "The provided instanceId is not an active VM instance."}})
        found.vms = [vm for vm in found.vms if vm.instance_id not in ids]
        found.capacity -= len(ids)
        return self._async(found, 202, None)

    def _list_vms(self, request: Request) -> Response:
        found = self._lookup(request, "vms")
        if isinstance(found, Response):
            return found
        return self._page([self._vm_json(found, vm) for vm in found.vms], request)

    def _list_skus(self, request: Request) -> Response:
        if self.raw_faults.get("skus"):
            return self.raw_faults["skus"].pop(0)
        if (kind := self._fault("skus")) is not None:
            return self._http_error(kind)
        return self._page(self.skus, request)

    def _operation(self, request: Request) -> Response:
        op = self.operations.get(request.match["op"])
        return Response(200, op) if op is not None else self._http_error("notfound")
