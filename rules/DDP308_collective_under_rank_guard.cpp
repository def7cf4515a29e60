// DDP308 collective-under-rank-guard: a collective that only some ranks reach.
#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {

// The innermost rank-dependent branch around `node` within its function, or -1.
int rank_branch(const SemanticModel& model, TSNode node) {
  for (int r = model.region_of(node); r > 0; r = model.regions()[r].parent) {
    const Region& reg = model.regions()[r];
    if (reg.kind == Region::Kind::Function || reg.kind == Region::Kind::Class) return -1;
    if (reg.kind == Region::Kind::Branch && (reg.guard & kGuardRankDependent)) return r;
  }
  return -1;
}

void check(const SemanticModel& model, RuleContext& ctx) {
  for (const CallSite& call : model.calls()) {
    if (!is_collective(call.canonical)) continue;
    int branch = rank_branch(model, call.node);
    if (branch < 0) continue;
    // the other branch of the same `if` runs the same collective: every rank joins
    bool matched = false;
    for (const CallSite& other : model.calls()) {
      if (&other == &call || other.canonical != call.canonical) continue;
      int ob = rank_branch(model, other.node);
      // the if-branch and its else share the condition node (an elif's else: the elif's)
      if (ob >= 0 && ob != branch && node_eq(model.regions()[ob].condition, model.regions()[branch].condition) &&
          model.regions()[ob].negated != model.regions()[branch].negated) {
        matched = true;
        break;
      }
    }
    if (matched) continue;
    auto [start, end] = first_line_range(model, call.node);
    std::string name(call.canonical.substr(std::string_view("torch.distributed.").size()));
    ctx.report(start, end,
               "`" + name + "` inside a rank-dependent branch: the other ranks never call it, so this rank waits "
               "until the collective times out (the job hangs); call collectives on every rank");
  }
}
}  // namespace

// needs: a torch.distributed collective (is_collective: every name contains one of these)
extern const Rule kRuleDDP308{
    .info = {.code = "DDP308", .name = "collective-under-rank-guard", .severity = Severity::Error,
             .summary = "A collective (all_reduce, barrier, broadcast, ...) called only inside a rank-dependent branch",
             .url = "https://pytorch.org/docs/stable/distributed.html#collective-functions",
             .needs = "torch;reduce|gather|broadcast|scatter|barrier|all_to_all"},
    .check = &check};

}  // namespace ddplint::rules
