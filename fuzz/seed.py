#!/usr/bin/env python3
"""Writes the seed corpus of every fuzz target into fuzz/corpus/<target>/ from files
already in the repository: keystore-fixtures/ (each key file with its passphrase), the
ethereum/tests TransactionTests vectors, the EIP-155 vectors of
crates/tx/tests and a few hand-written inputs in each target's input layout (see
crates/fuzzing). The committed regressions are added by bench/fuzz.sh."""
import hashlib, json, os, pathlib, sys

root = pathlib.Path(__file__).resolve().parent.parent
out = root / "fuzz" / "corpus"

def put(target, name, data):
    d = out / target
    d.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    (d / ("seed-" + name)).write_bytes(data)

# key_file: passphrase line + key file
for f in sorted((root / "keystore-fixtures").iterdir()):
    if f.suffix in (".key", ".json") and f.name != "manifest.json":
        p = f.with_suffix(".passphrase")
        pw = p.read_bytes().split(b"\n")[0] if p.exists() else b""
        put("key_file", f.name, pw + b"\n" + f.read_bytes())

# tx_decode: ethereum/tests txbytes, as bytes and as hex text
EIP155 = "0xf86c098504a817c800825208943535353535353535353535353535353535353535880de0b6b3a76400008025a028ef61340bd939bc2195fe537567866003e1a15d3c71ff63e1590620aa636276a067cbe9d8997f761aecb703304b3800ccf555c9f3dc64214b297fb1966a3b6d83"
SECOND = "0xf869808504e3b29200831e848094f0109fc8df283027b6285cc889f5aa624eac1f55843b9aca008025a0c9cf86333bcb065d140032ecaab5d9281bde80f21b9687b3e94161de42d51895a0727a108a0b8d101465414033c3f705a9c7b826e596766046ee1183dbc8aeaa68"
txs = {"eip155": EIP155, "second": SECOND}
for f in sorted((root / "crates/tx/tests/vectors/TransactionTests").rglob("*.json")):
    for name, case in json.loads(f.read_text()).items():
        if isinstance(case, dict) and "txbytes" in case:
            txs[name] = case["txbytes"]
for name, hx in txs.items():
    put("tx_decode", name + ".hex", hx)
    try:
        put("tx_decode", name + ".bin", bytes.fromhex(hx[2:]))
    except ValueError:
        pass

# rawTx JSON, action envelopes, sign requests (EIP-155 example transaction)
raw = {"from": "0x9d8A62f656a8d1615C1294fd71e9CFb3E4855A4F",
       "to": "0x3535353535353535353535353535353535353535", "data": "0x",
       "nonce": "0x9", "gasLimit": "0x5208", "gasPrice": "0x4a817c800", "chainId": 1,
       "value": "0xde0b6b3a7640000"}
redeem = dict(raw, data="0xdb006a750000000000000000000000000000000000000000000000000de0b6b3a7640000",
              value="0x0", chainId="0x96b65", gasLimit=90000)
raw_min = {k: v for k, v in raw.items() if k != "value"}
for name, r in {"eip155": raw, "redeem": redeem, "minimal": raw_min}.items():
    put("rawtx_json", name, json.dumps(r))
    put("sign_input", "raw-" + name, json.dumps(r))
    put("sign_input", "envelope-" + name, json.dumps(
        {"result": True, "status": 200, "code": "OK",
         "data": {"from": r["from"], "rawTx": r, "txId": "6f1c1f0e-1c3b-4a55-9a43-1f0e6f1c1f0e"}}))
request = {"format": "bridgectl-sign-request", "version": 1, "rawTx": redeem,
           "intent": {"function": "redeem", "args": {"_amount": "1000000000000000000"},
                      "to": redeem["to"], "chainId": 617317,
                      "token": {"symbol": "ST", "decimals": 18}, "description": "redeem 1 ST"},
           "origin": {"baseUrl": "https://platform.example", "action": "redeem",
                      "txId": "6f1c1f0e-1c3b-4a55-9a43-1f0e6f1c1f0e", "profile": "default",
                      "createdAt": "2025-01-01T00:00:00Z"}}
put("sign_input", "request", json.dumps(request, indent=2))

