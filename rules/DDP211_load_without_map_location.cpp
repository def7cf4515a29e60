// DDP211 load-without-map-location: torch.load restores tensors onto the GPU they were saved from.
#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {
void check(const SemanticModel& model, RuleContext& ctx) {
  if (!model.is_distributed() || !model.uses_cuda()) return;
  for (const CallSite* call : model.calls_to("torch.load")) {
    // torch.load(f, map_location=None, ...)
    if (!node_is_null(model.argument(*call, "map_location", 1))) continue;  // any value
    if (model.has_unpacked_arguments(*call)) continue;
    // Only a checkpoint restored into a holder of tensors (a model, an optimizer)
    // is known to hold tensors saved from a GPU. Features saved with .cpu(), an
    // argparse Namespace, a scheduler's numbers: nothing returns to cuda:0.
    if (model.loaded_state(*call) != LoadedState::DeviceState) continue;
    // `if rank in [-1, 0]: torch.load(p)`: only the main process loads, onto its own GPU
    if (model.enclosing_guards(call->node) & kGuardMainProcess) continue;
    // `if args.gpu is None: torch.load(p) else: torch.load(p, map_location=loc)`:
    // the per-GPU path maps; the other arm is the one-process-for-all-GPUs case
    bool mapped_other_arm = false;
    const Region& here = model.regions()[call->region];
    if (here.kind == Region::Kind::Branch) {
      for (const CallSite* other : model.calls_to("torch.load")) {
        const Region& there = model.regions()[other->region];
        if (other != call && there.kind == Region::Kind::Branch && node_eq(there.condition, here.condition) &&
            there.negated != here.negated && !node_is_null(model.argument(*other, "map_location", 1)))
          mapped_other_arm = true;
      }
    }
    if (mapped_other_arm) continue;
    auto [start, end] = first_line_range(model, call->node);
    ctx.report(start, end,
               "torch.load without map_location of a checkpoint that load_state_dict restores, in a distributed "
               "CUDA script: its tensors return to the device they were saved from (usually cuda:0), so every "
               "rank allocates on GPU 0; pass map_location=\"cpu\" or this rank's device");
  }
}
}  // namespace

// needs: reports torch.load calls
extern const Rule kRuleDDP211{
    .info = {.code = "DDP211", .name = "load-without-map-location", .severity = Severity::Warning,
             .summary = "torch.load without map_location in a distributed CUDA script: every rank loads onto GPU 0",
             .url = "https://pytorch.org/docs/stable/generated/torch.load.html", .needs = "torch;load"},
    .check = &check};

}  // namespace ddplint::rules
