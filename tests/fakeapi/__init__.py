"""The project's own fake Kubernetes API server (loopback HTTP), shared by all tests.

``FakeAPIServer`` serves a ``FakeState``; ``FakeAPIServer.write_kubeconfig`` points the
official client at it. See ``server.py`` for what it implements and its test controls.
"""

from tests.fakeapi.server import FakeAPIServer, Fault, Request
from tests.fakeapi.state import ApiError, FakeState

__all__ = ["ApiError", "FakeAPIServer", "FakeState", "Fault", "Request"]
