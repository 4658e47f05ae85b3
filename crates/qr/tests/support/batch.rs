//! Realistic batch documents, as `batch prepare` and the offline signer write them: `n`
//! redeems by a few senders, random txIds, signatures and hashes (a seeded generator).

use alloy_primitives::{Address, B256, Bytes, Signature, U256, keccak256};
use bridgectl_tx::RawTx;
use bridgectl_tx::batch::{
    BatchOrigin, BatchRequest, BatchRequestItem, SignedBatch, SignedBatchItem,
};
use bridgectl_tx::request::Intent;

/// A seeded xorshift64*: the same documents every run.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn bytes<const N: usize>(&mut self) -> [u8; N] {
        std::array::from_fn(|_| self.next() as u8)
    }
}

const TOKEN: Address = Address::repeat_byte(0x35);
const CHAIN: u64 = 31338;

fn items(n: usize, rng: &mut Rng) -> Vec<BatchRequestItem> {
    let senders: Vec<Address> = (0..3).map(|_| Address::from(rng.bytes::<20>())).collect();
    let mut nonces = [17u64, 4, 230];
    (0..n)
        .map(|index| {
            let s = index % senders.len();
            let amount = U256::from(rng.next() % 50_000) * U256::from(10u64).pow(U256::from(15));
            let data = bridgectl_tx::calldata::encode(
                "redeem",
                &[("_amount".to_owned(), amount.to_string())].into(),
            )
            .expect("calldata");
            nonces[s] += 1;
            BatchRequestItem {
                index,
                id: format!("payout-2024-{index:05}"),
                tx_id: uuid::Uuid::from_bytes(rng.bytes()).to_string(),
                raw_tx: RawTx {
                    from: senders[s],
                    to: TOKEN,
                    data: data.into(),
                    nonce: nonces[s] - 1,
                    gas_limit: 120_000,
                    gas_price: 1_000_000_000,
                    chain_id: CHAIN,
                    value: U256::ZERO,
                },
                intent: Intent::redeem(TOKEN, CHAIN, amount),
            }
        })
        .collect()
}

/// A batch request of `n` redeems, its file's bytes.
pub fn request(n: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    let mut items = items(n, &mut rng);
    // `batch prepare` keeps each sender's items in nonce order, one after another.
    items.sort_by_key(|i| (i.raw_tx.from, i.raw_tx.nonce));
    for (index, item) in items.iter_mut().enumerate() {
        item.index = index;
    }
    BatchRequest::new(
        uuid::Uuid::from_bytes(rng.bytes()).to_string(),
        BatchOrigin {
            base_url: Some("https://bridge.example.com".into()),
            profile: Some("treasury".into()),
            source: Some("payouts-2024-06.jsonl".into()),
            created_at: Some("2024-06-30T12:00:00Z".into()),
        },
        items,
    )
    .expect("a batch request")
    .to_bytes()
}

/// The signed batch answering a batch request of `n` redeems, its file's bytes.
pub fn signed(n: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    let items = items(n, &mut rng)
        .into_iter()
        .map(|item| {
            let sig = Signature::new(
                U256::from_be_bytes(rng.bytes::<32>()),
                U256::from_be_bytes(rng.bytes::<32>()),
                rng.next() % 2 == 1,
            );
            let raw: Bytes = bridgectl_tx::local_signing::encode_signed(
                &bridgectl_tx::rawtx::to_legacy(&item.raw_tx),
                &sig,
            );
            SignedBatchItem {
                index: item.index,
                id: item.id,
                tx_id: item.tx_id,
                tx_hash: keccak256(&raw),
                signed_tx: raw,
                from: item.raw_tx.from,
                chain_id: CHAIN,
                nonce: item.raw_tx.nonce,
            }
        })
        .collect();
    SignedBatch {
        batch_id: uuid::Uuid::from_bytes(rng.bytes()).to_string(),
        request_hash: B256::from(rng.bytes::<32>()),
        items,
        refused: Vec::new(),
    }
    .to_bytes()
}
