//! Edges of the verifier that the mutation run (`bench/mutants.sh`) found untested: the
//! fee cap is inclusive, and `exactly` pins the calldata as well as the callee.

use alloy_primitives::{Address, Bytes, U256};
use bridgectl_tx::verify::exactly;
use bridgectl_tx::{RawTx, verify};

fn redeem() -> RawTx {
    RawTx {
        from: "0x9d8A62f656a8d1615C1294fd71e9CFb3E4855A4F"
            .parse()
            .expect("from"),
        to: Address::repeat_byte(0x35),
        data: Bytes::from(
            hex::decode("db006a750000000000000000000000000000000000000000000000000de0b6b3a7640000")
                .expect("hex"),
        ),
        nonce: 4,
        gas_limit: 100_000,
        gas_price: 1_000_000_000,
        chain_id: 617_317,
        value: U256::ZERO,
    }
}

#[test]
fn a_fee_equal_to_the_cap_is_allowed_and_one_wei_over_is_refused() {
    let tx = redeem();
    let (mut policy, context) = exactly(&tx);
    let fee = U256::from(tx.gas_limit) * U256::from(tx.gas_price);
    policy.max_fee = Some(fee);
    verify(&tx, None, &policy, &context).expect("a fee equal to the cap");
    policy.max_fee = Some(fee - U256::from(1));
    let err = verify(&tx, None, &policy, &context).expect_err("one wei over the cap");
    assert!(err.is_refusal(), "{err}");
    assert!(err.to_string().contains("maxFee"), "{err}");
}

#[test]
fn exactly_accepts_its_own_transaction_and_no_other_calldata() {
    let tx = redeem();
    let (policy, context) = exactly(&tx);
    verify(&tx, None, &policy, &context).expect("its own transaction");
    let mut other = tx.clone();
    // The same function, another amount.
    let mut data = other.data.to_vec();
    *data.last_mut().expect("data") ^= 1;
    other.data = Bytes::from(data);
    let err = verify(&other, None, &policy, &context).expect_err("other calldata");
    assert!(err.is_refusal(), "{err}");
    assert!(err.to_string().contains("data"), "{err}");
}
