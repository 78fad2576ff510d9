"""Certificates for the TLS tests: a CA, and leaf certificates for 127.0.0.1 it signs."""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True, slots=True)
class Issued:
    cert: Path
    key: Path
    private_key: ec.EllipticCurvePrivateKey
    certificate: x509.Certificate


def issue(directory: Path, common_name: str, ca: Issued | None = None, *, is_ca: bool = False) -> Issued:
    """``directory/tls.crt`` and ``tls.key``: self-signed when ``ca`` is None, else signed by it."""
    directory.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = dt.datetime.now(dt.UTC)
    builder = (x509.CertificateBuilder().subject_name(name)
               .issuer_name(ca.certificate.subject if ca else name).public_key(key.public_key())
               .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=1))
               .not_valid_after(now + dt.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=is_ca or ca is None, path_length=None), critical=True))
    if not is_ca:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
    cert = builder.sign(ca.private_key if ca else key, hashes.SHA256())
    key_path, cert_path = directory / "tls.key", directory / "tls.crt"
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return Issued(cert_path, key_path, key, cert)
