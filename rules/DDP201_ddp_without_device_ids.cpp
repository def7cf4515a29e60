// DDP201 ddp-without-device-ids: DDP wrap in a CUDA script where nothing pins this rank's GPU.
#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"


namespace ddplint::rules {

namespace {

void check(const SemanticModel& model, RuleContext& ctx) {
  if (!model.uses_cuda() || model.gloo_backend()) return;
  auto wraps = model.calls_to(kDDP);
  if (wraps.empty() || process_group_started_elsewhere(model)) return;
  Pins pins = collect_pins(model);
  TSNode default_gpu_move = all_ranks_on_default_gpu(model, pins);
  for (const CallSite* call : wraps) {
    // DistributedDataParallel(module, device_ids=None, output_device=None, ...)
    if (!node_is_null(model.argument(*call, "device_ids", 1))) continue;  // any value, None included
    if (model.has_unpacked_arguments(*call)) continue;
    if (pins.before(model, call->node)) continue;
    if (!node_is_null(default_gpu_move)) continue;  // one root cause: reported as DDP203
    auto [start, end] = first_line_range(model, call->node);
    // the fix: device_ids=[<this file's local-rank name>]; without one, read LOCAL_RANK (unsafe)
    std::optional<Fix> fix;
    std::string name = local_rank_name(model, call->node);
    Fix::Applicability applicability = Fix::Applicability::Safe;
    if (name.empty() && imports_os(model)) {
      name = "int(os.environ[\"LOCAL_RANK\"])";
      applicability = Fix::Applicability::Unsafe;
    }
    if (!name.empty()) {
      if (std::optional<Edit> e = append_argument(model, *call, "device_ids=[" + name + "]", ctx.options().line_length))
        fix = Fix{applicability, "Pass `device_ids=[" + name + "]`", {std::move(*e)}};
    }
    ctx.report(start, end,
               "DistributedDataParallel without device_ids, and nothing before it pins this rank's GPU: "
               "pass device_ids=[local_rank] (or call torch.cuda.set_device(local_rank) first)",
               std::move(fix));
  }
}
}  // namespace

// needs: reports DistributedDataParallel calls
extern const Rule kRuleDDP201{
    .info = {.code = "DDP201", .name = "ddp-without-device-ids", .severity = Severity::Warning,
             .summary = "DistributedDataParallel without device_ids where nothing pins the rank's GPU",
             .url = "https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html",
             .fixable = true, .needs = "torch;DistributedDataParallel"},
    .check = &check};

}  // namespace ddplint::rules
