// The verification plan (which measurement answers which finding, with what
// sizes), its validation, and the report built from measured results.
#include <doctest/doctest.h>

#include "linter/lint.hpp"
#include "rules/registry.hpp"
#include "verify/plan.hpp"

using namespace ddplint;
using json = nlohmann::json;

namespace {
struct Linted {
  SourceFile source;
  LintResult result;
};
Linted linted(const std::string& text) {
  SourceFile f("train.py", text);
  std::vector<std::string> opt_in;  // as `ddplint verify` lints: the opt-in rules too
  for (const Rule& rule : rules::all())
    if (rule.info.opt_in) opt_in.emplace_back(rule.info.code);
  LintResult r = lint(f, rules::all(), RuleSelection().add_layer({}, opt_in, {}));
  return {std::move(f), std::move(r)};
}
const json* measurement(const json& plan, const std::string& kind) {
  for (const auto& m : plan["measurements"])
    if (m["kind"] == kind) return &m;
  return nullptr;
}
const std::string kScript = R"(import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader

os.environ["NCCL_P2P_DISABLE"] = "1"
dist.init_process_group("nccl")
local_rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local_rank)
model = torch.nn.Linear(1024, 512).cuda()
model = DDP(model, device_ids=[local_rank])
loader = DataLoader(ds, batch_size=64)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
accum_steps = 8
for step, (x, y) in enumerate(loader):
    x, y = x.cuda(), y.cuda()
    loss = torch.nn.functional.mse_loss(model(x), y) / accum_steps
    loss.backward()
    print(loss.item())
    if (step + 1) % accum_steps == 0:
        opt.step()
        opt.zero_grad()
)";
}  // namespace

TEST_CASE("plan: each finding kind maps to its measurement, with sizes and their sources") {
  Linted l = linted(kScript);
  std::vector<std::string> codes;
  for (const auto& d : l.result.diagnostics) codes.emplace_back(d.rule->code);
  CAPTURE(codes);
  json plan = verify::make_plan(l.source, l.result.diagnostics, {});
  CHECK(plan["version"] == verify::kPlanVersion);
  CHECK(verify::validate_plan(plan).empty());
  const json* copy = measurement(plan, "h2d_copy");
  REQUIRE(copy != nullptr);  // DDP102: the loader does not pin memory
  CHECK((*copy)["bytes"] == json{{"value", verify::kDefaultBatchBytes}, {"source", "default"}});
  const json* sync = measurement(plan, "sync_stall");
  REQUIRE(sync != nullptr);  // DDP401/403: .item() and print every step
  CHECK((*sync)["syncs_per_step"]["value"].get<int>() >= 1);
  const json* mm = measurement(plan, "matmul");
  REQUIRE(mm != nullptr);  // DDP501: no autocast
  CHECK((*mm)["k"] == json{{"value", 1024}, {"source", "script"}});
  CHECK((*mm)["n"] == json{{"value", 512}, {"source", "script"}});
  const json* ar = measurement(plan, "all_reduce");
  REQUIRE(ar != nullptr);  // DDP303: accumulation without no_sync
  CHECK((*ar)["accumulation"] == json{{"value", 8}, {"source", "script"}});
  const json* env = measurement(plan, "all_reduce_env");
  REQUIRE(env != nullptr);  // DDP304
  CHECK((*env)["env"] == json{{"NCCL_P2P_DISABLE", "1"}});
  const json* cores = measurement(plan, "cpu_cores");
  REQUIRE(cores != nullptr);  // DDP101
  // options override the defaults and say so
  json sized = verify::make_plan(l.source, l.result.diagnostics, {2, 1000000, 1 << 20});
  CHECK((*measurement(sized, "h2d_copy"))["bytes"] == json{{"value", 1 << 20}, {"source", "option"}});
  CHECK((*measurement(sized, "all_reduce"))["params"] == json{{"value", 1000000}, {"source", "option"}});
  CHECK((*measurement(sized, "all_reduce"))["gpus"] == json{{"value", 2}, {"source", "option"}});
  // DDP203 (every rank on GPU 0) is answered by the device inventory
  Linted gpu0 = linted("import torch\nimport torch.distributed as dist\ndist.init_process_group(\"nccl\")\nmodel = Net().cuda()\n");
  json devices_plan = verify::make_plan(gpu0.source, gpu0.result.diagnostics, {});
  REQUIRE(measurement(devices_plan, "devices") != nullptr);
  CHECK((*measurement(devices_plan, "devices"))["answers"][0]["code"] == "DDP203");
  // a script without findings that a measurement answers: an empty plan
  Linted clean = linted("x = 1\n");
  CHECK(verify::make_plan(clean.source, clean.result.diagnostics, {})["measurements"].empty());
}

