#!/usr/bin/env python3
"""The independent writer of certificate revocation lists the server reads (RevocationList): Python's cryptography.

  crl_interop.py check
  crl_interop.py write CA_CERT_PEM CA_KEY_PEM OUT_PEM SERIAL_HEX...   a CRL of the CA revoking the serial numbers
"""
import datetime
import sys

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization


def write(ca_cert_path, ca_key_path, out_path, serials):
    with open(ca_cert_path, "rb") as f:
        ca = x509.load_pem_x509_certificate(f.read())
    with open(ca_key_path, "rb") as f:
        key = serialization.load_pem_private_key(f.read(), password=None)
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateRevocationListBuilder()
               .issuer_name(ca.subject)
               .last_update(now - datetime.timedelta(minutes=5))
               .next_update(now + datetime.timedelta(days=7)))
    for serial in serials:
        entry = (x509.RevokedCertificateBuilder()
                 .serial_number(int(serial, 16))
                 .revocation_date(now - datetime.timedelta(minutes=5))
                 .add_extension(x509.CRLReason(x509.ReasonFlags.key_compromise), critical=False)
                 .build())
        builder = builder.add_revoked_certificate(entry)
    crl = builder.add_extension(x509.CRLNumber(1), critical=False).sign(key, hashes.SHA256())
    with open(out_path, "wb") as f:
        f.write(crl.public_bytes(serialization.Encoding.PEM))


if __name__ == "__main__":
    if sys.argv[1] == "check":
        sys.exit(0)
    if sys.argv[1] == "write":
        write(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
        sys.exit(0)
    sys.exit(2)
