// DDP212 ddp-forward-on-one-rank: the DDP-wrapped model called inside a rank-0 guard.
#include <algorithm>
#include <string>
#include <vector>

#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {
// True when function `f` of this file calls its parameter `name` as a model
// (`name(x)`, `name.forward(x)`) and never rebinds it.
bool calls_parameter_as_model(const SemanticModel& model, int f, std::string_view name) {
  int body = model.functions()[f].region;
  BindingList bindings = model.bindings_of(name, body);
  if (bindings.size() != 1 || bindings[0]->kind != Binding::Kind::Parameter) return false;
  for (const CallSite& c : model.calls())
    if (model.regions()[c.region].scope == body && !node_is_null(c.callee) && calls_as_model(model, c, name)) return true;
  return false;
}

// True when `path` at `node` holds the DDP model: after a wrap of that name in
// the same function, with no other binding of it between (`model =
// model.module` unwraps it); or wrapped in another function (`self.model` in
// `__init__`, a module-level wrap), whose order ddplint does not know.
bool holds_ddp_at(const SemanticModel& model, const std::vector<DdpWrap>& wraps, std::string_view path, TSNode node) {
  const int scope = model.regions()[model.region_of(node)].scope;
  bool wrapped_here = false;
  for (const DdpWrap& w : wraps) {
    if (w.result != path || w.scope != scope) continue;
    wrapped_here = true;
    if (!runs_after(model, w, node)) continue;
    bool rebound = false;
    for (const Binding* b : model.bindings_of(path, model.region_of(node))) {
      if (b->scope != scope || node_is_null(b->target)) continue;
      std::uint32_t at = node_start_byte(b->target);
      if (at > node_start_byte(w.call->node) && at < node_start_byte(node) && !node_eq(b->value, w.call->node))
        rebound = true;
    }
    if (!rebound) return true;
  }
  return !wrapped_here;
}

void check(const SemanticModel& model, RuleContext& ctx) {
  auto wraps = ddp_wraps(model);
  if (wraps.empty()) return;
  // the last name of each wrapped path: a call is a forward of it only if its
  // callee's last name (`model` in `self.model(x)`, CallSite::method) is one
  // of these, which settles most calls without building the callee's path
  // (each kept once, sorted: a file that wraps `model` in each of thousands of
  // functions has one name to compare, not one per wrap)
  std::vector<std::string_view> last_names, results;
  for (const DdpWrap& w : wraps) {
    if (w.result.empty()) continue;
    results.push_back(w.result);
    last_names.push_back(std::string_view(w.result).substr(w.result.rfind('.') + 1));
  }
  if (last_names.empty()) return;
  for (auto* names : {&last_names, &results}) {
    std::sort(names->begin(), names->end());
    names->erase(std::unique(names->begin(), names->end()), names->end());
  }
  std::string storage;
  // the DDP model passed, under a rank-0 guard, to a function that runs its
  // forward: one of this file whose body calls that parameter as a model, or
  // one of another file of the project (ProjectFacts::forwarding_calls);
  // `if rank == 0: validate(model, loader)`
  const auto& forwarding = model.project().forwarding_calls;
  for (const CallSite& c : model.calls()) {
    if (c.argument_count == 0) continue;
    std::vector<int> local = model.resolve_local_function(c);
    auto elsewhere = c.canonical.empty() ? forwarding.end() : forwarding.find(c.canonical);
    if (local.empty() && elsewhere == forwarding.end()) continue;
    int position = 0;
    bool passes = false;
    for (const Argument& a : model.arguments(c)) {
      if (a.kind == Argument::Kind::ListSplat || a.kind == Argument::Kind::DictionarySplat) break;
      int at = a.kind == Argument::Kind::Keyword ? -1 : position++;
      std::string_view path = model.path_view(a.value, storage);
      if (path.empty() || !std::binary_search(results.begin(), results.end(), path)) continue;
      if (!holds_ddp_at(model, wraps, path, c.node)) continue;
      std::string key = at < 0 ? std::string(a.keyword) : "#" + std::to_string(at);
      if (elsewhere != forwarding.end() && elsewhere->second.contains(key)) passes = true;
      for (int f : local) {
        std::string_view name = bound_parameter(model, f, a, at);
        if (!name.empty() && calls_parameter_as_model(model, f, name)) passes = true;
      }
    }
    if (!passes || !(model.enclosing_guards(c.node) & kGuardMainProcess)) continue;
    auto [start, end] = first_line_range(model, c.node);
    ctx.report(start, end,
               "the DDP-wrapped model passed under a rank-0 guard to `" + std::string(model.last_name(c.callee)) +
                   "`, which runs its forward: DDP may broadcast buffers or expect the other ranks in its next "
                   "collective, so the job can hang; pass `model.module` on rank 0, or evaluate on every rank");
  }
  for (const CallSite& c : model.calls()) {
    if (!c.method.empty() && !std::binary_search(last_names.begin(), last_names.end(), c.method)) continue;
    // a forward: the wrapped object itself called, `model(x)` / `self.model(x)`
    std::string_view callee = model.path_view(c.callee, storage);
    if (callee.empty() || !std::binary_search(results.begin(), results.end(), callee)) continue;
    if (!(model.enclosing_guards(c.node) & kGuardMainProcess)) continue;
    if (!holds_ddp_at(model, wraps, callee, c.node)) continue;
    auto [start, end] = first_line_range(model, c.node);
    ctx.report(start, end,
               "forward of the DDP-wrapped model under a rank-0 guard: DDP may broadcast buffers or expect the "
               "other ranks in its next collective, so the job can hang; evaluate `model.module` on rank 0, or "
               "evaluate on every rank");
  }
}
}  // namespace

// needs: reports forwards of a DDP/FSDP-wrapped name (ddp_wraps)
extern const Rule kRuleDDP212{
    .info = {.code = "DDP212", .name = "ddp-forward-on-one-rank", .severity = Severity::Warning,
             .summary = "The DDP-wrapped model called (forward) inside a rank-0 guard: the job can hang",
             .url = "https://pytorch.org/docs/stable/notes/ddp.html",
             .needs = "torch;DistributedDataParallel|FullyShardedDataParallel"},
    .check = &check};

}  // namespace ddplint::rules
