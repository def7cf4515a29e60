// DDP102 dataloader-without-pin-memory: batches copied to the GPU from pageable memory.
#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {
void check(const SemanticModel& model, RuleContext& ctx) {
  if (!model.uses_cuda()) return;  // pinning only matters for host-to-GPU copies
  for (const CallSite* call : model.calls_to(kDataLoader)) {
    if (loader_feeds_no_training(model, *call)) continue;  // no training step copies its batches
    // DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, collate_fn, pin_memory, ...)
    TSNode pin = model.argument(*call, "pin_memory", 7);
    if (node_is_null(pin)) {
      if (model.has_unpacked_arguments(*call)) continue;
      std::optional<Fix> fix;
      if (std::optional<Edit> e = append_argument(model, *call, "pin_memory=True", ctx.options().line_length))
        fix = Fix{Fix::Applicability::Safe, "Add `pin_memory=True`", {std::move(*e)}};
      ctx.report(node_start_byte(call->callee), node_end_byte(call->callee),
                 "DataLoader without pin_memory=True in a CUDA script: every batch is copied to the GPU "
                 "from pageable memory, which is slower and cannot overlap with compute",
                 std::move(fix));
      continue;
    }
    Value v = model.value_of(pin);
    if (v.known() && !v.truthy()) {
      TSNode at = argument_node(model, *call, pin);
      std::optional<Fix> fix;
      // only a literal False is rewritten; a named constant may be used elsewhere
      if (model.text(pin) == "False")
        fix = Fix{Fix::Applicability::Safe, "Set `pin_memory=True`",
                  {Edit{node_start_byte(pin), node_end_byte(pin), "True"}}};
      ctx.report(node_start_byte(at), node_end_byte(at),
                 "DataLoader with pin_memory=False in a CUDA script: every batch is copied to the GPU "
                 "from pageable memory, which is slower and cannot overlap with compute",
                 std::move(fix));
    }
  }
}
}  // namespace

// needs: reports DataLoader calls (a torch import and the name written out)
extern const Rule kRuleDDP102{
    .info = {.code = "DDP102", .name = "dataloader-without-pin-memory", .severity = Severity::Warning,
             .summary = "DataLoader without pin_memory=True in a script that trains on CUDA",
             .url = "https://pytorch.org/docs/stable/data.html#memory-pinning", .fixable = true,
             .opt_in = true,
             .needs = "torch;DataLoader"},
    .check = &check};

}  // namespace ddplint::rules
