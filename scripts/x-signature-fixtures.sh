#!/bin/sh
# Writes the webhook signature known answers in crates/webhook/tests/fixtures/x-signature/:
# for each case <name>.body (the raw request body, bytes exact), <name>.key (the webhook's
# signingKey, its UTF-8 bytes are the HMAC key, no trailing newline) and <name>.x-signature
# (the header a sender puts on it), computed here by OpenSSL, outside our code:
#
#   x-signature = lowercase hex of HMAC-SHA256(key bytes, body bytes)
#
# The key goes to OpenSSL as hex (-macopt hexkey:) so every byte is passed exactly, whatever
# it is. A `fail_` case carries a header that must NOT verify: the signature of the body
# before one change (a byte of the body, or the key), as a forger or a corrupted delivery
# would present it.
#
# Rerun after changing a case; commit the outputs. Needs openssl, od and tr.
set -eu

out="$(dirname "$0")/../crates/webhook/tests/fixtures/x-signature"
mkdir -p "$out"
rm -f "$out"/*.body "$out"/*.key "$out"/*.x-signature

hmac() { # hmac KEYFILE BODYFILE -> lowercase hex
	hexkey=$(od -An -v -tx1 "$1" | tr -d ' \n')
	openssl dgst -sha256 -mac HMAC -macopt "hexkey:$hexkey" "$2" | sed 's/^.*= //'
}

case_() { # case_ NAME KEY BODY: writes the three files of a verifying case
	printf '%s' "$2" >"$out/$1.key"
	printf '%s' "$3" >"$out/$1.body"
	hmac "$out/$1.key" "$out/$1.body" >"$out/$1.x-signature"
}

# A delivery as the platform sends one (compact JSON), with a key shaped like the
# sandbox's (64 hex characters: their ASCII bytes are the key, not the decoded bytes).
case_ block_period \
	'5e2c0b1f6a9d4e37c8b0a1f2e3d4c5b6a7980f1e2d3c4b5a69788796a5b4c3d2' \
	'{"subscriptionId":"9001","sequenceNumber":1,"eventType":"BLOCK_PERIOD","subscriptionType":"WEBHOOK","event":{"period":1,"message":{"number":"0x10","hash":"0x2a"}}}'

# Pretty-printed with a trailing newline and non-ASCII text: the raw bytes are signed,
# not a re-serialisation.
case_ pretty_unicode 'pretty-key' '{
  "subscriptionId": "9002",
  "sequenceNumber": 7,
  "eventType": "BLOCK_PERIOD",
  "description": "blocs de la chaîne ✓"
}
'

# A key longer than SHA-256's 64-byte block (HMAC hashes it first).
case_ long_key \
	'a-signing-key-that-is-longer-than-the-sixty-four-byte-block-of-sha-256-so-hmac-hashes-it-first' \
	'{"subscriptionId":"9003","sequenceNumber":3,"eventType":"BLOCK_PERIOD"}'

# A non-ASCII key: its UTF-8 bytes are the key.
case_ utf8_key 'clé-sécrète-🔑' \
	'{"subscriptionId":"9004","sequenceNumber":4,"eventType":"BLOCK_PERIOD"}'

# fail_: one byte of the body changed after signing (sequenceNumber 5 -> 6).
printf '%s' 'tamper-key-0001' >"$out/fail_body_changed.key"
printf '%s' '{"subscriptionId":"9005","sequenceNumber":5,"eventType":"BLOCK_PERIOD"}' >"$out/fail_body_changed.body"
hmac "$out/fail_body_changed.key" "$out/fail_body_changed.body" >"$out/fail_body_changed.x-signature"
printf '%s' '{"subscriptionId":"9005","sequenceNumber":6,"eventType":"BLOCK_PERIOD"}' >"$out/fail_body_changed.body"

# fail_: signed with another key (the right key with its last character changed).
printf '%s' 'tamper-key-0002' >"$out/fail_other_key.key"
printf '%s' '{"subscriptionId":"9006","sequenceNumber":1,"eventType":"BLOCK_PERIOD"}' >"$out/fail_other_key.body"
hmac "$out/fail_other_key.key" "$out/fail_other_key.body" >"$out/fail_other_key.x-signature"
printf '%s' 'tamper-key-0003' >"$out/fail_other_key.key"

ls "$out"