# signed bundle (+ NUL + the request it was made from)
req_bytes = json.dumps(raw).encode()
bundle = {"format": "bridgectl-signed-bundle", "version": 1, "signedTx": EIP155,
          "txHash": "0x33469b22e9f636356c4160a87eb19df52b7412e8eac32a4a55ffe88ea8350788",
          "from": "0x9d8A62f656a8d1615C1294fd71e9CFb3E4855A4F",
          "to": "0x3535353535353535353535353535353535353535", "chainId": 1, "nonce": 9,
          "requestHash": "0x" + hashlib.sha256(req_bytes).hexdigest(), "requestKind": "raw-tx"}
put("signed_bundle", "alone", json.dumps(bundle))
put("signed_bundle", "with-request", json.dumps(bundle).encode() + b"\0" + req_bytes)

# envelope: 2-byte status + body
def status(code):
    return (code - 100).to_bytes(2, "big")
for name, code, body in [
        ("ok", 200, {"result": True, "status": 200, "code": "OK", "data": {"nonce": "0x9"}}),
        ("ok-nodata", 200, {"result": True}),
        ("false", 200, {"result": False, "status": 400, "code": "NONCE_TOO_LOW", "message": "nonce too low"}),
        ("err", 409, {"result": False, "status": 409, "code": "DUPLICATE_TX_ID", "message": "txId reused"}),
        ("swap", 201, {"result": True, "status": 201, "code": "OK", "data": {"address": "0x3535353535353535353535353535353535353535"}})]:
    put("envelope", name, status(code) + json.dumps(body).encode())
put("envelope", "html", status(502) + b"<html>bad gateway</html>")

# webhook delivery: x-signature line + body (signature of this body under the fuzz key)
import hmac
body = json.dumps({"subscriptionId": "1042", "sequenceNumber": 7, "eventType": "BLOCK_PERIOD",
                   "network": "ethereum-mainnet", "data": {"blockNumber": 19000000}}).encode()
sig = hmac.new(b"fuzz-signing-key", body, hashlib.sha256).hexdigest()
put("webhook_delivery", "signed", sig.encode() + b"\n" + body)
put("webhook_delivery", "prefixed", b"sha256=" + sig.upper().encode() + b"\n" + body)
put("webhook_delivery", "nosig", b"\n" + json.dumps({"subscriptionId": 5, "sequenceNumber": "x"}).encode())

# batch_file: format byte (even JSONL, odd CSV) + file
A = "0x8ba1f109551bD432803012645Ac136ddd64DBA72"
put("batch_file", "jsonl", b"\x00" + "\n".join([
    "# payouts",
    json.dumps({"op": "redeem", "from": "k1", "amount": "12.5", "id": "invoice-7"}),
    json.dumps({"op": "transfer", "from": A, "to": "k2", "amount": "0.000001", "token": "st"}),
    json.dumps({"op": "swap", "from": "k3", "amount": "1.000000000000000001"}),
    "", "{\"op\": \"redeem\", \"from\": \"k1\", \"amount\": \"1\", \"amount\": \"2\"}"]).encode())
put("batch_file", "csv", b"\x01" + f"op,from,amount,to,token,id\nredeem,k1,3,,,a\ntransfer,{A},2,k4,MT,\nswap,k9,0.5,,,\n".encode())
put("batch_file", "csv-bad", b"\x01op,op\nredeem,\"x\"\n")

# amount: decimals byte + text
for i, (d, t) in enumerate([(18, "1.5"), (18, "0.000000000000000001"), (0, "115792089237316195423570985008687907853269984665640564039457584007913129639935"),
                            (77, "1"), (6, "007.250000"), (18, "50gwei"), (9, "0.01ether"), (2, "1.2.3")]):
    put("amount", str(i), bytes([d]) + t.encode())

# calldata: the ST/ERC-20 functions of crates/tx/src/calldata.rs
word = lambda n: n.to_bytes(32, "big")
addr = bytes.fromhex("3535353535353535353535353535353535353535").rjust(32, b"\0")
calls = {"redeem": "db006a75" , "transfer": "a9059cbb", "approve": "095ea7b3",
         "balanceOf": "70a08231", "totalSupply": "18160ddd", "transferFrom": "23b872dd"}
put("calldata", "redeem", bytes.fromhex(calls["redeem"]) + word(10**18))
put("calldata", "transfer", bytes.fromhex(calls["transfer"]) + addr + word(5))
put("calldata", "approve", bytes.fromhex(calls["approve"]) + addr + word(2**256 - 1))
put("calldata", "balanceOf", bytes.fromhex(calls["balanceOf"]) + addr)
put("calldata", "totalSupply", bytes.fromhex(calls["totalSupply"]))
put("calldata", "transferFrom", bytes.fromhex(calls["transferFrom"]) + addr + addr + word(1))
# json: every JSON document in the repository's fixtures and vectors, plus the cases the
# strict parser exists for (duplicate keys, wide integers, deep nesting, surrogates)
docs = sorted((root / "crates/tx/tests").rglob("*.json"))[:200] + sorted((root / "keystore-fixtures").glob("*.json"))
for f in docs:
    put("json", hashlib.sha1(str(f).encode()).hexdigest()[:12], f.read_bytes()[:65536])
