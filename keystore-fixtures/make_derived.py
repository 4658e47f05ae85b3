#!/usr/bin/env python3
"""Writes the fixtures that are derived by hand rather than by a tool: the published
Web3 v3 vectors, and every fail_* case (tampered copies of v1_test_cost.key and of the
vectors). Then writes manifest.json. Run from this folder; the tool-made files (v1_*,
cast_*, eth_account_*, ethers_v6) must already be here. Re-running changes nothing but
manifest.json's order-stable content."""
import json, os

def dump(name, obj, passphrase):
    with open(name, "w") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")
    with open(name.rsplit(".", 1)[0] + ".passphrase", "w") as f:
        f.write(passphrase + "\n")

VECTOR_ADDRESS = "0x008AeEda4D805471dF9b2A5B0f38A0C3bCBA786b"
pbkdf2 = {"crypto": {"cipher": "aes-128-ctr", "cipherparams": {"iv": "6087dab2f9fdbbfaddc31a909735c1e6"},
  "ciphertext": "5318b4d5bcd28de64ee5559e671353e16f075ecae9f99c7a79a38af5f869aa46", "kdf": "pbkdf2",
  "kdfparams": {"c": 262144, "dklen": 32, "prf": "hmac-sha256", "salt": "ae3cd4e7013836a3df6bd7241b12db061dbe2c6785853cce422d148a624ce0bd"},
  "mac": "517ead924a9d0dc3124507e3393d175ce3ff7c1e96529c6c555ce9e51205e9b2"},
  "id": "3198bc9c-6672-5ab3-d995-4942343ae5b6", "version": 3}
scrypt_r1p8 = {"crypto": {"cipher": "aes-128-ctr", "cipherparams": {"iv": "83dbcc02d8ccb40e466191a123791e0e"},
  "ciphertext": "d172bf743a674da9cdad04534d56926ef8358534d458fffccd4e6ad2fbde479c", "kdf": "scrypt",
  "kdfparams": {"dklen": 32, "n": 262144, "r": 1, "p": 8, "salt": "ab0c7876052600dd703518d6fc3fe8984592145b591fc8fb5c6d43190334ba19"},
  "mac": "2103ac29920d71da29f15d75b4a16dbe95cfd7ff8faea1056c33131d846e3097"},
  "id": "3198bc9c-6672-5ab3-d995-4942343ae5b6", "version": 3}
ethereum_org = {"crypto": {"cipher": "aes-128-ctr", "cipherparams": {"iv": "740770fce12ce862af21264dab25f1da"},
  "ciphertext": "dd8a1132cf57db67c038c6763afe2cbe6ea1949a86abc5843f8ca656ebbb1ea2", "kdf": "scrypt",
  "kdfparams": {"dklen": 32, "n": 262144, "p": 1, "r": 8, "salt": "25710c2ccd7c610b24d068af83b959b7a0e5f40641f0c82daeb1345766191034"},
  "mac": "337aeb86505d2d0bb620effe57f18381377d67d76dac1090626aa5cd20886a7c"},
  "id": "3198bc9c-6672-5ab3-d995-4942343ae5b6", "version": 3}

def geth_short(iv, ct, salt, mac, id_):
    return {"crypto": {"cipher": "aes-128-ctr", "cipherparams": {"iv": iv}, "ciphertext": ct, "kdf": "scrypt",
      "kdfparams": {"dklen": 32, "n": 2, "r": 8, "p": 1, "salt": salt}, "mac": mac}, "id": id_, "version": 3}

manifest = {}
def ok(name, address, source):
    manifest[name] = {"address": address, "source": source}
def fail(name, error, source):
    manifest[name] = {"error": error, "source": source}

dump("web3_pbkdf2_vector.json", pbkdf2, "testpassword")
ok("web3_pbkdf2_vector.json", VECTOR_ADDRESS, "Web3 Secret Storage PBKDF2 vector (ethereum.org, geth, ethereum/tests agree)")
dump("web3_scrypt_vector_r1_p8.json", scrypt_r1p8, "testpassword")
ok("web3_scrypt_vector_r1_p8.json", VECTOR_ADDRESS, "geth wikipage_test_vector_scrypt = ethereum/tests test2: scrypt n=2^18 r=1 p=8")
dump("geth_31_byte_key.json", geth_short("e0c41130a323adc1446fc82f724bca2f", "9517cd5bdbe69076f9bf5057248c6c050141e970efa36ce53692d5d59a3984",
  "711f816911c92d649fb4c84b047915679933555030b3552c1212609b38208c63", "d5e116151c6aa71470e67a7d42c9620c75c4d23229847dcc127794f0732b0db5",
  "fecfc4ce-e956-48fd-953b-30f8b52ed66c"), "foo")
