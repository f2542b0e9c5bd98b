#!/usr/bin/env python3
"""Independent JOSE peer for the interoperability tests (jwcrypto from PyPI).

Usage:
  jose_interop.py decrypt-jwe <private JWK JSON> <compact JWE>   -> prints the plaintext
  jose_interop.py encrypt-jwe <public JWK JSON> <plaintext>      -> prints a compact JWE (ECDH-ES + A256GCM)
  jose_interop.py verify-jws  <public JWK JSON> <compact JWS>    -> prints the payload
  jose_interop.py sign-jws    <private JWK JSON> <payload>       -> prints a compact JWS (ES256)
  jose_interop.py wrap-jwe    <oct JWK JSON> <plaintext>         -> prints a compact JWE (A256KW + A256GCM)
  jose_interop.py unwrap-jwe  <oct JWK JSON> <compact JWE>       -> prints the plaintext of an A256KW + A256GCM JWE
  jose_interop.py check                                          -> exits 0 when jwcrypto is importable
"""
import json
import sys

from jwcrypto import jwe, jwk, jws


def main(argv):
    command = argv[1]
    if command == "check":
        return 0
    key = jwk.JWK.from_json(argv[2])
    if command == "decrypt-jwe":
        token = jwe.JWE()
        token.deserialize(argv[3], key=key)
        sys.stdout.write(token.payload.decode())
    elif command == "encrypt-jwe":
        header = {"alg": "ECDH-ES", "enc": "A256GCM", "cty": "application/json"}
        token = jwe.JWE(argv[3].encode(), json.dumps(header))
        token.add_recipient(key)
        sys.stdout.write(token.serialize(compact=True))
    elif command == "verify-jws":
        token = jws.JWS()
        token.deserialize(argv[3])
        token.verify(key, alg="ES256")
        sys.stdout.write(token.payload.decode())
    elif command == "sign-jws":
        token = jws.JWS(argv[3].encode())
        token.add_signature(key, alg="ES256", protected=json.dumps({"alg": "ES256"}))
        sys.stdout.write(token.serialize(compact=True))
    elif command == "wrap-jwe":
        token = jwe.JWE(argv[3].encode(), json.dumps({"alg": "A256KW", "enc": "A256GCM"}))
        token.add_recipient(key)
        sys.stdout.write(token.serialize(compact=True))
    elif command == "unwrap-jwe":
        token = jwe.JWE()
        token.deserialize(argv[3], key=key)
        sys.stdout.write(token.payload.decode())
    else:
        raise SystemExit("unknown command " + command)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
