// DDP308 collective-under-rank-guard: a collective that only some ranks reach.
#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

#include <optional>
#include <string_view>
#include <utility>

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

// A rank-0 test, `R == 0` / `R in (-1, 0)` (true) or `R != 0` / `R not in
// [-1, 0]` (false), as the branch `r` takes it (an `else` flips it): the rank
// expression's text, and whether the branch runs on rank 0. -1 is the
// script's "not distributed" value, which no rank of a distributed run has.
std::optional<std::pair<std::string_view, bool>> rank_zero_test(const SemanticModel& model, int r) {
  const Region& reg = model.regions()[r];
  TSNode c = reg.condition;
  const Kinds& k = kinds();
  if (node_is_null(c) || node_symbol(c) != k.comparison_operator) return std::nullopt;
  NodeList operands;
  std::string op;
  for (TSNode ch : children(c, false)) {
    if (ts_node_is_named(ch)) operands.push_back(ch);
    else op += (op.empty() ? "" : " ") + std::string(model.text(ch));
  }
  if (operands.size() != 2 || !model.is_rank_value(operands[0])) return std::nullopt;
  bool positive;
  if (op == "==" || op == "in") positive = true;
  else if (op == "!=" || op == "not in") positive = false;
  else return std::nullopt;
  TSNode other = operands[1];
  bool zero = false;
  if (op == "==" || op == "!=") {
    Value v = model.value_of(other);
    zero = v.kind == Value::Kind::Int && v.i == 0;
  } else {
    TSSymbol os = node_symbol(other);
    if (os != k.tuple && os != k.list) return std::nullopt;
    for (TSNode element : children(other)) {
      Value e = model.value_of(element);
      if (e.kind != Value::Kind::Int || (e.i != 0 && e.i != -1)) return std::nullopt;
      zero = zero || e.i == 0;
    }
  }
  if (!zero) return std::nullopt;
  return std::make_pair(model.text(operands[0]), positive != reg.negated);
}

// True when branches `a` and `b` are `if` statements of the same block that
// test the same rank against 0 with opposite outcomes (the "rank 0 goes
// first" idiom: `if rank != 0: barrier()` ... `if rank == 0: barrier()`):
// every rank runs both statements and enters exactly one of the two branches.
bool complementary_rank_zero_tests(const SemanticModel& model, int a, int b) {
  const auto& regions = model.regions();
  if (regions[a].parent != regions[b].parent || node_eq(regions[a].node, regions[b].node)) return false;
  auto ta = rank_zero_test(model, a), tb = rank_zero_test(model, b);
  return ta && tb && ta->first == tb->first && ta->second != tb->second;
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
      if (ob >= 0 && complementary_rank_zero_tests(model, branch, ob)) {
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
