#!/usr/bin/env python3
"""ML-DSA (FIPS 204) passkeys made by an independent implementation: Python's cryptography (PyPI, over OpenSSL) signs
and cbor2 writes the CBOR, nothing of ours. Writes the fixtures of MLDSAVectorTests, one file per parameter set: a
packed self-attested registration (the credential key signs its own attestation) and an assertion, for RP ID
example.org and origin https://example.org. The keys come from fixed seeds (FIPS 204's 32-byte xi), so a rerun
makes the same keys; the signatures are hedged, so their bytes differ from run to run, and every run's verify.

  mldsa_vectors.py check           exits 0 when cryptography has ML-DSA and cbor2 is importable
  mldsa_vectors.py write DIRECTORY writes mldsa-65.json and mldsa-87.json there
"""
import hashlib
import json
import os
import sys

try:
    import cbor2
    from cryptography.hazmat.primitives.asymmetric import mldsa
    import cryptography

    mldsa.MLDSA65PrivateKey.from_seed_bytes(bytes(32))
except Exception:  # no cbor2, or a cryptography (or its OpenSSL) without ML-DSA
    sys.exit(1)

RP_ID = "example.org"
ORIGIN = "https://example.org"


def client_data(kind, challenge):
    b64 = __import__("base64").urlsafe_b64encode(challenge).rstrip(b"=").decode()
    return json.dumps({"type": kind, "challenge": b64, "origin": ORIGIN, "crossOrigin": False}, separators=(",", ":")).encode()


def vector(name, alg, key_class, seed_label):
    seed = hashlib.sha256(f"mauth ML-DSA test vector {seed_label}".encode()).digest()
    private = key_class.from_seed_bytes(seed)
    public = private.public_key().public_bytes_raw()
    cose = cbor2.dumps({1: 7, 3: alg, -1: public}, canonical=True)
    credential_id = hashlib.sha256(b"credential " + seed).digest()
    rp_hash = hashlib.sha256(RP_ID.encode()).digest()
    # UP, UV, AT; counter 1; an all-zero AAGUID.
    auth_data = rp_hash + bytes([0x45]) + (1).to_bytes(4, "big") + bytes(16) + len(credential_id).to_bytes(2, "big") + credential_id + cose
    challenge = hashlib.sha256(b"registration " + seed).digest()
    create = client_data("webauthn.create", challenge)
    signature = private.sign(auth_data + hashlib.sha256(create).digest())
    attestation = cbor2.dumps({"fmt": "packed", "attStmt": {"alg": alg, "sig": signature}, "authData": auth_data}, canonical=True)
    get_challenge = hashlib.sha256(b"authentication " + seed).digest()
    get = client_data("webauthn.get", get_challenge)
    assertion_data = rp_hash + bytes([0x05]) + (2).to_bytes(4, "big")
    assertion_signature = private.sign(assertion_data + hashlib.sha256(get).digest())
    # The independent side checks its own output before it is written.
    private.public_key().verify(assertion_signature, assertion_data + hashlib.sha256(get).digest())
    return {
        "name": name,
        "generator": f"Tests/Interop/mldsa_vectors.py with cryptography {cryptography.__version__} and cbor2",
        "rpId": RP_ID,
        "origin": ORIGIN,
        "alg": alg,
        "registration": {
            "challenge": challenge.hex(),
            "credentialId": credential_id.hex(),
            "clientDataJSON": create.hex(),
            "attestationObject": attestation.hex(),
            "credentialPublicKey": cose.hex(),
        },
        "authentication": {
            "challenge": get_challenge.hex(),
            "clientDataJSON": get.hex(),
            "authenticatorData": assertion_data.hex(),
            "signature": assertion_signature.hex(),
        },
    }


def main():
    if sys.argv[1:] == ["check"]:
        return 0
    if len(sys.argv) != 3 or sys.argv[1] != "write":
        print(__doc__, file=sys.stderr)
        return 64
    for name, alg, key_class in [("mldsa-65", -49, mldsa.MLDSA65PrivateKey), ("mldsa-87", -50, mldsa.MLDSA87PrivateKey)]:
        with open(os.path.join(sys.argv[2], f"{name}.json"), "w") as file:
            json.dump(vector(name, alg, key_class, name), file, indent=2)
            file.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
