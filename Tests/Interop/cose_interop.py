#!/usr/bin/env python3
"""Python's cryptography and cbor2 (PyPI) as the independent COSE signer for WebAuthnTests.

  cose_interop.py check   -> exits 0 when cryptography and cbor2 are importable
  cose_interop.py sign    -> one line per COSE algorithm: <alg> <COSE key hex> <message hex> <signature hex>
                             (a fresh key each; ECDSA signatures DER, RSA, EdDSA and ML-DSA raw, as WebAuthn §6.5.5 says)
"""
import os
import sys

import cbor2
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, mldsa, padding, rsa


def ec_key(curve, crv, size):
    private = ec.generate_private_key(curve)
    numbers = private.public_key().public_numbers()
    return private, {1: 2, -1: crv, -2: numbers.x.to_bytes(size, "big"), -3: numbers.y.to_bytes(size, "big")}


def integer_bytes(value):
    return value.to_bytes((value.bit_length() + 7) // 8, "big")


def main():
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "check":
        return 0
    if command != "sign":
        print(__doc__, file=sys.stderr)
        return 64
    message = os.urandom(37) + os.urandom(32)  # authenticator data || clientDataHash, in shape
    lines = []
    for alg, curve, crv, size, digest in [(-7, ec.SECP256R1(), 1, 32, hashes.SHA256()), (-35, ec.SECP384R1(), 2, 48, hashes.SHA384()),
                                          (-36, ec.SECP521R1(), 3, 66, hashes.SHA512())]:
        private, cose = ec_key(curve, crv, size)
        cose[3] = alg
        lines.append((alg, cose, private.sign(message, ec.ECDSA(digest))))
    rsa_private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    numbers = rsa_private.public_key().public_numbers()
    for alg, digest, pss in [(-257, hashes.SHA256(), False), (-258, hashes.SHA384(), False), (-259, hashes.SHA512(), False),
                             (-37, hashes.SHA256(), True), (-38, hashes.SHA384(), True), (-39, hashes.SHA512(), True)]:
        scheme = padding.PSS(mgf=padding.MGF1(digest), salt_length=padding.PSS.DIGEST_LENGTH) if pss else padding.PKCS1v15()
        cose = {1: 3, 3: alg, -1: integer_bytes(numbers.n), -2: integer_bytes(numbers.e)}
        lines.append((alg, cose, rsa_private.sign(message, scheme, digest)))
    ed = ed25519.Ed25519PrivateKey.generate()
    raw = ed.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    lines.append((-8, {1: 1, 3: -8, -1: 6, -2: raw}, ed.sign(message)))
    # ML-DSA (FIPS 204): key type AKP (7), the public key in -1 (draft-ietf-cose-dilithium); pure, empty context.
    for alg, key_class in [(-49, mldsa.MLDSA65PrivateKey), (-50, mldsa.MLDSA87PrivateKey)]:
        private = key_class.generate()
        lines.append((alg, {1: 7, 3: alg, -1: private.public_key().public_bytes_raw()}, private.sign(message)))
    for alg, cose, signature in lines:
        print(alg, cbor2.dumps(cose, canonical=True).hex(), message.hex(), signature.hex())
    return 0


if __name__ == "__main__":
    sys.exit(main())
