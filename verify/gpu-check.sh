#!/usr/bin/env bash
# The GPU check of `ddplint verify`, for a machine with NVIDIA GPUs and a pip
# PyTorch (run rarely: a GPU is lent only to some sessions). It
#   1. builds ddplint and ddplint-verify against this machine's PyTorch wheel
#      (cmake/find_torch.cmake's pip fallback; NCCL from the nvidia-nccl wheel
#      at run time through DDPLINT_NCCL_LIBRARY);
#   2. runs every measurement kind on tests/verify/all_kinds.py's plan;
#   3. measures with PyTorch itself, on the same sizes, the device-to-device
#      copy rate and the bf16 matmul rate, and checks ddplint-verify's figures
#      are within 10% of them, and that busbw = algbw * 2(n-1)/n (nccl-tests);
#   4. writes everything to $OUT/verify-results.json (or ./verify-results.json),
#      with the GPU model and the date, for docs/verify-results.md.
# Must finish in under 5 minutes on one GPU. Usage: verify/gpu-check.sh [PYTHON]
set -euo pipefail
cd "$(dirname "$0")/.."
python=${1:-${PYTHON:-python3}}
out=${OUT:-.}
mkdir -p "$out"
"$python" -c 'import torch; assert torch.cuda.is_available(), "no CUDA device visible"'
nccl=$("$python" -c 'import os, nvidia.nccl as n; print(os.path.join(list(n.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null || true)
[ -n "$nccl" ] && export DDPLINT_NCCL_LIBRARY="$nccl"

npm ci --ignore-scripts --no-audit --no-fund >/dev/null 2>&1 || true  # tree-sitter sources (the registry may be out of reach)
cmake --preset release -DDDPLINT_TESTS=OFF -DDDPLINT_BENCH=OFF >/dev/null
cmake --build --preset release --target ddplint >/dev/null
cmake -S . -B build/verify-gpu -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDDPLINT_VERIFY=ON \
  -DDDPLINT_TESTS=OFF -DDDPLINT_BENCH=OFF -DDDPLINT_PYTHON="$python" -DCMAKE_DISABLE_FIND_PACKAGE_Torch=ON >/dev/null
cmake --build build/verify-gpu --target ddplint-verify >/dev/null

build/release/ddplint verify --plan-only tests/verify/all_kinds.py >"$out/plan.json"
start=$(date +%s)
set +e
build/verify-gpu/ddplint-verify "$out/plan.json" "$out/measured.json"
status=$?
set -e
echo "ddplint-verify: exit $status in $(( $(date +%s) - start )) s"

"$python" - "$out/plan.json" "$out/measured.json" "$out/verify-results.json" <<'PY'
import datetime, json, sys, time
import torch

plan, measured, target = (json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3])
by_id = {m["id"]: m for m in measured["measurements"]}
checks = []

def timed(fn, iters):
    fn(); torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / iters

h2d = by_id.get("h2d_copy", {})
if h2d.get("status") == "ok":
    v = h2d["values"]
    a = torch.empty(v["bytes"], dtype=torch.uint8, device="cuda"); b = torch.empty_like(a)
    ref = v["bytes"] / timed(lambda: b.copy_(a), 20) / 1e9
    checks.append({"what": "device-to-device copy GB/s", "ddplint_verify": v["d2d_gbps"], "pytorch": ref,
                   "within_10pct": abs(v["d2d_gbps"] - ref) <= 0.1 * ref})
mm = by_id.get("matmul", {})
if mm.get("status") == "ok":
    v = mm["values"]
    x = torch.randn(v["m"], v["k"], device="cuda", dtype=torch.bfloat16)
    y = torch.randn(v["k"], v["n"], device="cuda", dtype=torch.bfloat16)
    ref = 2 * v["m"] * v["n"] * v["k"] / timed(lambda: x @ y, 50) / 1e12
    checks.append({"what": "bf16 matmul TFLOP/s", "ddplint_verify": v["bf16_tflops"], "pytorch": ref,
                   "within_10pct": abs(v["bf16_tflops"] - ref) <= 0.1 * ref})
ar = by_id.get("all_reduce", {})
if ar.get("status") == "ok":
    v = ar["values"]; n = v["ranks"]
    checks.append({"what": "busbw = algbw * 2(n-1)/n", "ok": abs(v["busbw_gbps"] - v["algbw_gbps"] * 2 * (n - 1) / n) < 1e-6})
result = {"date": datetime.date.today().isoformat(), "gpu": torch.cuda.get_device_name(0),
          "gpus": torch.cuda.device_count(), "torch": torch.__version__, "measured": measured, "checks": checks}
json.dump(result, open(target, "w"), indent=2)
print(json.dumps(checks, indent=2))
bad = [c for c in checks if not c.get("within_10pct", c.get("ok", False))]
sys.exit(1 if bad else 0)
PY
