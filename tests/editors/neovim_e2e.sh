#!/usr/bin/env bash
# Runs tests/editors/neovim_e2e.lua in a headless Neovim against `ddplint server`.
# Usage: neovim_e2e.sh DDPLINT_BIN FIXTURE
# Exit 77 (ctest: skipped) when nvim is missing outside CI; in CI it is a failure.
set -euo pipefail
bin=$1
fixture=$2
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v nvim >/dev/null 2>&1; then
  echo "neovim e2e: nvim is not installed (./build.sh setup installs Debian's neovim)" >&2
  [ "${CI:-}" = "true" ] && exit 1
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$fixture" "$work/train.py"  # the test edits the buffer; the copy keeps the fixture safe
"$bin" --extend-select DDP102 --format json "$work/train.py" >"$work/expected.json" || [ $? -eq 1 ]
export DDPLINT_BIN="$bin" DDPLINT_FIXTURE="$work/train.py" DDPLINT_EXPECTED="$work/expected.json"
export XDG_CONFIG_HOME="$work/config" XDG_DATA_HOME="$work/data" XDG_STATE_HOME="$work/state" XDG_CACHE_HOME="$work/cache"
timeout 120 nvim --headless --clean -n -i NONE -c "luafile $here/neovim_e2e.lua" -c "cquit 3" </dev/null
