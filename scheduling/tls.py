"""TLS for the scheduling servers: a server context from mounted files, reloaded as a pair.

cert-manager (or a person) renews the Secret in place; the kubelet updates the mounted
files one at a time, so for a moment the new certificate sits beside the old key. A
context is therefore built afresh, and swapped in, only when the files as a whole load:
``load_cert_chain`` checks that the key belongs to the certificate, and a pair that does
not match (or a half-written file) keeps the previous context serving, with one log line
per change of the files. With ``client_ca_file`` the server asks for a client
certificate and accepts only one signed by that CA (kube-scheduler's extender
``tlsConfig.certFile`` / the API server's webhook client certificate); the server's
POST routes answer only clients that presented one.
"""

from __future__ import annotations

import logging
import os
import ssl
import threading
from dataclasses import dataclass

__all__ = ["ReloadingContext", "TLSFiles"]

log = logging.getLogger(__name__)

#: (modification time in ns, size) of each file: a rewrite changes one or the other.
_Stamp = tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class TLSFiles:
    cert_file: str
    key_file: str
    #: PEM bundle of the CA that signs client certificates; None: no client certificate asked.
    client_ca_file: str | None = None

    @property
    def paths(self) -> tuple[str, ...]:
        return (self.cert_file, self.key_file) + ((self.client_ca_file,) if self.client_ca_file else ())


def _stamp(files: TLSFiles) -> _Stamp:
    stats = [os.stat(path) for path in files.paths]
    return tuple((s.st_mtime_ns, s.st_size) for s in stats)


def build_context(files: TLSFiles) -> ssl.SSLContext:
    """A TLS 1.2+ server context; raises ``OSError``/``ssl.SSLError`` when the files do not load
    (a key that does not match the certificate included)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(files.cert_file, files.key_file)
    if files.client_ca_file:
        # OPTIONAL, not REQUIRED: a certificate, when presented, must chain to the CA (else the
        # handshake fails), while the kubelet's probes, which present none, still reach
        # /healthz and /readyz. The POST routes then refuse a client without one (403).
        context.load_verify_locations(cafile=files.client_ca_file)
        context.verify_mode = ssl.CERT_OPTIONAL
    return context


class ReloadingContext:
    """The current server context; ``current()`` looks at the files first (a few ``stat``s).

    Raises at construction when the files do not load: a server must not start without a
    certificate. Afterwards a bad change is logged once and the last good pair kept.
    """

    def __init__(self, files: TLSFiles) -> None:
        self.files = files
        self._lock = threading.Lock()
        self._stamp = _stamp(files)
        self._context = build_context(files)
        self._refused: _Stamp | None = None

    def current(self) -> ssl.SSLContext:
        try:
            stamp = _stamp(self.files)
        except OSError as exc:  # a file renamed away mid-rotation: keep serving what we have
            return self._keep((), f"cannot stat: {exc}")
        with self._lock:
            if stamp in (self._stamp, self._refused):
                return self._context
            try:
                context = build_context(self.files)
            except (OSError, ssl.SSLError) as exc:
                return self._keep(stamp, str(exc))
            self._context, self._stamp, self._refused = context, stamp, None
        log.info("TLS: loaded the renewed certificate %s", self.files.cert_file)
        return context

    def _keep(self, stamp: _Stamp, reason: str) -> ssl.SSLContext:
        """Log the refusal once per state of the files (``()``: a file missing), and go on with
        the last good context."""
        if stamp != self._refused:
            log.warning("TLS: %s and %s do not load as a pair (%s); serving the previous certificate",
                        self.files.cert_file, self.files.key_file, reason)
            self._refused = stamp
        return self._context
