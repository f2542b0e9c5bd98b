#!/usr/bin/env python3
"""An independent App Attest verifier (Apple's "Validating apps that connect to your server", steps written out
again with cbor2 and cryptography, both PyPI, installed by .ci/run), for the software App Attest of FIDOSimulation
and, as a check of this script, Apple's real objects.

  app_attest_interop.py check    exits 0 when cbor2 and cryptography are importable
  app_attest_interop.py verify   reads lines
      "attestation <object hex> <keyId hex> <clientDataHash hex> <appId> <aaguid hex> <unix time> <root DER hex>"
      "assertion <object hex> <X9.62 public key hex> <clientDataHash hex> <appId> <stored counter>"
  and prints one line per input: "ok attestation <public key hex>", "ok assertion <counter>", or "refused <why>".
"""
import datetime
import hashlib
import sys

try:
    import cbor2
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
except ImportError:
    sys.exit(1)

if sys.argv[1:] == ["check"]:
    sys.exit(0)

NONCE_OID = x509.ObjectIdentifier("1.2.840.113635.100.8.2")


def signed_by(child, parent):
    parent.public_key().verify(child.signature, child.tbs_certificate_bytes, ec.ECDSA(child.signature_hash_algorithm))
    if child.issuer != parent.subject:
        raise ValueError("issuer name is not the parent's subject")


def valid_at(certificate, when):
    if not certificate.not_valid_before_utc <= when <= certificate.not_valid_after_utc:
        raise ValueError(f"{certificate.subject.rfc4514_string()} not valid at {when}")


def attestation(fields):
    obj, key_id, client_hash, app_id, aaguid, when, root = fields
    decoded = cbor2.loads(bytes.fromhex(obj))
    if decoded["fmt"] != "apple-appattest":
        raise ValueError("fmt")
    chain = [x509.load_der_x509_certificate(der) for der in decoded["attStmt"]["x5c"]]
    anchor = x509.load_der_x509_certificate(bytes.fromhex(root))
    moment = datetime.datetime.fromtimestamp(int(when), datetime.timezone.utc)
    for child, parent in zip(chain, chain[1:] + [anchor]):
        signed_by(child, parent)
    for certificate in chain + [anchor]:
        valid_at(certificate, moment)
    auth_data = decoded["authData"]
    nonce = hashlib.sha256(auth_data + bytes.fromhex(client_hash)).digest()
    extension = chain[0].extensions.get_extension_for_oid(NONCE_OID).value.value
    # SEQUENCE { [1] { OCTET STRING (32) } }: the last 32 bytes, after the four headers of that shape.
    if extension[:6] != bytes([0x30, 0x24, 0xA1, 0x22, 0x04, 0x20]) or extension[6:] != nonce:
        raise ValueError("nonce")
    point = chain[0].public_key().public_bytes(Encoding.X962, PublicFormat.UncompressedPoint)
    if hashlib.sha256(point).digest() != bytes.fromhex(key_id):
        raise ValueError("keyId")
    if auth_data[:32] != hashlib.sha256(app_id.encode()).digest():
        raise ValueError("rpIdHash")
    if int.from_bytes(auth_data[33:37], "big") != 0:
        raise ValueError("counter")
    if auth_data[37:53] != bytes.fromhex(aaguid):
        raise ValueError("aaguid")
    length = int.from_bytes(auth_data[53:55], "big")
    if auth_data[55:55 + length] != bytes.fromhex(key_id):
        raise ValueError("credentialId")
    return f"ok attestation {point.hex()}"


def assertion(fields):
    obj, point, client_hash, app_id, stored = fields
    decoded = cbor2.loads(bytes.fromhex(obj))
    data = decoded["authenticatorData"]
    key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), bytes.fromhex(point))
    nonce = hashlib.sha256(data + bytes.fromhex(client_hash)).digest()
    key.verify(decoded["signature"], nonce, ec.ECDSA(hashes.SHA256()))
    if data[:32] != hashlib.sha256(app_id.encode()).digest():
        raise ValueError("rpIdHash")
    counter = int.from_bytes(data[33:37], "big")
    if counter <= int(stored):
        raise ValueError("counter")
    return f"ok assertion {counter}"


for line in sys.stdin:
    fields = line.split()
    try:
        print(attestation(fields[1:]) if fields[0] == "attestation" else assertion(fields[1:]))
    except Exception as error:  # every refusal is reported, the run goes on
        print(f"refused {type(error).__name__}: {error}")
    sys.stdout.flush()
