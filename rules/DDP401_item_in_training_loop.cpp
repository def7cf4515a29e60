// DDP401 item-in-training-loop: .item() on every step (host-device sync).
#include <algorithm>
#include <span>
#include <string>

#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {

// A call that waits for the GPU: `.item()`, `.tolist()`, `.cpu()` on a tensor,
// or torch.cuda.synchronize().
bool sync_call(const SemanticModel& model, const CallSite& c) {
  if (c.canonical == "torch.cuda.synchronize") return true;
  if (node_is_null(c.receiver) || model.positional_count(c) != 0) return false;
  return c.method == "item" || c.method == "tolist" || c.method == "cpu";
}

// Work a step puts on the GPU queue: backward, an optimizer step, a model's
// forward (a call of a DDP wrap or of a name such as `model`, `net`).
bool launches_step_work(const SemanticModel& model, const CallSite& c, const std::vector<DdpWrap>& wraps) {
  if (model.is_training_call(c) || c.method == "forward") return true;
  std::string name = lowercase(model.last_name(c.callee));
  if (name.find("model") != std::string::npos || name == "net" || name == "module") return true;
  std::string path = model.path_of(c.callee);
  for (const DdpWrap& w : wraps)
    if (!path.empty() && (path == w.result || path == w.module)) return true;
  return false;
}

// True when `inner`'s region is `outer` or inside it.
bool region_within(const SemanticModel& model, int inner, int outer) {
  for (int r = inner; r >= 0; r = model.regions()[r].parent) {
    if (r == outer) return true;
    if (r == 0) break;
  }
  return false;
}

// The step loop around `region` in its function (an inner loop over a dict
// of losses is part of the step), else its innermost loop, or -1.
int step_loop_of(const SemanticModel& model, int region) {
  int innermost = model.innermost_loop(region);
  for (int loop = innermost; loop > 0; loop = model.innermost_loop(model.regions()[loop].parent))
    if (model.is_step_loop(loop)) return loop;
  return innermost;
}

// An earlier host-device sync of the same step that always runs before
// `call` (its region holds the call's, within the call's loop), with no
// step work queued between them: the queue is already drained, so this
// `.item()` is a small copy, not a stall of its own (stylegan2's seven
// `loss_reduced[k].mean().item()` in a row; `a.item(), b.item()` in a tuple).
bool follows_sync(const SemanticModel& model, const CallSite& call, int loop, const std::vector<DdpWrap>& wraps) {
  const CallSite* earlier = nullptr;
  std::uint32_t at = node_start_byte(call.node);
  std::uint32_t loop_start = node_start_byte(model.regions()[loop].node);
  std::span<const CallSite> calls = model.calls();  // in file order
  auto first = std::lower_bound(calls.begin(), calls.end(), loop_start,
                                [](const CallSite& c, std::uint32_t b) { return node_start_byte(c.node) < b; });
  int budget = 4096;  // calls looked at; a loop body longer than that is reported as before
  for (auto it = first; it != calls.end(); ++it) {
    const CallSite& c = *it;
    if (node_start_byte(c.node) >= at) break;
    if (--budget == 0) return false;
    if (!region_within(model, c.region, loop)) continue;
    if (earlier != nullptr && node_start_byte(c.node) >= node_end_byte(earlier->node) && launches_step_work(model, c, wraps))
      earlier = nullptr;  // work queued after the sync: it is not drained any more
    if (sync_call(model, c) && region_within(model, call.region, c.region) &&
        model.runs_every_step(c.node, kRareGuards) && (node_is_null(c.receiver) || !host_tensor(model, c.receiver)))
      earlier = &c;
  }
  return earlier != nullptr;
}

// The statement's assignment target when `call` is (part of) the value
// assigned: `loss_value = loss.item()`, `d = {k: v.item() for ...}`.
TSNode assigned_name(TSNode call) {
  const Kinds& k = kinds();
  for (TSNode n = ts_node_parent(call); !node_is_null(n); n = ts_node_parent(n)) {
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
  for (TSNode n = ts_node_parent(call.node); !node_is_null(n); n = ts_node_parent(n)) {
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
  std::vector<DdpWrap> wraps;
  bool wraps_known = false;
  for (const CallSite* call : model.calls_named("item")) {
    if (node_is_null(call->receiver) || model.positional_count(*call) != 0) continue;
    if (!model.runs_every_step(call->node, kRareGuards)) continue;
    if (host_tensor(model, call->receiver)) continue;  // a CPU tensor: no GPU work to wait for
    if (in_run_ending_branch(model, call->node)) continue;  // runs once, before the run stops
    if (feeds_finiteness_check(model, *call)) continue;
    if (!wraps_known) wraps = ddp_wraps(model), wraps_known = true;
    int loop = step_loop_of(model, call->region);
    if (loop >= 0 && follows_sync(model, *call, loop, wraps)) continue;
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
