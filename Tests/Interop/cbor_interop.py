#!/usr/bin/env python3
"""cbor2 (PyPI) as the independent CBOR implementation for CBORTests.

  cbor_interop.py check                  -> exits 0 when cbor2 is importable
  cbor_interop.py generate COUNT SEED    -> COUNT lines: <canonical hex> <other hex> <rendering JSON>
                                            random values encoded by cbor2, once canonically and once not (dict order
                                            shuffled, floats as doubles)
  cbor_interop.py decode                 -> for each line "x<hex>" on stdin: "<cbor2's canonical hex> <rendering JSON>"
                                            or "error <exception>"

A rendering is JSON both sides write the same way: {"int": "<decimal>"}, {"bytes": "<hex>"}, {"text": s},
{"array": [...]}, {"map": [[k, v], ...]} in encoded order, {"tag": "<n>", "value": v}, {"simple": n}, true, false,
null, {"undefined": true}, {"float": "<16 hex digits of the IEEE double>"} or {"float": "nan"}.
"""
from collections.abc import Mapping
import json
import math
import random
import struct
import sys

import cbor2

# Tags cbor2 gives no meaning to (it decodes 0-5, 21-37, 256, 258, 260, 261, 55799 ... into Python objects).
PLAIN_TAGS = [6, 7, 15, 16, 17, 18, 96, 1000, 40000, 0xFFFF, 0x10000, 2**32 + 5]


def render(value):
    if value is True or value is False or value is None:
        return value
    if value is cbor2.undefined:
        return {"undefined": True}
    if isinstance(value, int):
        return {"int": str(value)}
    if isinstance(value, float):
        if math.isnan(value):
            return {"float": "nan"}
        return {"float": struct.pack(">d", value).hex()}
    if isinstance(value, bytes):
        return {"bytes": value.hex()}
    if isinstance(value, str):
        return {"text": value}
    if isinstance(value, (list, tuple)):
        return {"array": [render(item) for item in value]}
    if isinstance(value, Mapping):
        return {"map": [[render(k), render(v)] for k, v in value.items()]}
    if isinstance(value, cbor2.CBORTag):
        return {"tag": str(value.tag), "value": render(value.value)}
    if isinstance(value, cbor2.CBORSimpleValue):
        return {"simple": value.value}
    raise TypeError(f"cannot render {type(value)}")


def random_text(rng):
    alphabet = "abcxyz AZ09-_é€😀\u0000\n\"\\\u202e"
    return "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 12)))


def random_int(rng):
    bound = rng.choice([24, 256, 65536, 2**32, 2**64])
    return rng.randrange(-bound, bound)


def random_float(rng):
    return rng.choice([0.0, -0.0, 1.0, 1.5, -2.75, 65504.0, 5.960464477539063e-08, 0.1, 1e300, 3.4028234663852886e38,
                       float("inf"), float("-inf"), float("nan"), rng.uniform(-1e6, 1e6),
                       struct.unpack(">f", struct.pack(">f", rng.uniform(-100, 100)))[0]])


def random_key(rng):
    kind = rng.randrange(3)
    if kind == 0:
        return random_int(rng)
    if kind == 1:
        return random_text(rng)
    return bytes(rng.randrange(256) for _ in range(rng.randrange(0, 6)))


def random_value(rng, depth):
    kinds = ["int", "bytes", "text", "float", "bool", "null", "undefined", "simple"]
    if depth < 4:
        kinds += ["array", "map", "tag"]
    kind = rng.choice(kinds)
    if kind == "int":
        return random_int(rng)
    if kind == "bytes":
        return bytes(rng.randrange(256) for _ in range(rng.choice([0, 1, 5, 23, 24, 40, 300])))
    if kind == "text":
        return random_text(rng)
    if kind == "float":
        return random_float(rng)
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "null":
        return None
    if kind == "undefined":
        return cbor2.undefined
    if kind == "simple":
        return cbor2.CBORSimpleValue(rng.choice([0, 5, 19, 32, 100, 255]))
    if kind == "array":
        return [random_value(rng, depth + 1) for _ in range(rng.choice([0, 1, 3, 24]))]
    if kind == "map":
        entries = {}
        for _ in range(rng.choice([0, 1, 4, 25])):
            entries[random_key(rng)] = random_value(rng, depth + 1)
        return entries
    return cbor2.CBORTag(rng.choice(PLAIN_TAGS), random_value(rng, depth + 1))


def shuffled(value, rng):
    """The same value with every map's entries in a random order."""
    if isinstance(value, dict):
        items = [(k, shuffled(v, rng)) for k, v in value.items()]
        rng.shuffle(items)
        return dict(items)
    if isinstance(value, list):
        return [shuffled(item, rng) for item in value]
    if isinstance(value, cbor2.CBORTag):
        return cbor2.CBORTag(value.tag, shuffled(value.value, rng))
    return value


def main():
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "check":
        return 0
    if command == "generate":
        count, seed = int(sys.argv[2]), int(sys.argv[3])
        rng = random.Random(seed)
        for _ in range(count):
            value = random_value(rng, 0)
            canonical = cbor2.dumps(value, canonical=True)
            other = cbor2.dumps(shuffled(value, rng))
            print(canonical.hex(), other.hex(), json.dumps(render(cbor2.loads(canonical)), separators=(",", ":"), sort_keys=True))
        return 0
    if command == "decode":
        for line in sys.stdin:
            line = line.strip()
            if not line.startswith("x"):
                continue
            try:
                value = cbor2.loads(bytes.fromhex(line[1:]))
                print(cbor2.dumps(value, canonical=True).hex(), json.dumps(render(value), separators=(",", ":"), sort_keys=True))
            except Exception as error:  # what cbor2 refuses, by any exception
                print("error", type(error).__name__)
        return 0
    print(__doc__, file=sys.stderr)
    return 64


if __name__ == "__main__":
    sys.exit(main())
