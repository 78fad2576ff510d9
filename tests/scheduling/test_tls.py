"""TLS from mounted files: the servers speak HTTPS with the given certificate, and pick up a
renewed one (cert-manager rotates the Secret in place) without a restart."""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import ssl
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from scheduling.tls import TLSFiles
from scheduling.webhook import WebhookConfig, mutate
from tests.factories import pod_json
from tests.scheduling.wire import Client, server_at


def write_cert(directory: Path, common_name: str) -> Path:
    """A self-signed certificate for 127.0.0.1 in ``tls.crt`` / ``tls.key``; returns the cert path."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=1))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    (directory / "tls.key").write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                                          serialization.PrivateFormat.PKCS8,
                                                          serialization.NoEncryption()))
    path = directory / "tls.crt"
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return path


def client_context(cert: Path) -> ssl.SSLContext:
    """Trusts only ``cert``, as the API server trusts the caBundle of the webhook configuration."""
    return ssl.create_default_context(cafile=str(cert))


def test_https_and_certificate_rotation(tmp_path: Path) -> None:
    first = tmp_path / "first"
    second = tmp_path / "second"
    mounted = tmp_path / "mounted"
    for d in (first, second, mounted):
        d.mkdir()
    write_cert(first, "webhook-v1")
    write_cert(second, "webhook-v2")
    for name in ("tls.crt", "tls.key"):
        (mounted / name).write_bytes((first / name).read_bytes())
    server = server_at({"/mutate": lambda b: mutate(b, WebhookConfig())},
                       TLSFiles(str(mounted / "tls.crt"), str(mounted / "tls.key")))
    review = {"request": {"uid": "u1", "namespace": "default", "object": pod_json("p")}}
    try:
        old = Client(server, client_context(first / "tls.crt"))
        assert old.post("/mutate", review)["response"]["uid"] == "u1"
        old.close()
        # The Secret is renewed: same paths, new files (newer modification time).
        for name in ("tls.crt", "tls.key"):
            (mounted / name).write_bytes((second / name).read_bytes())
        stamp = (mounted / "tls.crt").stat().st_mtime + 5
        for name in ("tls.crt", "tls.key"):
            os.utime(mounted / name, (stamp, stamp))
        new = Client(server, client_context(second / "tls.crt"))
        assert new.post("/mutate", review)["response"]["allowed"] is True
        new.close()
    finally:
        server.close()
