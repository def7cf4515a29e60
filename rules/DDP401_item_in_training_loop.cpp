// DDP401 item-in-training-loop: .item() on every step (host-device sync).
#include <algorithm>
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

// The Accelerator whose prepared DataLoader `expr` holds: `accelerator.prepare(...)`
// (one of its results), `accelerator.prepare_data_loader(loader)`,
// `accelerator.skip_first_batches(loader, n)`, or a name whose last binding
// before byte `before` is one of those. Null node when not known to be one.
TSNode preparing_accelerator(const SemanticModel& model, TSNode expr, std::uint32_t before, int depth = 0) {
  const Kinds& k = kinds();
  if (node_is_null(expr) || depth > 3) return {};
  if (node_symbol(expr) == k.call) {
    const CallSite* c = model.call_at(expr);
    if (c == nullptr || (c->method != "prepare" && c->method != "prepare_data_loader" && c->method != "skip_first_batches"))
      return {};
    return model.framework_object(c->receiver) == FrameworkObject::Accelerator ? c->receiver : TSNode{};
  }
  if (node_symbol(expr) != k.identifier) return {};
  const Binding* last = nullptr;
  for (const Binding* b : model.bindings_of(model.text(expr), model.region_of(expr)))
    if (!node_is_null(b->target) && node_start_byte(b->target) < before &&
        (last == nullptr || node_start_byte(b->target) > node_start_byte(last->target)))
      last = b;
  if (last == nullptr || last->kind != Binding::Kind::Assign) return {};
  // `model, optimizer, loader = accelerator.prepare(...)`: the assignment's right side
  TSNode value = last->value;
  if (node_is_null(value)) {
    for (TSNode n = ts_node_parent(last->target); !node_is_null(n); n = ts_node_parent(n)) {
      if (node_symbol(n) == k.assignment) {
        value = field(n, k.f_right);
        break;
      }
      std::string_view type = ts_node_type(n);
      if (type != "pattern_list" && type != "tuple_pattern" && type != "list_pattern") break;
    }
  }
  return preparing_accelerator(model, value, node_start_byte(last->target), depth + 1);
}

// True when `call` runs in a loop over a DataLoader that Accelerate prepared
// with its default configuration: each batch is moved to the GPU with a
// blocking copy (accelerate/data_loader.py, DataLoaderShard.__iter__:
// send_to_device(batch, device, non_blocking=self._non_blocking), False unless
// DataLoaderConfiguration(non_blocking=True)), so the loop already waits for
// the GPU's queue at every batch: one more sync in the step costs little.
// True when step loop region `loop` iterates such a loader.
bool blocking_accelerate_loop(const SemanticModel& model, int loop) {
  const Kinds& k = kinds();
  TSNode stmt = model.regions()[loop].node;
  if (node_symbol(stmt) != k.for_statement) return false;
  TSNode accelerator = preparing_accelerator(model, model.iterated_container(field(stmt, k.f_right)),
                                             node_start_byte(stmt));
  if (node_is_null(accelerator)) return false;
  const FrameworkConfig* config = model.framework_config_of(accelerator);
  return config != nullptr &&
         model.framework_setting(*config, "dataloader_config").state == FrameworkSetting::State::Default;
}

// `call` in a step loop over such a loader; or, when it runs per step through
// a function of this file (a helper the loop calls), every step loop of the
// file iterates one (`all_blocking`).
bool in_blocking_accelerate_loop(const SemanticModel& model, const CallSite& call, bool all_blocking) {
  for (int r = call.region; r > 0; r = model.regions()[r].parent) {
    const Region& region = model.regions()[r];
    if (region.kind == Region::Kind::Function || region.kind == Region::Kind::Class) return all_blocking;
    if (region.kind == Region::Kind::Loop && model.is_step_loop(r)) return blocking_accelerate_loop(model, r);
  }
  return all_blocking;
}

bool every_step_loop_blocking(const SemanticModel& model) {
  bool any = false;
  for (int r = 0; r < static_cast<int>(model.regions().size()); ++r) {
    if (!model.is_step_loop(r)) continue;
    if (!blocking_accelerate_loop(model, r)) return false;
    any = true;
  }
  return any;
}

void check(const SemanticModel& model, RuleContext& ctx) {
  if (!model.uses_cuda()) return;
  std::unordered_set<const CallSite*> drained;
  ByteRanges lambdas;
  bool drained_known = false, blocking_known = false, all_blocking = false;
  for (const CallSite* call : model.calls_named("item")) {
    if (node_is_null(call->receiver) || model.positional_count(*call) != 0) continue;
    if (!model.runs_every_step(call->node, kRareGuards)) continue;
    if (host_tensor(model, call->receiver)) continue;  // a CPU tensor: no GPU work to wait for
    if (model.from_host_parameter(call->receiver)) continue;  // every per-step caller passes a host value
    if (in_run_ending_branch(model, call->node)) continue;  // runs once, before the run stops
    if (feeds_finiteness_check(model, *call)) continue;
    if (!blocking_known) all_blocking = every_step_loop_blocking(model), blocking_known = true;
    if (in_blocking_accelerate_loop(model, *call, all_blocking)) continue;
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

// needs: fires without torch: uses_cuda() ("cuda"/"nccl"), .item(), a training loop (backward()/.step())
extern const Rule kRuleDDP401{
    .info = {.code = "DDP401", .name = "item-in-training-loop", .severity = Severity::Warning,
             .summary = "`.item()` on every step of a CUDA training loop: a host-device sync",
             .url = "https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution",
             .needs = "torch|cuda|nccl;item;backward|step"},
    .check = &check};

}  // namespace ddplint::rules
