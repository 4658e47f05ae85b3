// Compiles the Solidity sources of this folder with the pinned solc package from
// <repo>/tools/node_modules (installed by `make tools`) and writes artifacts/<Name>.json
// ({contractName, compiler, abi, bytecode}). Called by build.sh; see there.
"use strict";
const fs = require("fs");
const path = require("path");

const here = __dirname;
const repo = path.resolve(here, "../../..");
const solc = require(path.join(repo, "tools/node_modules/solc"));
const out = process.argv[2] || path.join(here, "artifacts");
const names = ["MainToken", "SideToken"];

const input = {
  language: "Solidity",
  sources: Object.fromEntries(
    names.map((n) => [`${n}.sol`, { content: fs.readFileSync(path.join(here, `${n}.sol`), "utf8") }]),
  ),
  settings: {
    // paris: no PUSH0, so the bytecode runs whatever hardfork anvil is started with.
    evmVersion: "paris",
    optimizer: { enabled: true, runs: 200 },
    outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } },
  },
};
const output = JSON.parse(solc.compile(JSON.stringify(input)));
const errors = (output.errors || []).filter((e) => e.severity === "error");
if (errors.length > 0) {
  for (const e of errors) console.error(e.formattedMessage);
  process.exit(1);
}
fs.mkdirSync(out, { recursive: true });
for (const n of names) {
  const c = output.contracts[`${n}.sol`][n];
  const artifact = {
    contractName: n,
    compiler: `solc ${solc.version()}, optimizer 200 runs, evm paris`,
    abi: c.abi,
    bytecode: "0x" + c.evm.bytecode.object,
  };
  fs.writeFileSync(path.join(out, `${n}.json`), JSON.stringify(artifact, null, 2) + "\n");
}
