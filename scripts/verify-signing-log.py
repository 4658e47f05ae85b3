#!/usr/bin/env python3
"""Checks a `bridgectl log export` (JSON lines) without bridgectl: only keccak-256 and
ecrecover, both from Foundry's `cast` (the pinned one in tools/node_modules/.bin, or any
`cast` on PATH). The procedure, for an auditor who would rather use something else:

  for each line, in order (n = 1, 2, ...):
    1. body = line["body"] (a string: the entry's JSON text, exactly as it was hashed);
    2. keccak256(utf8(body)) must equal line["hash"];
    3. json(body)["seq"] must be n, json(body)["prev"] the previous line's hash
       (0x00..00 for the first);
    4. the EIP-191 personal_sign signature line["sig"] over the 32 bytes of line["hash"]
       must recover to json(body)["key"];
  and, with a checkpoint COUNT:HASH kept earlier, line COUNT must exist with that hash.

Usage: verify-signing-log.py EXPORT.jsonl [--checkpoint COUNT:HASH] [--cast PATH]
Exit 0 when the whole export holds; 1 naming the first entry that does not.
"""
import json
import os
import shutil
import subprocess
import sys

ZERO = "0x" + "00" * 32


def cast_path(argv):
    if "--cast" in argv:
        return argv[argv.index("--cast") + 1]
    here = os.path.dirname(os.path.abspath(__file__))
    pinned = os.path.join(here, "..", "tools", "node_modules", ".bin", "cast")
    return pinned if os.path.exists(pinned) else shutil.which("cast") or "cast"


def run(cast, *args):
    out = subprocess.run([cast, *args], capture_output=True, text=True)
    return out.returncode, out.stdout.strip()


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    cast = cast_path(argv)
    kept = None
    if "--checkpoint" in argv:
        count, head = argv[argv.index("--checkpoint") + 1].split(":", 1)
        kept = (int(count), head.lower())
    prev, n, seen = ZERO, 0, {}
    with open(argv[1], encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            n += 1
            entry = json.loads(line)
            body_text = entry["body"]
            body = json.loads(body_text)

            def bad(why):
                print(f"entry {n}: {why}", file=sys.stderr)
                return 1

            _, digest = run(cast, "keccak", body_text)
            if digest.lower() != entry["hash"].lower():
                return bad(f"keccak256(body) is {digest}, the entry says {entry['hash']}")
            if body["seq"] != n:
                return bad(f"its body says entry {body['seq']}")
            if body["prev"].lower() != prev.lower():
                return bad(f"prev is {body['prev']}, the previous entry's hash is {prev}")
            code, said = run(cast, "wallet", "verify", "--address", body["key"], digest, entry["sig"])
            if code != 0:
                return bad(f"the signature does not recover to {body['key']}: {said}")
            prev = digest
            seen[n] = digest.lower()
    if kept is not None:
        count, head = kept
        if count > n:
            print(f"entry {n + 1}: missing: the export ends at {n}, the checkpoint has {count}",
                  file=sys.stderr)
            return 1
        if count > 0 and seen.get(count) != head:
            print(f"entry {count}: hash {seen.get(count)} is not the checkpoint's {head}",
                  file=sys.stderr)
            return 1
    print(f"ok: {n} entries, head {n}:{prev}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
