// An independent BC-UR / EIP-4527 / QR implementation for bridgectl's interop tests
// (tests/qr.rs): Blockchain Commons' UR as @ngraveio/bc-ur implements it, Keystone's
// EIP-4527 registry types, ethereumjs for transactions and signatures, jsQR to read
// PNG frames. Everything comes from tools/node_modules (pinned in tools/package.json,
// installed by `make tools`). Run with the machine's node:
//
//   node tests/interop/ur.mjs request TX_JSON UUID FRAGMENT_LEN   -> UR parts, one a line
//   node tests/interop/ur.mjs decode FILE...                      -> JSON of what they hold
//   node tests/interop/ur.mjs recover TX_JSON SIG_HEX             -> JSON: sender, raw tx
//   node tests/interop/ur.mjs lose K FILE...                      -> JSON: of the sets left
//                                      by losing any K of the files, how many complete
//
// TX_JSON is {"nonce","gasPrice","gasLimit","to","value","data","chainId","from"} as 0x
// hex quantities (chainId a number). FILE is a PNG frame or a text file of UR lines.
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '../../tools/package.json'));
const { UR, UREncoder, URDecoder } = require('@ngraveio/bc-ur');
const { EthSignRequest, ETHSignature, DataType } = require('@keystonehq/bc-ur-registry-eth');
const { decodeToDataItem } = require('@keystonehq/bc-ur-registry');
const { LegacyTransaction } = require('@ethereumjs/tx');
const { Common } = require('@ethereumjs/common');
const { RLP } = require('@ethereumjs/rlp');
const jsQR = require('jsqr');
const { PNG } = require('pngjs');

function common(chainId) {
  return Common.custom({ chainId, networkId: chainId }, { baseChain: 'mainnet' });
}

function tx(fields) {
  return LegacyTransaction.fromTxData(
    {
      nonce: fields.nonce,
      gasPrice: fields.gasPrice,
      gasLimit: fields.gasLimit,
      to: fields.to,
      value: fields.value ?? '0x0',
      data: fields.data ?? '0x',
    },
    { common: common(fields.chainId) },
  );
}

function request([txJson, uuid, fragmentLen]) {
  const fields = JSON.parse(txJson);
  const unsigned = tx(fields);
  // The EIP-155 preimage MetaMask's QR keyring sends: rlp([..., chainId, 0, 0]).
  const signData = Buffer.from(RLP.encode(unsigned.getMessageToSign(false)));
  const req = EthSignRequest.constructETHRequest(
    signData,
    DataType.transaction,
    "m/44'/60'/0'/0/0",
    '12345678',
    uuid,
    fields.chainId,
    fields.from,
    'interop test',
  );
  const encoder = new UREncoder(req.toUR(), Number(fragmentLen));
  const parts = [];
  const n = encoder.fragmentsLength * 2;
  for (let i = 0; i < n; i++) parts.push(encoder.nextPart());
  console.log(parts.join('\n'));
}

function frameTexts(file) {
  const bytes = readFileSync(file);
  if (bytes.subarray(0, 4).toString('latin1') === '\x89PNG') {
    const png = PNG.sync.read(bytes);
    const code = jsQR(new Uint8ClampedArray(png.data), png.width, png.height);
    if (!code) throw new Error(`no QR code in ${file}`);
    return [code.data];
  }
  return bytes.toString('utf8').split('\n').map((l) => l.trim()).filter((l) => l);
}

function decode(files) {
  const decoder = new URDecoder();
  let texts = 0;
  for (const file of files) {
    for (const text of frameTexts(file)) {
      texts++;
      decoder.receivePart(text.toLowerCase());
      if (decoder.isComplete()) break;
    }
    if (decoder.isComplete()) break;
  }
  if (!decoder.isSuccess()) throw new Error(`not complete after ${texts} frames: ${decoder.resultError()}`);
  const ur = decoder.resultUR();
  const out = { type: ur.type, frames: texts, cbor: ur.cbor.toString('hex') };
  if (ur.type === 'eth-signature') {
    const sig = ETHSignature.fromCBOR(ur.cbor);
    out.requestId = formatUuid(sig.getRequestId());
    out.signature = sig.getSignature().toString('hex');
    out.origin = sig.getOrigin() ?? null;
  } else if (ur.type === 'eth-sign-request') {
    const req = EthSignRequest.fromCBOR(ur.cbor);
    out.requestId = formatUuid(req.getRequestId());
    out.signData = req.getSignData().toString('hex');
    out.chainId = req.getChainId();
    out.address = '0x' + req.getSignRequestAddress().toString('hex');
    out.dataType = req.getDataType();
  } else if (ur.type === 'bridgectl-doc') {
    const map = decodeToDataItem(ur.cbor).getData();
    out.kind = map[1];
    out.document = Buffer.from(map[2]).toString('utf8');
  }
  console.log(JSON.stringify(out));
}

function formatUuid(bytes) {
  const h = Buffer.from(bytes).toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

function recover([txJson, sigHex]) {
  const fields = JSON.parse(txJson);
  const sig = Buffer.from(sigHex, 'hex');
  const signed = LegacyTransaction.fromTxData(
    {
      ...tx(fields).toJSON(),
      r: sig.subarray(0, 32),
      s: sig.subarray(32, 64),
      v: sig.subarray(64),
    },
    { common: common(fields.chainId) },
  );
  console.log(JSON.stringify({
    sender: signed.getSenderAddress().toString(),
    valid: signed.verifySignature(),
    raw: '0x' + Buffer.from(signed.serialize()).toString('hex'),
  }));
}

// Every way of losing `k` of the frame files: does the reference decoder rebuild the
// same message from what is left?
function lose([k, ...files]) {
  const texts = files.map((f) => frameTexts(f).map((t) => t.toLowerCase()));
  const whole = new URDecoder();
  texts.flat().forEach((t) => whole.receivePart(t));
  if (!whole.isSuccess()) throw new Error('the whole set does not decode');
  const cbor = whole.resultUR().cbor;
  let sets = 0;
  const failed = [];
  const walk = (start, lost) => {
    if (lost.length === Number(k)) {
      sets++;
      const d = new URDecoder();
      texts.forEach((ts, i) => lost.includes(i) || ts.forEach((t) => d.receivePart(t)));
      if (!(d.isSuccess() && d.resultUR().cbor.equals(cbor))) failed.push(lost.slice());
      return;
    }
    for (let i = start; i < files.length; i++) walk(i + 1, [...lost, i]);
  };
  walk(0, []);
  console.log(JSON.stringify({ files: files.length, sets, failed }));
}

const [command, ...args] = process.argv.slice(2);
({ request, decode, recover, lose })[command](args);
