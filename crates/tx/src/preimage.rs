//! The unsigned legacy transaction as bytes: its EIP-155 signing preimage
//! (`rlp([nonce, gasPrice, gasLimit, to, value, data, chainId, 0, 0])`), which is what
//! an EIP-4527 `eth-sign-request` carries as its sign data, and the signed transaction
//! rebuilt from it and an `r`, `s`, `v` that came back (an EIP-4527 `eth-signature`).
//!
//! Both directions are strict: the preimage is read with alloy-rlp's canonical decoding
//! and must encode back to exactly the bytes given (what is shown is what is signed), and
//! a returned signature must recover to the transaction's sender on its chain.

use alloy_consensus::SignableTransaction;
use alloy_primitives::{Address, Bytes, Signature, U256};
use alloy_rlp::{Decodable, Header};

use crate::Error;
use crate::rawtx::{RawTx, SignedTx, to_legacy};

/// The EIP-155 signing preimage of `tx`: the bytes whose keccak256 its key signs.
pub fn encode(tx: &RawTx) -> Vec<u8> {
    let mut out = Vec::new();
    to_legacy(tx).encode_for_signing(&mut out);
    out
}

fn malformed(reason: impl std::fmt::Display) -> Error {
    Error::Malformed {
        reason: format!("signing data: {reason}"),
        source: None,
    }
}

/// Reads an EIP-155 signing preimage as the transaction `from` asks to sign on chain
/// `chain_id` (both from the request that carried it). Refuses a pre-EIP-155 preimage
/// (no chain id), another chain id than `chain_id`, contract creation, a gas price
/// above 2^128, a non-zero `r`/`s` placeholder, and any encoding that is not exactly
/// canonical RLP.
pub fn decode(bytes: &[u8], from: Address, chain_id: u64) -> Result<RawTx, Error> {
    let rlp = |field: &str, e: alloy_rlp::Error| malformed(format!("{field}: {e}"));
    let mut buf = bytes;
    let header = Header::decode(&mut buf).map_err(|e| rlp("list", e))?;
    if !header.list {
        return Err(malformed("an RLP string, not the list of a transaction"));
    }
    if header.payload_length != buf.len() {
        return Err(malformed(format!(
            "the list says {} bytes, {} follow",
            header.payload_length,
            buf.len()
        )));
    }
    let nonce = u64::decode(&mut buf).map_err(|e| rlp("nonce", e))?;
    let gas_price = U256::decode(&mut buf).map_err(|e| rlp("gasPrice", e))?;
    let gas_price = u128::try_from(gas_price)
        .map_err(|_| malformed(format!("gasPrice {gas_price} is above 2^128")))?;
    let gas_limit = u64::decode(&mut buf).map_err(|e| rlp("gasLimit", e))?;
    if buf.first() == Some(&alloy_rlp::EMPTY_STRING_CODE) {
        return Err(malformed("to is empty: contract creation is never signed"));
    }
    let to = Address::decode(&mut buf).map_err(|e| rlp("to", e))?;
    let value = U256::decode(&mut buf).map_err(|e| rlp("value", e))?;
    let data = Bytes::decode(&mut buf).map_err(|e| rlp("data", e))?;
    if buf.is_empty() {
        return Err(malformed(
            "no chainId: a pre-EIP-155 preimage, refusing to sign without replay protection",
        ));
    }
    let signed_chain = u64::decode(&mut buf).map_err(|e| rlp("chainId", e))?;
    for field in ["r", "s"] {
        if buf.first() != Some(&alloy_rlp::EMPTY_STRING_CODE) {
            return Err(malformed(format!(
                "the EIP-155 {field} placeholder must be empty (0x80)"
            )));
        }
        buf = &buf[1..];
    }
    if !buf.is_empty() {
        return Err(malformed(format!(
            "{} byte(s) after the EIP-155 fields",
            buf.len()
        )));
    }
    if signed_chain == 0 || chain_id == 0 {
        return Err(Error::ZeroChainId);
    }
    if signed_chain != chain_id {
        return Err(malformed(format!(
            "chainId: the preimage signs for chain {signed_chain}, the request names chain \
             {chain_id}"
        )));
    }
    let tx = RawTx {
        from,
        to,
        data,
        nonce,
        gas_limit,
        gas_price,
        chain_id,
        value,
    };
    if encode(&tx) != bytes {
        return Err(malformed("not in canonical RLP"));
    }
    Ok(tx)
}

