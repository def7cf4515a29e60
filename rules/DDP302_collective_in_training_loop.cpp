// DDP302 collective-in-training-loop: a collective on every training step.
#include <string>
#include <utility>

#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

bool is_manual_gradient_reduce(const SemanticModel& model, const CallSite& call);

namespace {

// True when the top-level function holding `region` is one a per-step caller
// in another file calls only for its logs: that call reads what it passes,
// after the call, only for logging (ProjectFacts::logged_calls), so each of
// its parameters is.
bool logged_parameter(const SemanticModel& model, int region) {
  const Region& scope = model.regions()[static_cast<std::size_t>(model.regions()[region].scope)];
  if (scope.kind != Region::Kind::Function || !model.is_top_level_function(scope.function)) return false;
  return model.project().logged_calls.contains(model.functions()[scope.function].name);
}

// The name that holds a collective's result after the call, and where its
// reads start: the tensor reduced in place (`dist.all_reduce(t)`), the output
// list or tensor (`all_gather(outs, t)`), or the container a loop reduces
// entry by entry (`for v in d.values(): dist.all_reduce(v)` gives `d`, read
// after the loop). An empty name with a position: a temporary nobody reads;
// an empty name at 0: ddplint cannot name it. (`from_caller` is set when the
// name is a parameter the callers only log: what the caller reads after the
// call is logging, whatever the helper does.)
std::pair<std::string, std::uint32_t> result_carrier(const SemanticModel& model, const CallSite& call,
                                                     std::string_view name, bool& from_caller) {
  const Kinds& k = kinds();
  int position = name == "gather" || name == "gather_object" ? 1 : 0;
  TSNode e = model.argument(call, "", position);
  for (std::string_view kw : {"tensor", "tensors", "tensor_list", "object_list", "output", "output_tensor",
                              "gather_list", "object_gather_list", "output_tensor_list"}) {
    if (!node_is_null(e)) break;
    e = model.argument(call, kw);
  }
  if (node_is_null(e)) return {};
  // `loss.div_(world_size)`: an in-place method returns its receiver, which
  // the collective then reduces in place (SimCLR's `all_reduce(loss.div_(n))`)
  for (int guard = 0; guard < 4 && node_symbol(e) == k.call; ++guard) {
    const CallSite* inner = model.call_at(e);
    if (inner == nullptr || node_is_null(inner->receiver) || inner->method.size() < 2 || inner->method.back() != '_' ||
        inner->method.front() == '_')
      break;
    e = inner->receiver;
  }
  while (node_symbol(e) == k.subscript) e = field(e, k.f_value);  // `d[k]`: the dict `d`
  // `p.grad`, `p.data`, `self.buf`: held by an object ddplint does not follow
  if (node_symbol(e) == k.attribute) return {};
  // `loss.detach()`, `x.reshape(1)`: a temporary, dropped after the call
  if (node_symbol(e) != k.identifier) return {"", node_end_byte(call.node)};
  std::string_view text = model.text(e);
  BindingList bindings = model.bindings_of(text, call.region);
  // rebound before the call (`t = t.clone()`, the usual reduce_tensor): the
  // collective reduces the helper's own copy, not the caller's object
  bool rebound = false;
  for (const Binding* b : bindings)
    rebound = rebound || (b->kind != Binding::Kind::Parameter && !node_is_null(b->target) &&
                          node_start_byte(b->target) < node_start_byte(call.node));
  for (const Binding* b : bindings) {
    // a parameter: the caller's object, which the caller reads after the call
    // (in another file, or in this one): what it feeds is not known here,
    // unless the project says every per-step caller only logs it
    if (b->kind != Binding::Kind::Parameter || rebound) continue;
    if (!logged_parameter(model, call.region)) return {};
    from_caller = true;
  }
  for (const Binding* b : bindings) {
    if (b->kind != Binding::Kind::LoopTarget || node_is_null(b->target)) continue;
    // the loop that binds the name around this call: `for t in tensors: all_reduce(t)`
    for (TSNode f = ts_node_parent(b->target); !node_is_null(f); f = ts_node_parent(f)) {
      if (node_symbol(f) != k.for_statement) continue;
      if (node_start_byte(call.node) < node_start_byte(f) || node_end_byte(call.node) > node_end_byte(f)) break;
      // `d`, `d.values()`, `d.items()`, `list(d.values())`: the entries of `d`, read after the loop
      TSNode iterable = model.iterated_container(field(f, k.f_right));
      if (node_is_null(iterable) || node_symbol(iterable) != k.identifier) return {};
      for (const Binding* ib : model.bindings_of(model.text(iterable), call.region)) {
        if (ib->kind != Binding::Kind::Parameter) continue;
        if (!logged_parameter(model, call.region)) return {};  // the caller's container
        from_caller = true;
      }
      return {std::string(model.text(iterable)), node_end_byte(f)};
    }
  }
  return {std::string(text), node_end_byte(call.node)};
}

// Lightning's `self.log(name, value, sync_dist=True)` (and `log_dict`) where
// it logs on every step: Lightning all-reduces the value as it is logged
// (lightning/pytorch/trainer/connectors/logger_connector/result.py,
// _ResultMetric.update: `self._forward_cache = self.meta.sync(value.clone())`
// when on_step), and `on_step` defaults to True in training_step and the
// batch hooks. The value goes to the logs only.
void lightning_sync_dist(const SemanticModel& model, RuleContext& ctx) {
  for (std::string_view method : {"log", "log_dict"}) {
    for (const CallSite* call : model.calls_named(method)) {
      if (node_is_null(call->receiver) || model.text(call->receiver) != "self") continue;
      if (model.framework_object(call->receiver) != FrameworkObject::LightningModule) continue;
      if (model.has_unpacked_arguments(*call)) continue;
      // a torchmetrics Metric held by the module (`self.log("acc", self.acc,
      // sync_dist=True)`) is reduced by the metric at the epoch's compute(),
      // not by sync_dist (result.py: only tensor values take meta.sync); a
      // log_dict of anything but a dict written here may hold such metrics
      TSNode value = model.argument(*call, method == "log" ? "value" : "dictionary", method == "log" ? 1 : 0);
      if (node_is_null(value)) continue;
      if (method == "log" && model.path_of(value).starts_with("self.")) continue;
      if (method == "log_dict") {
        if (node_symbol(value) != kinds().dictionary) continue;
        bool held = false;
        for (TSNode pair : children(value)) {
          TSNode v = ts_node_child_by_field_name(pair, "value", 5);
          held = held || node_is_null(v) || model.path_of(v).starts_with("self.");
        }
        if (held) continue;
      }
      TSNode sync = model.argument(*call, "sync_dist");
      Value v = model.value_of(sync);
      if (node_is_null(sync) || !v.known() || !v.truthy()) continue;
      TSNode on_step = model.argument(*call, "on_step");
      if (!node_is_null(on_step)) {
        Value s = model.value_of(on_step);
        if (!s.known() || !s.truthy()) continue;  // logged per epoch: reduced once, at its end
      }
      if (!model.runs_every_step(call->node, kRareGuards | kGuardRankDependent)) continue;
      auto [start, end] = first_line_range(model, call->node);
      ctx.report(start, end,
                 "`self." + std::string(method) + "(..., sync_dist=True)` on every training step all-reduces the "
                 "value for the logs: each call waits for the slowest rank and adds a round of communication "
                 "outside DDP's overlapped gradient buckets; reduce it once per epoch (on_step=False, on_epoch=True) "
                 "or log this rank's value without sync_dist");
    }
  }
}

// A barrier through a framework object on every step: Accelerate's
// `accelerator.wait_for_everyone()` and Fabric's `fabric.barrier()`
// (torch.distributed.barrier under DDP: accelerate/state.py, lightning/fabric/strategies/ddp.py).
void framework_barriers(const SemanticModel& model, RuleContext& ctx) {
  for (std::string_view method : {"wait_for_everyone", "barrier"}) {
    for (const CallSite* call : model.calls_named(method)) {
      FrameworkObject o = model.framework_object(call->receiver);
      if (!(method == "wait_for_everyone" && o == FrameworkObject::Accelerator) &&
          !(method == "barrier" && o == FrameworkObject::Fabric))
        continue;
      if (!model.runs_every_step(call->node, kRareGuards | kGuardRankDependent)) continue;
      auto [start, end] = first_line_range(model, call->node);
      ctx.report(start, end,
                 "`" + std::string(method) + "()` (a barrier) on every training step: each call waits for the "
                 "slowest rank and adds a round of communication outside DDP's overlapped gradient buckets; "
                 "do it every N steps or after the loop");
    }
  }
}

void check(const SemanticModel& model, RuleContext& ctx) {
  lightning_sync_dist(model, ctx);
  framework_barriers(model, ctx);
  for (const CallSite& call : model.calls()) {
    if (!is_collective(call.canonical)) continue;
    // rank-dependent branches are a different fault (the other ranks never join)
    if (!model.runs_every_step(call.node, kRareGuards | kGuardRankDependent)) continue;
    if (is_manual_gradient_reduce(model, call)) continue;  // reported as DDP301
    if (in_autograd_function_backward(model, call.node)) continue;  // part of the computation
    std::string name(call.canonical.substr(std::string_view("torch.distributed.").size()));
    std::string feeds;
    if (name != "barrier" && name != "monitored_barrier") {
      // a collective whose result the step needs (ranks agreeing to skip or
      // stop, a normalisation, a global count) must run on every step; only
      // one for the logs (or for nothing) can run every N steps
      bool from_caller = false;
      auto [carrier, after] = result_carrier(model, call, name, from_caller);
      if (carrier.empty() && after == 0) continue;  // what it feeds is unknown
      ValueUse use = carrier.empty() ? ValueUse{} : model.value_use(carrier, call.region, after);
      if (use.kind == ValueUse::Kind::Computation) continue;
      if (from_caller && use.kind == ValueUse::Kind::Nothing) {
        use.kind = ValueUse::Kind::Logging;  // the caller reads it, for its logs
        const Region& scope = model.regions()[static_cast<std::size_t>(model.regions()[call.region].scope)];
        use.caller = &model.project().logged_calls.find(model.functions()[scope.function].name)->second;
      }
      if (use.kind == ValueUse::Kind::Logging && !node_is_null(use.sink))
        feeds = ", and its result only feeds logging (line " +
                std::to_string(model.source().lines().position(node_start_byte(use.sink)).row) + ")";
      else if (use.kind == ValueUse::Kind::Logging && use.caller != nullptr)
        feeds = std::string(", and its result only feeds logging (") + (from_caller ? "in the caller, " : "returned to ") +
                use.caller->path + ":" + std::to_string(use.caller->line) + ")";
      else if (use.kind == ValueUse::Kind::Logging)
        feeds = ", and its result only feeds logging";
      else
        feeds = ", and its result is never read";
    }
    auto [start, end] = first_line_range(model, call.node);
    ctx.report(start, end,
               "`" + name + "` on every training step" + feeds + ": each call waits for the slowest rank and "
               "adds a round of communication outside DDP's overlapped gradient buckets; do it every N steps "
               "or after the loop");
  }
}
}  // namespace

// needs: a torch.distributed collective (is_collective: every name contains one of these) run every step
// (a training loop, or a Lightning hook, which needs neither backward nor step), Lightning's sync_dist, or
// Accelerate's wait_for_everyone
extern const Rule kRuleDDP302{
    .info = {.code = "DDP302", .name = "collective-in-training-loop", .severity = Severity::Warning,
             .summary = "A collective (all_reduce, barrier, all_gather, ...) executed on every training step",
             .url = "https://pytorch.org/docs/stable/distributed.html#collective-functions",
             .needs = "reduce|gather|broadcast|scatter|barrier|all_to_all|sync_dist|wait_for_everyone"},
    .check = &check};

}  // namespace ddplint::rules
