#!/usr/bin/env bash
# The packages for real (issue 25): CPack builds the .deb and the .tar.gz from
# this build, and each is used as a user would use it.
#   - .deb: its Depends comes from dpkg-shlibdeps and names runtime packages,
#     never a -dev one, and none of the libraries linked from Debian's static
#     archives (DDPLINT_STATIC_LIBS: libgit2 and what it calls, toml++,
#     libstdc++); the program's NEEDED entries name none of them either; `dpkg-deb -x` unpacks it into a temporary folder, and
#     that program lints the examples with the build's findings, and runs as
#     the pre-commit hook (tests/precommit/precommit_e2e.sh with that binary).
#   - .tar.gz: unpacked, its program runs with an empty environment, and every
#     library it loads but glibc's comes from the tree (RPATH $ORIGIN), and the
#     tree bundles only libraries Debian ships no static archive of (mimalloc,
#     Kerberos's GSSAPI and what it loads); the glibc version it needs is printed.
#   - .vsix: the VS Code extension (editors/vscode, compiled) with the
#     .tar.gz's tree as its bundled ddplint, packaged by the pinned @vscode/vsce
#     for linux-x64 into BUILD_DIR/ddplint-linux-x64.vsix; its bundled program,
#     unpacked from the archive, lints the examples with the build's findings.
# Usage: packages_e2e.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
for tool in cpack dpkg-deb dpkg-shlibdeps file objdump; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "packages e2e: $tool is not installed (./build.sh setup installs it)" >&2
    [ "${CI:-}" = "true" ] && exit 1
    exit 77
  fi