/// `tx` signed with `r`, `s` and `v` (returned by a signer for its preimage): `v` may be
/// EIP-155's `35 + 2 * chainId + parity` for `tx`'s chain, `27 + parity` or the bare
/// parity (the transaction is EIP-155 whatever form `v` took, since the preimage was).
/// The result must decode and recover to `tx.from` with every field equal.
pub fn with_signature(tx: &RawTx, r: U256, s: U256, v: u128) -> Result<SignedTx, Error> {
    let eip155 = 35 + 2 * u128::from(tx.chain_id);
    let parity = match v {
        0 | 1 => v == 1,
        27 | 28 => v == 28,
        _ if v == eip155 || v == eip155 + 1 => v == eip155 + 1,
        _ => {
            return Err(Error::InvalidSignature(format!(
                "v {v} is neither {eip155} or {} (EIP-155 on chain {}) nor 27, 28, 0 or 1",
                eip155 + 1,
                tx.chain_id
            )));
        }
    };
    let sig = Signature::new(r, s, parity);
    let raw = crate::local_signing::encode_signed(&to_legacy(tx), &sig);
    crate::decode::check_signed_by(&raw, tx)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The EIP-155 example transaction and its published signature.
    fn eip155() -> RawTx {
        RawTx {
            from: "0x9d8A62f656a8d1615C1294fd71e9CFb3E4855A4F"
                .parse()
                .expect("from"),
            to: "0x3535353535353535353535353535353535353535"
                .parse()
                .expect("to"),
            data: Bytes::new(),
            nonce: 9,
            gas_limit: 21000,
            gas_price: 20_000_000_000,
            chain_id: 1,
            value: U256::from(10u64).pow(U256::from(18u64)),
        }
    }

    #[test]
    fn the_eip155_preimage_round_trips_and_takes_its_published_signature() {
        let tx = eip155();
        let pre = encode(&tx);
        // The preimage EIP-155 publishes for its example.
        assert_eq!(
            hex::encode(&pre),
            "ec098504a817c800825208943535353535353535353535353535353535353535880de0b6b3a764000080018080"
        );
        assert_eq!(decode(&pre, tx.from, 1).expect("decode"), tx);
        let r: U256 = "0x28ef61340bd939bc2195fe537567866003e1a15d3c71ff63e1590620aa636276"
            .parse()
            .expect("r");
        let s: U256 = "0x67cbe9d8997f761aecb703304b3800ccf555c9f3dc64214b297fb1966a3b6d83"
            .parse()
            .expect("s");
        let want = "f86c098504a817c800825208943535353535353535353535353535353535353535880de0b6b3a76400008025a028ef61340bd939bc2195fe537567866003e1a15d3c71ff63e1590620aa636276a067cbe9d8997f761aecb703304b3800ccf555c9f3dc64214b297fb1966a3b6d83";
        for v in [37, 27, 0] {
            let signed = with_signature(&tx, r, s, v).expect("signed");
            assert_eq!(hex::encode(&signed.raw), want, "v {v}");
        }
        // The other parity recovers to someone else; v for another chain is refused.
        assert!(with_signature(&tx, r, s, 38).is_err());
        let e = with_signature(&tx, r, s, 35 + 2 * 5).expect_err("chain 5");
        assert!(e.to_string().contains("EIP-155 on chain 1"), "{e}");
    }

    #[test]
    fn preimages_bridgectl_would_not_sign_are_refused() {
        let tx = eip155();
        let pre = encode(&tx);
        let pre155 = hex::decode(
            "e9098504a817c800825208943535353535353535353535353535353535353535880de0b6b3a764000080",
        )
        .expect("hex");
        let mut other_chain = pre.clone();
        let at = other_chain.len() - 3;
        other_chain[at] = 0x05;
        let mut trailing = pre.clone();
        trailing.push(0x80);
        let mut r_set = pre.clone();
        let last = r_set.len() - 1;
        r_set[last] = 0x01;
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (pre155, "pre-EIP-155"),
            (other_chain, "signs for chain 5"),
            (trailing, "the list says"),
            (r_set, "placeholder must be empty"),
            (vec![0x80], "an RLP string"),
            (Vec::new(), "signing data: list"),
        ];
        for (bytes, want) in cases {
            let e = decode(&bytes, tx.from, 1).expect_err(want).to_string();
            assert!(e.contains(want), "{e:?} lacks {want:?}");
        }
        let e = decode(&pre, tx.from, 5).expect_err("chain").to_string();
        assert!(e.contains("the request names chain 5"), "{e}");
    }
}