for i, t in enumerate(['{"a":1,"a":2}', '18446744073709551616', '-9223372036854775809', '-0', '1e400',
                       '[' * 129 + ']' * 129, '"\\ud83d\\ude00"', '"\\udc00"', '{"x":[1.5e-7,true,null]}', '0.1e+2']):
    put("json", "case" + str(i), t)
print("seeded", sum(1 for _ in out.rglob("seed-*")), "inputs under", out, file=sys.stderr)

# batch_request and signed_batch: the air gap's batch files (crates/tx/src/batch.rs),
# written as `batch prepare` and `bridgectl sign` write them, and a few refusals.
def batch_request(senders):
    items, ranges = [], []
    index = 0
    for sender, first, count in senders:
        ranges.append({"from": sender, "chainId": 31338, "firstNonce": first, "items": count})
        for k in range(count):
            amount = (index + 1) * 10**15
            items.append({
                "index": index, "id": f"item-{index}",
                "txId": f"00000000-0000-4000-8000-{index:012d}",
                "rawTx": {"from": sender, "to": "0x5fbdb2315678afecb367f032d93f642f64180aa3",
                          "data": "0xdb006a75" + f"{amount:064x}", "nonce": hex(first + k),
                          "gasLimit": "0xf57f", "gasPrice": "0x69a1e50d", "chainId": 31338},
                "intent": {"function": "redeem", "args": {"_amount": str(amount)},
                           "to": "0x5fbdb2315678afecb367f032d93f642f64180aa3", "chainId": 31338,
                           "token": {"symbol": "ST", "decimals": 18},
                           "description": f"redeem {amount} base units"}})
            index += 1
    head = ('{\n  "format": "bridgectl-batch-request",\n  "version": 1,\n'
            '  "batchId": "c2c9d523-b76b-41ad-951c-0775047564f4",\n'
            '  "origin": {"source":"payouts.jsonl"},\n  "senders": [\n    ')
    return (head + ",\n    ".join(json.dumps(r, separators=(",", ":")) for r in ranges)
            + '\n  ],\n  "items": [\n    '
            + ",\n    ".join(json.dumps(i, separators=(",", ":")) for i in items) + "\n  ]\n}\n")
B1, B2 = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8", "0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc"
good = batch_request([(B1, 0, 3), (B2, 7, 2)])
put("batch_request", "two-senders", good)
put("batch_request", "one", batch_request([(B1, 5, 1)]))
put("batch_request", "gap", good.replace('"nonce":"0x1"', '"nonce":"0x2"'))
put("batch_request", "duplicate-key", good.replace('"version": 1,', '"version": 1, "version": 1,'))
put("batch_request", "senders-wrong", good.replace('"items":3}', '"items":4}'))
put("batch_request", "truncated", good[: len(good) // 2])
signed_item = {"index": 0, "id": "item-0", "txId": "00000000-0000-4000-8000-000000000000",
               "signedTx": EIP155, "txHash": "0x33469b22e9f636356c4160a87eb19df52b7412e8eac32a4a55ffe88ea8350788",
               "from": "0x9d8a62f656a8d1615c1294fd71e9cfb3e4855a4f", "chainId": 1, "nonce": 9}
signed = ('{\n  "format": "bridgectl-signed-batch",\n  "version": 1,\n'
          '  "batchId": "c2c9d523-b76b-41ad-951c-0775047564f4",\n'
          '  "requestHash": "0x' + "2c" * 32 + '",\n  "items": [\n    '
          + json.dumps(signed_item, separators=(",", ":"))
          + '\n  ],\n  "refused": [\n    {"index":1,"id":"item-1","reason":"policy check failed"}\n  ]\n}\n')
put("signed_batch", "one-of-two", signed)
put("signed_batch", "twice", signed.replace('"index":1,', '"index":0,'))
put("signed_batch", "unknown-field", signed.replace('"refused"', '"refusd"'))
put("signed_batch", "empty", signed.replace(json.dumps(signed_item, separators=(",", ":")), "")
    .replace('[\n    \n  ]', '[]'))