TEST_CASE("plan validation names the bad field") {
  CHECK(verify::validate_plan(json::array()) == "the plan must be a JSON object");
  CHECK(verify::validate_plan({{"version", 2}, {"measurements", json::array()}}) == "version: must be 1");
  json bad = {{"version", 1},
              {"measurements", {{{"id", "h2d_copy"}, {"kind", "h2d_copy"}, {"bytes", {{"value", -5}}}}}}};
  CHECK(verify::validate_plan(bad) == "measurements[0].bytes.value: must be a positive integer");
  bad["measurements"][0] = {{"id", "x"}, {"kind", "teleport"}};
  CHECK(verify::validate_plan(bad).rfind("measurements[0].kind:", 0) == 0);
  bad["measurements"][0] = {{"id", "e"}, {"kind", "all_reduce_env"}, {"params", {{"value", 10}}}};
  CHECK(verify::validate_plan(bad) == "measurements[0].env: must be an object of variable = value");
  bad["measurements"][0] = {{"id", "d"}, {"kind", "devices"}, {"gpus", {{"value", -1}}}};
  CHECK(verify::validate_plan(bad).rfind("measurements[0].gpus.value:", 0) == 0);
}

TEST_CASE("report: each finding with its measurement, cost per step and verdict; skips say why") {
  Linted l = linted(kScript);
  json plan = verify::make_plan(l.source, l.result.diagnostics, {});
  json results = {{"version", 1},
                  {"measurements",
                   {{{"id", "h2d_copy"}, {"status", "ok"},
                     {"values", {{"pageable_ms", 7.9}, {"pinned_ms", 2.1}, {"pinned_non_blocking_host_ms", 0.05}, {"pageable_gbps", 8.5}}}},
                    {{"id", "sync_stall"}, {"status", "ok"}, {"values", {{"stall_us", 4800.0}}}},
                    {{"id", "all_reduce"}, {"status", "skipped"}, {"reason", "needs 2 GPUs, 1 visible"}},
                    {{"id", "cpu_cores"}, {"status", "ok"}, {"values", {{"cores", 16}, {"gpus", 8}, {"advised_num_workers", 2}}}}}}};
  std::string report = verify::format_report(l.source, l.result.diagnostics, plan, results, 40.0);
  CHECK(report.find("64 MiB to the GPU: pageable 7.90 ms (8.5 GB/s), pinned 2.10 ms") != std::string::npos);
  CHECK(report.find("worth fixing: ~5.80 ms of a ~40 ms step (15%)") != std::string::npos);
  CHECK(report.find("stalls the CPU 4800 us") != std::string::npos);
  CHECK(report.find("not measured: needs 2 GPUs, 1 visible") != std::string::npos);
  CHECK(report.find("16 CPU cores for 8 GPUs: num_workers up to 2 per rank") != std::string::npos);
  CHECK(report.find("not measured: ddplint-verify did not run") != std::string::npos);  // matmul: no result
  CHECK(verify::verdict(0.05, std::nullopt) == "negligible: ~0.05 ms per step");
  CHECK(verify::verdict(0.5, std::nullopt) == "small: ~0.50 ms per step");
  CHECK(verify::verdict(0.5, 10.0).rfind("worth fixing", 0) == 0);  // 5% of the step
}
