// Validates an AsyncAPI document with the official parser (@asyncapi/parser, pinned in
// package.json beside this file), offline: the document has no remote references, and
// nothing is fetched. Prints every diagnostic; exits 1 when the parser reports an error or
// a warning, or produces no document, so a broken description fails `make lint`.
//
//   node validate.cjs FILE        (scripts/asyncapi.sh sets NODE_PATH to the parser's install)
"use strict";

const fs = require("fs");
const { Parser, DiagnosticSeverity } = require("@asyncapi/parser");

async function main() {
  const file = process.argv[2];
  if (!file) {
    console.error("usage: validate.cjs FILE");
    process.exit(2);
  }
  const text = fs.readFileSync(file, "utf8");
  const parser = new Parser();
  const { document, diagnostics } = await parser.parse(text, { source: file });
  const names = { 0: "error", 1: "warning", 2: "info", 3: "hint" };
  let failing = 0;
  for (const d of diagnostics) {
    const where = (d.path || []).join(".");
    console.error(`${names[d.severity] || d.severity}: ${d.code}: ${d.message} (at ${where || "the root"})`);
    if (d.severity === DiagnosticSeverity.Error || d.severity === DiagnosticSeverity.Warning) {
      failing += 1;
    }
  }
  if (!document || failing > 0) {
    console.error(`${file}: ${failing} problem(s); not a valid AsyncAPI document`);
    process.exit(1);
  }
  console.log(`${file}: valid AsyncAPI ${document.version()} (${document.channels().length} channels, ${document.operations().length} operations, ${document.messages().length} messages)`);
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
