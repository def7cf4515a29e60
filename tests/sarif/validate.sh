#!/usr/bin/env bash
# SARIF output checked by two real validators against the SARIF 2.1.0 schema:
# Microsoft's SARIF Multitool (`validate`, with its SARIF and GitHub rule sets)
# and python3-jsonschema. A broken log must fail both (the validators can fail).
# Usage: validate.sh DDPLINT_BIN SOURCE_DIR
set -euo pipefail
bin=$1
src=$2
tool_dir="$src/tests/sarif/node_modules/@microsoft/sarif-multitool-linux"
if [ ! -f "$tool_dir/Sarif.Multitool" ] || ! command -v /usr/bin/python3 >/dev/null || \
   ! /usr/bin/python3 -c 'import jsonschema' 2>/dev/null; then
  echo "sarif: validators missing (./build.sh setup installs them)" >&2
  [ "${CI:-}" = "true" ] && exit 1
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$tool_dir/Sarif.Multitool" "$work/multitool"  # npm ci --ignore-scripts leaves it without the execute bit
chmod u+x "$work/multitool"
export DOTNET_SYSTEM_GLOBALIZATION_INVARIANT=1
schema="$tool_dir/sarif-2.1.0.json"

multitool_errors() {  # prints the validator's errors and warnings for $1; exit 1 if any
  rm -f "$work/report.sarif"
  "$work/multitool" validate --json-schema "$schema" --rule-kind "Sarif;Gh" -o "$work/report.sarif" "$1" >"$work/multitool.log" 2>&1 || true
  /usr/bin/python3 - "$work/report.sarif" <<'PY'
import json, sys
try:
    report = json.load(open(sys.argv[1], encoding="utf-8-sig"))
except Exception as e:
    print("sarif multitool: no report:", e)
    sys.exit(1)
bad = [r for run in report["runs"] for r in run.get("results", []) if r.get("level", "warning") in ("error", "warning")]
for r in bad[:20]:
    print("sarif multitool:", r.get("ruleId"), r.get("message", {}).get("arguments") or r.get("message", {}).get("text"))
sys.exit(1 if bad else 0)
PY
}

# ddplint's SARIF for every fixture and example (findings of every rule, fixes, non-ASCII paths)
cd "$src"
"$bin" --isolated --format sarif -o "$work/ddplint.sarif" fixtures examples || [ $? -eq 1 ]
/usr/bin/python3 "$src/tests/sarif/validate_schema.py" "$schema" "$work/ddplint.sarif"
multitool_errors "$work/ddplint.sarif"
results=$(/usr/bin/python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["runs"][0]["results"]))' "$work/ddplint.sarif")
[ "$results" -gt 500 ] || { echo "sarif: only $results results" >&2; exit 1; }

# negative controls: the validators can fail. A log breaking the schema (an
# invalid level, a non-array) for jsonschema; a schema-valid log without what
# GitHub code scanning requires (locations, rule descriptions, help) for the
# Multitool's GitHub rules.
printf '{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"x"}},"results":[{"message":{"text":"m"},"level":"bogus","locations":5}]}]}' >"$work/broken.sarif"
if /usr/bin/python3 "$src/tests/sarif/validate_schema.py" "$schema" "$work/broken.sarif" >/dev/null; then
  echo "sarif: jsonschema accepted a broken log" >&2; exit 1
fi
printf '{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"x","rules":[{"id":"A1"}]}},"results":[{"ruleId":"A1","message":{"text":"m"}}]}]}' >"$work/not-for-github.sarif"
if multitool_errors "$work/not-for-github.sarif" >/dev/null; then
  echo "sarif: the multitool accepted a log GitHub would reject" >&2; exit 1
fi
echo "sarif: $results results valid (SARIF Multitool with its SARIF and GitHub rules, and jsonschema); the broken logs are rejected"