done
fail() { echo "packages e2e: $*" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

(cd "$build" && cpack --config CPackConfig.cmake -B "$work/out" >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log" >&2; fail "cpack failed"; }
deb=$(ls "$work"/out/*.deb)
tgz=$(ls "$work"/out/*.tar.gz)
echo "built: $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB), $(basename "$tgz") ($(du -k "$tgz" | cut -f1) KiB)"

# --- .deb ---------------------------------------------------------------------
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
cache_value() { sed -n "s/^$1:BOOL=//p" "$build/CMakeCache.txt"; }
[[ "$depends" == *libc6* ]] || fail "Depends does not name libc6: $depends"
if [ "$(cache_value DDPLINT_MIMALLOC)" != OFF ]; then
  [[ "$depends" == *libmimalloc* ]] || fail "Depends does not name libmimalloc: $depends"
fi
# Linked from Debian's static archives (DDPLINT_STATIC_LIBS, the default):
# libgit2 and the libraries it calls, toml++ (header-only), and, except in the
# sanitizer build (whose runtime needs the shared C++ library), libstdc++ and libgcc.
static_libs=$(cache_value DDPLINT_STATIC_LIBS)
static_names='libgit2|libmbed|libssh2|libhttp.parser|libpcre2|libz[.-]|zlib|libcrypto|libssl|libtomlplusplus'
[ "$(cache_value DDPLINT_SANITIZE)" = ON ] || static_names="$static_names|libstdc[+][+]|libgcc"
if [ "$static_libs" = ON ]; then
  ! grep -q -E "$static_names" <<<"$depends" || fail "Depends names a library linked statically: $depends"
  needed=$(objdump -p "$build/ddplint" | awk '/NEEDED/ {print $2}')
  echo "the program's shared libraries: $(echo $needed)"
  ! grep -E "^($static_names)" <<<"$needed" || fail "the program loads a library Debian ships a static archive of"
fi
[[ "$depends" != *-dev* ]] || fail "Depends names a -dev package: $depends"
dpkg-deb -x "$deb" "$work/deb"
deb_bin="$work/deb/usr/bin/ddplint"
[ -x "$deb_bin" ] || fail "the .deb has no usr/bin/ddplint"
[ -f "$work/deb/usr/share/doc/ddplint/rules.md" ] || fail "the .deb has no rules.md"
[ ! -e "$work/deb/usr/lib/ddplint" ] || fail "the .deb carries bundled libraries"
lint_examples() {  # PROGRAM: its findings on the examples, as JSON lines of code and place
  (cd "$src" && "$1" --isolated --no-cache --format json-lines examples || true)
}
expected=$(lint_examples "$build/ddplint")
[ -n "$expected" ] || fail "the build's program found nothing in examples/"
actual=$(lint_examples "$deb_bin")
[ "$actual" = "$expected" ] || fail "the .deb's program finds other things in examples/ than the build's"
echo "the .deb's program: $(printf '%s\n' "$actual" | wc -l) findings in examples/, as the build's"
bash "$src/tests/precommit/precommit_e2e.sh" "$deb_bin" "$src" || fail "pre-commit with the .deb's program failed"

# --- .tar.gz ------------------------------------------------------------------
mkdir "$work/tgz"
tar xzf "$tgz" -C "$work/tgz"
top=$(ls -d "$work"/tgz/ddplint-*)
env -i "$top/bin/ddplint" --version >/dev/null || fail "the .tar.gz's program does not start with an empty environment"
outside=$(env -i /usr/bin/ldd "$top/bin/ddplint" | awk '/=>/ {print $1, $3}' |
  grep -v -E "^(libc|libm|libpthread|libdl|librt|libresolv|libutil)[.]so" | grep -v " $top/" || true)
[ -z "$outside" ] || fail "libraries loaded from outside the tree: $outside"
actual=$(lint_examples "$top/bin/ddplint")
[ "$actual" = "$expected" ] || fail "the .tar.gz's program finds other things in examples/ than the build's"
bundled=$(cd "$top/lib/ddplint" && ls)
echo "bundled beside the .tar.gz's program: $(echo $bundled)"
if [ "$static_libs" = ON ]; then
  ! grep -E "^($static_names)" <<<"$bundled" || fail "the .tar.gz bundles a library that is linked statically"
fi
glibc=$(for f in "$top/bin/ddplint" "$top"/lib/ddplint/*.so*; do objdump -T "$f" 2>/dev/null; done |
  grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
echo "the .tar.gz's program and libraries need glibc ${glibc#GLIBC_} or newer"

# --- .vsix --------------------------------------------------------------------
ext="$src/editors/vscode"
[ -x "$ext/node_modules/.bin/vsce" ] || fail "@vscode/vsce is not installed in editors/vscode (./build.sh setup installs it)"
mkdir "$work/ext"
cp "$ext/package.json" "$ext/package-lock.json" "$ext/.vscodeignore" "$ext/tsconfig.json" "$work/ext/"
cp -r "$ext/src" "$work/ext/src"
node "$ext/node_modules/typescript/bin/tsc" -p "$ext" --outDir "$work/ext/out" || fail "the extension does not compile"
# the runtime dependencies only (vscode-languageclient), as the .vsix carries them
(cd "$work/ext" && npm ci --omit=dev --ignore-scripts --prefer-offline --no-audit --no-fund >"$work/npm.log" 2>&1) ||
  { cat "$work/npm.log" >&2; fail "npm ci --omit=dev failed for the extension"; }
mkdir "$work/ext/bundled"
tar xzf "$tgz" -C "$work/ext/bundled" --strip-components=1
vsix="$build/ddplint-linux-x64.vsix"
(cd "$work/ext" && node "$ext/node_modules/@vscode/vsce/vsce" package --target linux-x64 --skip-license --out "$vsix" \
  >"$work/vsce.log" 2>&1) || { cat "$work/vsce.log" >&2; fail "vsce package failed"; }
python3 - "$vsix" "$work/vsix" <<'PY' || fail "the .vsix lacks a part"
import os, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
names = set(z.namelist())
for needed in ("extension/package.json", "extension/out/extension.js", "extension/bundled/bin/ddplint",
               "extension/node_modules/vscode-languageclient/package.json"):
    if needed not in names:
        sys.exit(f"missing {needed}")
if not (z.getinfo("extension/bundled/bin/ddplint").external_attr >> 16) & 0o100:
    sys.exit("extension/bundled/bin/ddplint is not executable in the archive")
for info in z.infolist():  # unpacked as VS Code unpacks it, modes kept
    if info.filename.startswith("extension/bundled/"):
        out = z.extract(info, sys.argv[2])
        os.chmod(out, (info.external_attr >> 16) & 0o777 or 0o644)
PY
actual=$(lint_examples "$work/vsix/extension/bundled/bin/ddplint")
[ "$actual" = "$expected" ] || fail "the .vsix's bundled program finds other things in examples/ than the build's"
echo "built $(basename "$vsix") ($(du -k "$vsix" | cut -f1) KiB): its bundled program finds the build's findings"
echo "packages e2e: ok"
