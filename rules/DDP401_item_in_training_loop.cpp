// DDP401 item-in-training-loop: .item() on every step (host-device sync).
#include <algorithm>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {

// The statement's assignment target when `call` is (part of) the value
// assigned: `loss_value = loss.item()`, `d = {k: v.item() for ...}`.
TSNode assigned_name(TSNode call) {
  const Kinds& k = kinds();
  int levels = 0;
  for (TSNode n = ts_node_parent(call); !node_is_null(n) && levels < 4; n = ts_node_parent(n), ++levels) {
    TSSymbol s = node_symbol(n);
    if (s == k.assignment) {
      TSNode left = field(n, k.f_left);
      return node_symbol(left) == k.identifier ? left : TSNode{};
    }
    if (s == k.block || s == k.expression_statement || s == k.function_definition) return {};
  }
  return {};
}

bool mentions_name(const SemanticModel& model, TSNode expr, std::string_view name) {
  if (node_is_null(expr)) return false;
  if (node_symbol(expr) == kinds().identifier) return model.text(expr) == name;
  for (TSNode c : children(expr))
    if (mentions_name(model, c, name)) return true;
  return false;
}

bool finiteness_test(std::string_view canonical) {
  return canonical == "math.isfinite" || canonical == "math.isnan" || canonical == "math.isinf" ||
         canonical == "numpy.isfinite" || canonical == "numpy.isnan" || canonical == "numpy.isinf";
}

// The value read feeds the step's non-finite-loss check (`if not
// math.isfinite(loss_value): sys.exit(1)`, DINO's and MAE's abort): the sync
// is how every rank stops at a NaN, a deliberate part of the step.
bool feeds_finiteness_check(const SemanticModel& model, const CallSite& call) {
  int levels = 0;
  for (TSNode n = ts_node_parent(call.node); !node_is_null(n) && levels < 4; n = ts_node_parent(n), ++levels) {
    if (node_symbol(n) != kinds().call) continue;
    const CallSite* outer = model.call_at(n);
    if (outer != nullptr && finiteness_test(outer->canonical)) return true;  // math.isfinite(loss.item())
  }
  TSNode target = assigned_name(call.node);
  if (node_is_null(target)) return false;
  std::string_view name = model.text(target);
  int scope = model.regions()[call.region].scope;
  for (const CallSite& c : model.calls()) {
    if (node_start_byte(c.node) <= node_start_byte(call.node) || !finiteness_test(c.canonical)) continue;
    if (model.regions()[c.region].scope != scope) continue;
    if (mentions_name(model, field(c.node, kinds().f_arguments), name)) return true;
  }
  return false;
}

void check(const SemanticModel& model, RuleContext& ctx) {
  if (!model.uses_cuda()) return;
  DrainedSyncs drained;
  ByteRanges lambdas;
  bool drained_known = false;
  std::optional<BlockingLoaderSteps> blocking;
  for (const CallSite* call : model.calls_named("item")) {
    if (node_is_null(call->receiver) || model.positional_count(*call) != 0) continue;
    if (!model.runs_every_step(call->node, kRareGuards)) continue;
    if (host_tensor(model, call->receiver)) continue;  // a CPU tensor: no GPU work to wait for
    if (model.from_host_parameter(call->receiver)) continue;  // every per-step caller passes a host value
    if (in_run_ending_branch(model, call->node)) continue;  // runs once, before the run stops
    if (feeds_finiteness_check(model, *call)) continue;
    // a value the step computes with on every step (a size, a branch, a mask's
    // count, an argument of the next call): the read is part of the algorithm, and
    // "accumulate on the GPU and read it every N steps" is no fix for it; the
    // rule is about reads for the logs (what DDP405 does for conditions)
    if (model.result_use(call->node, true).kind == ValueUse::Kind::Computation) continue;
    if (!blocking) blocking.emplace(model);
    if (blocking->holds(*call)) continue;
    if (!drained_known) {
      lambdas = lambda_ranges(model);
      drained = syncs_after_sync(model, ddp_wraps(model), lambdas);
      drained_known = true;
    }
    if (in_lambda(lambdas, call->node)) continue;  // runs when called: unknown how often
    if (drained.contains(call)) continue;
    auto [start, end] = first_line_range(model, call->node);
    ctx.report(start, end,
               "`.item()` on every training step: a host-device sync that waits for all queued GPU work, "
               "so the CPU cannot queue the next step ahead; accumulate on the GPU and read it every N steps");
  }
}
}  // namespace

// needs: fires without torch: uses_cuda() ("cuda"/"nccl", or a framework that picks the GPU: accelerate,
// lightning), .item(), a training loop (backward()/.step()) or a Lightning per-step hook (on_train_batch_*, ...)
extern const Rule kRuleDDP401{
    .info = {.code = "DDP401", .name = "item-in-training-loop", .severity = Severity::Warning,
             .summary = "`.item()` on every step of a CUDA training loop, read for the logs: a host-device sync",
             .url = "https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution",
             .needs = "torch|cuda|nccl|accelerate|lightning;item;backward|step|on_train_batch|zero_grad"},
    .check = &check};

}  // namespace ddplint::rules
