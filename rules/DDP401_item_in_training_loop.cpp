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

// The byte ranges of the file's lambdas (one walk, only when the code has
// one): a call inside a lambda runs when the lambda is called, not where it
// stands.
std::vector<std::pair<std::uint32_t, std::uint32_t>> lambda_ranges(const SemanticModel& model) {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> out;
  if (!model.mentions_in_code("lambda")) return out;
  const Kinds& k = kinds();
  std::vector<TSNode> stack{model.regions()[0].node};
  while (!stack.empty()) {
    TSNode n = stack.back();
    stack.pop_back();
    if (node_symbol(n) == k.lambda) out.emplace_back(node_start_byte(n), node_end_byte(n));
    for (TSNode c : children(n)) stack.push_back(c);
  }
  return out;
}

bool in_lambda(const std::vector<std::pair<std::uint32_t, std::uint32_t>>& lambdas, TSNode node) {
  std::uint32_t at = node_start_byte(node);
  for (const auto& [from, to] : lambdas)
    if (at >= from && at < to) return true;
  return false;
}

// The `.item()` calls that follow an earlier host-device sync of the same
// step which always runs before them (its region holds theirs, within the
// step loop), with no step work queued between: the queue is already drained,
// so such a read is a small copy, not a stall of its own (stylegan2's seven
// `loss_reduced[k].mean().item()` in a row; `a.item(), b.item()` in a tuple).
// One pass over the calls in file order, keeping the syncs since the last
// step work (the most recent 64).
std::unordered_set<const CallSite*> reads_after_sync(const SemanticModel& model, const std::vector<DdpWrap>& wraps,
                                                     const std::vector<std::pair<std::uint32_t, std::uint32_t>>& lambdas) {
  std::unordered_set<const CallSite*> drained;
  std::vector<const CallSite*> recent;
  int recent_loop = -2;
  for (const CallSite& c : model.calls()) {
    int loop = step_loop_of(model, c.region);
    if (loop < 0) continue;
    if (loop != recent_loop) recent.clear(), recent_loop = loop;
    std::uint32_t start = node_start_byte(c.node);
    if (launches_step_work(model, c, wraps)) {
      // work queued after those syncs: they no longer drain what comes next
      std::erase_if(recent, [&](const CallSite* s) { return node_end_byte(s->node) <= start; });
      continue;
    }
    if (!sync_call(model, c) || in_lambda(lambdas, c.node)) continue;
    for (const CallSite* s : recent) {
      if (node_end_byte(s->node) <= start && region_within(model, c.region, s->region)) {
        drained.insert(&c);
        break;
      }
    }
    if (!model.runs_every_step(c.node, kRareGuards) || (!node_is_null(c.receiver) && host_tensor(model, c.receiver)))
      continue;
    if (recent.size() == 64) recent.erase(recent.begin());
    recent.push_back(&c);
  }
  return drained;
}

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
  std::unordered_set<const CallSite*> drained;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> lambdas;
  bool drained_known = false;
  for (const CallSite* call : model.calls_named("item")) {
    if (node_is_null(call->receiver) || model.positional_count(*call) != 0) continue;
    if (!model.runs_every_step(call->node, kRareGuards)) continue;
    if (host_tensor(model, call->receiver)) continue;  // a CPU tensor: no GPU work to wait for
    if (in_run_ending_branch(model, call->node)) continue;  // runs once, before the run stops
    if (feeds_finiteness_check(model, *call)) continue;
    if (!drained_known) {
      lambdas = lambda_ranges(model);
      drained = reads_after_sync(model, ddp_wraps(model), lambdas);
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
