#!/usr/bin/env python3
"""The mauth export format (version 1), read and written by Python's standard library, not by our code.

Usage:
  export_file.py check FILE                 -> "ok: N records (kind n, ...)", or "refused: <why>" and exit 1
  export_file.py write-example FILE KEY     -> writes what a bank's converter would: one user, one UAF key (KEY is
                                               its base64url DER public key) and its dispatch target

What `check` holds a file to, from the format's documentation (FIDOServer, "Export, import and migration"):
a header line, record lines whose kind and fields are the documented ones, a trailer whose sha256 is the SHA-256
of every byte before it and whose counts are the records'; every line ends with a line feed; no object names a
member twice.
"""
import base64
import hashlib
import json
import sys

FIELDS = {
    "user": {"userId", "username", "createdAt", "updatedAt", "createdBy"},
    "registration": {
        "aaid", "keyId", "username", "publicKey", "publicKeyEncoding", "signatureAlgorithm", "signCounter",
        "registrationCounter", "authenticatorVersion", "attestationType", "createdAt", "deviceId", "appAttestation",
        "appAttestKeyId",
    },
    "passkey": {
        "credentialId", "username", "userHandle", "publicKey", "signCount", "uvInitialized", "backupEligible",
        "backupState", "transports", "aaguid", "attestationFormat", "attestationType", "discoverable", "name",
        "createdAt", "lastUsedAt", "trust",
    },
    "dispatchTarget": {
        "id", "extId", "username", "name", "deviceId", "dispatcher", "target", "signatureKey", "encryptionKey",
        "createdAt", "updatedAt",
    },
    "appAttestKey": {"keyId", "appId", "environment", "publicKey", "counter", "receipt", "createdAt", "lastUsedAt"},
    "accessKey": {"id", "name", "keyHash", "createdAt", "revokedAt"},
    "signingKey": {"kid", "privateKeyPem", "createdAt", "activatedAt", "retiredAt"},
    "serverSecret": {"name", "secret", "createdAt"},
}
SERVER_KEYS = {"signingKey", "serverSecret"}


def no_duplicates(pairs):
    names = [name for name, _ in pairs]
    if len(names) != len(set(names)):
        raise ValueError("a member named twice")
    return dict(pairs)


def check(path):
    data = open(path, "rb").read()
    if not data.endswith(b"\n"):
        return "the last line has no line feed"
    lines = data.split(b"\n")[:-1]
    if len(lines) < 2:
        return "no header and trailer"
    objects = [json.loads(line.decode("utf-8"), object_pairs_hook=no_duplicates) for line in lines]
    header, records, trailer = objects[0], objects[1:-1], objects[-1]
    if header != {"format": "mauth-export", "serverKeys": header.get("serverKeys"), "version": 1}:
        return "bad header %r" % header
    if not isinstance(header["serverKeys"], bool):
        return "serverKeys is not a boolean"
    counts = {}
    for number, record in enumerate(records, start=2):
        kind = record.get("kind")
        if kind not in FIELDS:
            return "line %d: unknown kind %r" % (number, kind)
        if kind in SERVER_KEYS and not header["serverKeys"]:
            return "line %d: a server key in a file without them" % number
        extra = set(record) - FIELDS[kind] - {"kind"}
        if extra:
            return "line %d: unknown fields %r" % (number, sorted(extra))
        for name, value in record.items():
            if value is None:
                return "line %d: %s is null (an absent value is left out)" % (number, name)
        counts[kind] = counts.get(kind, 0) + 1
    digest = hashlib.sha256(data[: len(data) - len(lines[-1]) - 1]).hexdigest()
    if trailer.get("end") != "mauth-export" or trailer.get("sha256") != digest:
        return "the trailer's checksum is not the file's (%s)" % digest
    if trailer.get("counts") != counts or trailer.get("records") != len(records):
        return "the trailer's counts are not the records'"
    # What the server writes is canonical: sorted members, no spaces.
    for number, (line, value) in enumerate(zip(lines, objects), start=1):
        if line != json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8"):
            return "line %d is not canonical JSON" % number
    listed = ", ".join("%s %d" % (kind, counts[kind]) for kind in FIELDS if kind in counts)
    return "ok: %d records (%s)" % (len(records), listed)


def write_example(path, public_key):
    records = [
        {"kind": "user", "userId": "idm-4711", "username": "customer-4711", "createdAt": "2024-03-01T08:00:00Z",
         "updatedAt": "2025-06-30T12:00:00.5Z"},
        {"kind": "registration", "aaid": "F1D0#1001", "keyId": "bank-key-1", "username": "customer-4711",
         "publicKey": public_key, "publicKeyEncoding": 257, "signatureAlgorithm": 2, "signCounter": 17,
         "registrationCounter": 1, "authenticatorVersion": 1, "attestationType": 15880,
         "createdAt": "2024-03-01T08:01:00.000Z", "deviceId": "device-4711"},
        {"kind": "dispatchTarget", "id": "dt-4711", "extId": "ext-4711", "username": "customer-4711",
         "name": "Customer's phone", "deviceId": "device-4711", "dispatcher": "firebase-cloud-messaging",
         "target": "fcm-registration-token", "signatureKey": json.dumps({"kty": "EC", "crv": "P-256", "x": "AA", "y": "BB"}),
         "createdAt": "2024-03-01T08:01:00.000Z", "updatedAt": "2024-03-01T08:01:00.000Z"},
    ]
    # Members in the converter's own order, with spaces: the server reads any order and spacing.
    body = json.dumps({"version": 1, "format": "mauth-export", "serverKeys": False}) + "\n"
    body += "".join(json.dumps(record) + "\n" for record in records)
    counts = {}
    for record in records:
        counts[record["kind"]] = counts.get(record["kind"], 0) + 1
    trailer = {"end": "mauth-export", "records": len(records), "counts": counts,
               "sha256": hashlib.sha256(body.encode("utf-8")).hexdigest()}
    with open(path, "w", encoding="utf-8") as out:
        out.write(body + json.dumps(trailer) + "\n")
    base64.urlsafe_b64decode(public_key + "=" * (-len(public_key) % 4))  # a usable key was given


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "check":
        result = check(sys.argv[2])
        print(result if result.startswith("ok") else "refused: " + result)
        sys.exit(0 if result.startswith("ok") else 1)
    if len(sys.argv) == 4 and sys.argv[1] == "write-example":
        write_example(sys.argv[2], sys.argv[3])
        return
    print(__doc__)
    sys.exit(0 if sys.argv[1:] == ["--help"] else 2)


if __name__ == "__main__":
    main()
