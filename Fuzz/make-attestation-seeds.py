#!/usr/bin/env python3
"""Writes one attestation seed per W3C vector (Tests/WebAuthnTests/Vectors): SHA-256 of the registration's
clientDataJSON, then its attestationObject, the input the `attestation` fuzz target reads. Standard library only."""
import hashlib, json, pathlib

root = pathlib.Path(__file__).resolve().parents[1]
vectors = root / "Tests" / "WebAuthnTests" / "Vectors"
here = root / "Fuzz" / "corpus" / "attestation"
for path in sorted(vectors.glob("*.json")):
    vector = json.loads(path.read_text())
    given = vector.get("registration", {}).get("given")
    if not given or path.stem == "packed-ed448":  # Ed448 is refused by design, so it is no seed
        continue
    client = bytes.fromhex(given["clientDataJSON"]["hex"])
    obj = bytes.fromhex(given["attestationObject"]["hex"])
    if path.stem.startswith("fido-u2f"):
        # The vector's AAGUID is random, which a U2F signature does not cover and the server refuses; zeroed, as a
        # client writes a U2F authenticator's, the statement still verifies (16 random bytes occur once: in authData).
        aaguid = bytes.fromhex(given["aaguid"]["hex"])
        assert obj.count(aaguid) == 1
        obj = obj.replace(aaguid, bytes(16))
    seed = hashlib.sha256(client).digest() + obj
    (here / f"w3c-{path.stem}").write_bytes(seed)
    print(f"w3c-{path.stem}: {len(seed)} bytes")