ok("geth_31_byte_key.json", "0xd1E64E5480bFaf733Ba7D48712DEcb8227797a4e", "geth v3_test_vector.json 31_byte_key (left-pad; address from `cast wallet address`)")
dump("geth_30_byte_key.json", geth_short("3ca92af36ad7c2cd92454c59cea5ef00", "108b7d34f3442fc26ab1ab90ca91476ba6bfa8c00975a49ef9051dc675aa",
  "d0769e608fb86cda848065642a9c6fa046845c928175662b8e356c77f914cd3b", "75d0e6759f7b3cefa319c3be41680ab6beea7d8328653474bd06706d4cc67420",
  "a37e1559-5955-450d-8075-7b8931b392b2"), "foo")
ok("geth_30_byte_key.json", "0x31e9D1e6D844bd3a536800Ef8d8Be6A9975Db509", "geth v3_test_vector.json 30_byte_key (left-pad; address from `cast wallet address`)")
ok("cast_wallet_new.json", "0x8906B234bB5ec5dd9881F9BFf966090c966A631e", "`cast wallet new` (foundry cast 1.7.1, the pinned npm package)")
ok("eth_account_scrypt.json", "0x01C12b5BE0BcD674D7898BA916C5e8b917d031Fe", "eth-account 0.14.0 Account.encrypt (scrypt default)")
ok("eth_account_pbkdf2.json", "0xc3173Eb7030c690017eC5754E0cF7f7A5401fE77", "eth-account 0.14.0 Account.encrypt(kdf='pbkdf2')")
ok("ethers_v6.json", "0xc265a2BDFc57f3e9A7AD85D6b48E2CEaf241Cd2B", "ethers 6.17.0 Wallet.encryptSync (`Crypto` with a capital C)")
ok("v1_test_cost.key", "0x9d8A62f656a8d1615C1294fd71e9CFb3E4855A4F", "bridgectl key import --raw --unsafe-test-kdf (format v1)")
ok("v1_default_cost.key", "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266", "bridgectl key import --raw, default cost (format v1)")

dump("fail_web3_ethereum_org_broken_vector.json", ethereum_org, "testpassword")
fail("fail_web3_ethereum_org_broken_vector.json", "wrong_passphrase", "ethereum.org scrypt vector: published mac/derived key are wrong")
# The MAC and address checks come after the key derivation, whatever the KDF: these two are
# made from geth's vector of scrypt n=2, so the refusal costs no more than the check (the
# costly vectors above are derived once each, where reading them is what is tested).
geth_31 = json.load(open("geth_31_byte_key.json"))
bad = json.loads(json.dumps(geth_31)); bad["crypto"]["mac"] = "0" + bad["crypto"]["mac"][1:]
dump("fail_web3_flipped_mac.json", bad, "foo"); fail("fail_web3_flipped_mac.json", "wrong_passphrase", "geth 31_byte_key vector (scrypt n=2), mac changed")
bad = json.loads(json.dumps(geth_31)); bad["address"] = "9d8a62f656a8d1615c1294fd71e9cfb3e4855a4f"
dump("fail_web3_address_mismatch.json", bad, "foo"); fail("fail_web3_address_mismatch.json", "address_mismatch", "geth 31_byte_key vector (scrypt n=2) with another key's address")
bad = json.loads(json.dumps(scrypt_r1p8)); bad["crypto"]["kdfparams"].update(n=1 << 30, r=8, p=1)
dump("fail_web3_scrypt_excessive.json", bad, "testpassword"); fail("fail_web3_scrypt_excessive.json", "excessive_work", "scrypt n=2^30 r=8 (128 GiB): refused before deriving")
bad = json.loads(json.dumps(scrypt_r1p8)); bad["crypto"]["kdfparams"].update(n=1 << 20, r=8, p=16)
dump("fail_web3_scrypt_excessive_p.json", bad, "testpassword"); fail("fail_web3_scrypt_excessive_p.json", "excessive_work", "scrypt n=2^20 r=8 p=16 (16 GiB of work)")
bad = json.loads(json.dumps(pbkdf2)); bad["crypto"]["kdfparams"]["c"] = 2**31
dump("fail_web3_pbkdf2_excessive.json", bad, "testpassword"); fail("fail_web3_pbkdf2_excessive.json", "excessive_work", "pbkdf2 c=2^31")
with open("fail_web3_truncated.json", "w") as f:
    f.write(json.dumps(pbkdf2)[:150])
open("fail_web3_truncated.passphrase", "w").write("testpassword\n")
fail("fail_web3_truncated.json", "malformed", "pbkdf2 vector cut at 150 bytes")

base = json.load(open("v1_test_cost.key"))
PASS = open("v1_test_cost.passphrase").read().rstrip("\n")
def v1(name, error, what, edit):
    obj = json.loads(json.dumps(base)); edit(obj)
    dump(name, obj, PASS); fail(name, error, what)
def setk(*path_value):
    *path, value = path_value
    def edit(o):
        for k in path[:-1]: o = o[k]
        o[path[-1]] = value
    return edit
