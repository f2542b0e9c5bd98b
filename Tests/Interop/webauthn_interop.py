#!/usr/bin/env python3
"""An independent WebAuthn verifier for the software passkey authenticator: python-fido2 (PyPI, installed by
.ci/run) verifies its attestation statements and assertion signatures (RS384 and RS512 through cryptography, below).

  webauthn_interop.py check    exits 0 when python-fido2 is importable
  webauthn_interop.py verify   reads lines "registration <clientDataJSON hex> <attestationObject hex>" and
                               "assertion <authenticatorData hex> <clientDataJSON hex> <signature hex>" (the
                               assertion uses the key of the registration before it); prints one line per input:
                               "ok <fmt> <attestation type> <alg>" or "ok assertion <signCount>", or "refused <why>".
"""
import hashlib
import sys

try:
    from cryptography.hazmat.primitives import hashes
    from fido2.attestation import Attestation
    from fido2.cose import RS256
    from fido2.webauthn import AttestationObject, AuthenticatorData
except ImportError:
    sys.exit(1)


# python-fido2 names RS256 only; RS384 and RS512 (RFC 8812) are the same PKCS #1 v1.5 verification by cryptography
# with another hash. CoseKey.for_alg finds them as RS256's subclasses.
class RS384(RS256):
    ALGORITHM = -258
    _HASH_ALG = hashes.SHA384()


class RS512(RS256):
    ALGORITHM = -259
    _HASH_ALG = hashes.SHA512()

if sys.argv[1:] == ["check"]:
    sys.exit(0)

key = None
for line in sys.stdin:
    fields = line.split()
    try:
        if fields[0] == "registration":
            client, obj = bytes.fromhex(fields[1]), bytes.fromhex(fields[2])
            attestation = AttestationObject(obj)
            result = Attestation.for_type(attestation.fmt)().verify(attestation.att_stmt, attestation.auth_data, hashlib.sha256(client).digest())
            key = attestation.auth_data.credential_data.public_key
            print(f"ok {attestation.fmt} {result.attestation_type.name} {key.ALGORITHM}")
        else:
            data, client, signature = (bytes.fromhex(f) for f in fields[1:4])
            key.verify(data + hashlib.sha256(client).digest(), signature)
            print(f"ok assertion {AuthenticatorData(data).counter}")
    except Exception as error:  # every refusal is reported, the run goes on
        print(f"refused {type(error).__name__}: {error}")
    sys.stdout.flush()
