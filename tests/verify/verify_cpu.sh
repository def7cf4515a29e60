#!/usr/bin/env bash
# ddplint-verify on a machine without a GPU (CI): plan generation for the
# script, the Gloo 2-process all-reduce over a loopback TCPStore, the host-side
# copy, the core count, the no-GPU exit path (status 3 and its line), and a
# malformed plan (status 2 naming the field).
# Usage: verify_cpu.sh DDPLINT_BIN DDPLINT_VERIFY_BIN
set -euo pipefail
ddplint=$1
verify=$2
if [ ! -x "$verify" ]; then
  echo "verify: $verify is not built (./build.sh test builds it with the verify preset)" >&2
  [ "${CI:-}" = "true" ] && exit 1
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/train.py" <<'PY'
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader

dist.init_process_group("nccl")
model = DDP(torch.nn.Linear(256, 128).cuda(), device_ids=[0])
loader = DataLoader(dataset, batch_size=32)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
accum_steps = 4
for i, (x, y) in enumerate(loader):
    loss = torch.nn.functional.mse_loss(model(x.cuda()), y.cuda()) / accum_steps
    loss.backward()
    if (i + 1) % accum_steps == 0:
        opt.step()
        opt.zero_grad()
PY
fail() { echo "verify: $*" >&2; exit 1; }
json() { /usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

"$ddplint" verify --plan-only --params 2000000 --batch-bytes 8388608 "$work/train.py" >"$work/plan.json"
[ "$(json "$work/plan.json" "sorted(m['kind'] for m in d['measurements'])")" = "['all_reduce', 'cpu_cores', 'h2d_copy', 'matmul']" ] ||
  fail "unexpected plan: $(cat "$work/plan.json")"

set +e
"$verify" "$work/plan.json" "$work/results.json" 2>"$work/err"
status=$?
set -e
[ "$status" -eq 3 ] || fail "no GPU: expected exit status 3, got $status: $(cat "$work/err")"
r="$work/results.json"
[ "$(json "$r" "d['device']['cuda']")" = "False" ] || fail "a CUDA device was reported"
ar="[m for m in d['measurements'] if m['id']=='all_reduce'][0]"
[ "$(json "$r" "$ar['status']")" = "ok" ] || fail "the Gloo all-reduce did not run: $(cat "$r")"
[ "$(json "$r" "$ar['values']['backend']+str($ar['values']['ranks'])")" = "gloo2" ] || fail "not a 2-rank Gloo run"
# nccl-tests' bus bandwidth: algbw * 2(n-1)/n (n = 2: equal to algbw)
[ "$(json "$r" "abs($ar['values']['busbw_gbps'] - $ar['values']['algbw_gbps']) < 1e-9 and $ar['values']['fp32_ms'] > 0")" = "True" ] ||
  fail "bandwidth figures inconsistent"
h2d="[m for m in d['measurements'] if m['id']=='h2d_copy'][0]"
[ "$(json "$r" "$h2d['status']+'|'+$h2d['reason']")" = "skipped|no CUDA device visible" ] || fail "h2d_copy not skipped for the right reason"
[ "$(json "$r" "$h2d['values']['bytes'] == 8388608 and $h2d['values']['host_copy_gbps'] > 0")" = "True" ] || fail "no host-side copy"
cores="[m for m in d['measurements'] if m['id']=='cpu_cores'][0]"
[ "$(json "$r" "$cores['values']['cores'] >= 1 and $cores['values']['advised_num_workers'] >= 1")" = "True" ] || fail "no core count"

# as torchrun starts it: two processes given RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT,
# rank 0 hosting the TCPStore; rank 0 writes the all-reduce in the results format
port=$(( 20000 + RANDOM % 20000 ))
for rank in 0 1; do
  RANK=$rank LOCAL_RANK=$rank WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    "$verify" "$work/plan.json" "$work/launched.json" &
done
wait
[ "$(json "$work/launched.json" "[m['status'] for m in d['measurements'] if m['id']=='all_reduce'][0] + str(d['device']['launcher'])")" = "oktorchrun" ] ||
  fail "the torchrun-style launch did not measure the all-reduce: $(cat "$work/launched.json")"

# the whole command: findings, measurements, the no-GPU line, status 3
set +e
DDPLINT_VERIFY_BIN="$verify" "$ddplint" verify --params 2000000 "$work/train.py" >"$work/out" 2>&1
status=$?
set -e
[ "$status" -eq 3 ] || fail "ddplint verify: expected status 3, got $status"
grep -q "no CUDA device visible: verification skipped" "$work/out" || fail "no-GPU line missing"
grep -q "a Gloo all-reduce on CPU of 2.0 M fp32 values" "$work/out" || fail "the all-reduce measurement is not reported"

# a malformed plan: status 2, the field named
/usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['measurements'][0]['params']['value']=-3; json.dump(d,open(sys.argv[1],'w'))" "$work/plan.json"
set +e
"$verify" "$work/plan.json" "$work/bad.json" 2>"$work/err"
status=$?
set -e
[ "$status" -eq 2 ] || fail "malformed plan: expected status 2, got $status"
grep -q "measurements\[0\].params.value: must be a positive integer" "$work/err" || fail "the bad field is not named: $(cat "$work/err")"
# a shell with a launcher's rank variables: `ddplint verify` is still the driver (no hang)
set +e
RANK=0 WORLD_SIZE=2 DDPLINT_VERIFY_BIN="$verify" timeout 120 "$ddplint" verify --params 100000 "$work/train.py" >/dev/null 2>&1
status=$?
set -e
[ "$status" -eq 3 ] || fail "with RANK/WORLD_SIZE in the environment: expected status 3, got $status"
# bad rank variables and duplicate ids: status 2 naming them
"$ddplint" verify --plan-only --params 100000 "$work/train.py" >"$work/plan2.json"
set +e
RANK=abc WORLD_SIZE=2 MASTER_PORT=1234 "$verify" "$work/plan2.json" "$work/x.json" 2>"$work/err"
status=$?
set -e
[ "$status" -eq 2 ] && grep -q "RANK=abc" "$work/err" || fail "a bad RANK is not named: $(cat "$work/err")"
/usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['measurements'].append(dict(d['measurements'][0])); json.dump(d,open(sys.argv[1],'w'))" "$work/plan2.json"
set +e
"$verify" "$work/plan2.json" "$work/x.json" 2>"$work/err"
status=$?
set -e
[ "$status" -eq 2 ] && grep -q "id: used twice" "$work/err" || fail "duplicate ids accepted: $(cat "$work/err")"
echo "verify: plan, Gloo 2-process all-reduce, host copy, core count, no-GPU exit 3 and malformed plan exit 2 all checked"