v1("fail_v1_tampered_format.key", "malformed", "format renamed", setk("format", "other-key"))
v1("fail_v1_unknown_version.key", "unsupported_version", "version 2 (not yet written by anyone)", setk("version", 2))
v1("fail_v1_tampered_address.key", "wrong_passphrase", "address replaced by another valid EIP-55 address", setk("address", "0x2c7536E3605D9C16a7a3D7b1898e529396a65c23"))
v1("fail_v1_tampered_address_case.key", "malformed", "address lowercased (checksum lost)", setk("address", base["address"].lower()))
v1("fail_v1_tampered_label.key", "wrong_passphrase", "label changed", setk("label", "fixture-renamed"))
v1("fail_v1_tampered_id.key", "wrong_passphrase", "id changed", setk("id", "00000000-0000-4000-8000-000000000000"))
v1("fail_v1_tampered_created_at.key", "wrong_passphrase", "created_at changed", setk("created_at", "2020-01-01T00:00:00Z"))
v1("fail_v1_tampered_kdf_algorithm.key", "unsupported", "kdf.algorithm argon2i", setk("kdf", "algorithm", "argon2i"))
v1("fail_v1_tampered_kdf_version.key", "unsupported", "kdf.version 16", setk("kdf", "version", 16))
v1("fail_v1_tampered_kdf_m.key", "wrong_passphrase", "kdf.m_kib doubled", setk("kdf", "m_kib", base["kdf"]["m_kib"] * 2))
v1("fail_v1_tampered_kdf_t.key", "wrong_passphrase", "kdf.t + 1", setk("kdf", "t", base["kdf"]["t"] + 1))
v1("fail_v1_tampered_kdf_p.key", "wrong_passphrase", "kdf.p + 1", setk("kdf", "p", base["kdf"]["p"] + 1))
v1("fail_v1_tampered_kdf_salt.key", "wrong_passphrase", "kdf.salt first byte changed", setk("kdf", "salt", ("00" if base["kdf"]["salt"][:2] != "00" else "ff") + base["kdf"]["salt"][2:]))
v1("fail_v1_tampered_cipher_algorithm.key", "unsupported", "cipher.algorithm chacha20-poly1305", setk("cipher", "algorithm", "chacha20-poly1305"))
v1("fail_v1_tampered_cipher_nonce.key", "wrong_passphrase", "cipher.nonce first byte changed", setk("cipher", "nonce", ("00" if base["cipher"]["nonce"][:2] != "00" else "ff") + base["cipher"]["nonce"][2:]))
def flip(pos):
    def edit(o):
        ct = bytearray.fromhex(o["ciphertext"]); ct[pos] ^= 1; o["ciphertext"] = ct.hex()
    return edit
v1("fail_v1_flipped_ciphertext.key", "wrong_passphrase", "one bit of the encrypted key flipped", flip(5))
v1("fail_v1_flipped_tag.key", "wrong_passphrase", "one bit of the GCM tag flipped", flip(40))
v1("fail_v1_short_ciphertext.key", "malformed", "ciphertext missing its last byte", lambda o: o.update(ciphertext=o["ciphertext"][:-2]))
v1("fail_v1_short_salt.key", "malformed", "kdf.salt missing its last byte", lambda o: o["kdf"].update(salt=o["kdf"]["salt"][:-2]))
v1("fail_v1_long_nonce.key", "malformed", "cipher.nonce with one byte more", lambda o: o["cipher"].update(nonce=o["cipher"]["nonce"] + "00"))
v1("fail_v1_zero_passes.key", "malformed", "kdf.t = 0 (argon2 needs at least 1)", setk("kdf", "t", 0))
v1("fail_v1_unknown_field.key", "malformed", "an extra field (not covered by the AAD, so refused)", setk("comment", "hello"))
v1("fail_v1_missing_field.key", "malformed", "created_at removed", lambda o: o.pop("created_at"))
v1("fail_v1_excessive_memory.key", "excessive_work", "kdf.m_kib = 4 GiB", setk("kdf", "m_kib", 4 * 1024 * 1024))
v1("fail_v1_excessive_passes.key", "excessive_work", "kdf.t = 1000", setk("kdf", "t", 1000))
v1("fail_v1_excessive_lanes.key", "excessive_work", "kdf.p = 255", setk("kdf", "p", 255))
raw = open("v1_test_cost.key").read()
open("fail_v1_truncated.key", "w").write(raw[: len(raw) // 2])
open("fail_v1_truncated.passphrase", "w").write(PASS + "\n")
fail("fail_v1_truncated.key", "malformed", "file cut in half")
open("fail_v1_wrong_passphrase.key", "w").write(raw)
open("fail_v1_wrong_passphrase.passphrase", "w").write("not the passphrase\n")
fail("fail_v1_wrong_passphrase.key", "wrong_passphrase", "intact v1_test_cost.key with a wrong passphrase")

# Written by hand (a duplicate key cannot come out of json.dump): listed, not written.
fail("fail_v1_duplicate_address.key", "malformed", "address given twice, the second another key's: one file, two claims")
fail("fail_web3_duplicate_key.json", "malformed", "eth_account_scrypt.json with a top-level key given twice")

with open("manifest.json", "w") as f:
    json.dump(dict(sorted(manifest.items())), f, indent=2)
    f.write("\n")
print(len(manifest), "fixtures")
