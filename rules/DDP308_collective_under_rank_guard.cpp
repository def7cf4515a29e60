// DDP308 collective-under-rank-guard: a collective that only some ranks reach.
#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"
#include "rules/common.hpp"

#include <string>
#include <string_view>
#include <utility>

namespace ddplint::rules {

namespace {

using Which = RankSet::Which;

// The end of the outermost rank-dependent `if` around `call` within its function.
std::uint32_t rank_branch_end(const SemanticModel& model, TSNode call) {
  std::uint32_t end = ts_node_end_byte(call);
  for (int r = model.region_of(call); r > 0; r = model.regions()[r].parent) {
    const Region& reg = model.regions()[r];
    if (reg.kind == Region::Kind::Function || reg.kind == Region::Kind::Class) break;
    if (reg.kind == Region::Kind::Branch && (reg.guard & kGuardRankDependent)) end = ts_node_end_byte(reg.node);
  }
  return end;
}

// Which ranks the message names.
std::string ranks_named(const RankSet& ranks) {
  switch (ranks.which) {
    case Which::Zero: return "only rank 0 calls it (`" + std::string(ranks.rank) + "`)";
    case Which::NonZero: return "rank 0 never calls it (`" + std::string(ranks.rank) + "`)";
    default: return "only some ranks call it";
  }
}

// True when `node` lies in a loop of the function (or module) that holds it.
bool in_loop_of_its_function(const SemanticModel& model, TSNode node) {
  for (int r = model.region_of(node); r > 0; r = model.regions()[r].parent) {
    Region::Kind kind = model.regions()[r].kind;
    if (kind == Region::Kind::Function || kind == Region::Kind::Class) return false;
    if (kind == Region::Kind::Loop) return true;
  }
  return false;
}

// True when another call of the same collective in the file may let every rank
// join: one on the complementary ranks (the if's else, or the "rank 0 goes first"
// pair `if rank != 0: barrier()` ... `if rank == 0: barrier()`, in one function or
// a pair of helpers), one on ranks that cannot be told, or one on every rank that
// follows this rank-dependent branch after it returns.
bool may_pair(const SemanticModel& model, const CallSite& call, const RankSet& ranks) {
  bool returns = model.block_exits_after(call.node);
  std::uint32_t branch_end = rank_branch_end(model, call.node);
  int function = model.top_level_function_of(call.node);
  // how many calls of this collective each function makes: a pair of helpers
  // (one waits on ranks but 0, the other on rank 0) holds one call each
  auto calls_in = [&](int f) {
    int n = 0;
    for (const CallSite& c : model.calls())
      if (c.canonical == call.canonical && model.top_level_function_of(c.node) == f) ++n;
    return n;
  };
  for (const CallSite& other : model.calls()) {
    if (&other == &call || other.canonical != call.canonical) continue;
    RankSet o = model.ranks_within_function(other.node);
    if (o.which == Which::Unknown) return true;
    if (ranks.complements(o)) {
      int other_function = model.top_level_function_of(other.node);
      if (other_function == function || (calls_in(function) == 1 && calls_in(other_function) == 1)) return true;
      // the complementary ranks call it in a loop (`while True: broadcast(signal,
      // src=0); if signal.item() == 0: break`): a protocol that may answer any
      // number of this branch's calls
      if (in_loop_of_its_function(model, other.node)) return true;
    }
    bool rank_dependent = o.which == Which::Zero || o.which == Which::NonZero || o.which == Which::Other;
    if (rank_dependent && (ranks.which == Which::Other || o.which == Which::Other)) return true;
    if (o.which == Which::All && returns && ts_node_start_byte(other.node) >= branch_end &&
        model.top_level_function_of(other.node) == function)
      return true;
  }
  return false;
}

void check(const SemanticModel& model, RuleContext& ctx) {
  for (const CallSite& call : model.calls()) {
    if (!is_collective(call.canonical)) continue;
    // a collective of a subgroup (`group=`) is joined by that group's ranks only, which are not known here
    TSNode group = model.argument(call, "group");
    if (!node_is_null(group) && model.value_of(group).kind != Value::Kind::None) continue;
    RankSet ranks = model.ranks_within_function(call.node);
    // a proof that some rank skips it: rank 0 only, every rank but 0, or another rank-dependent set
    if (ranks.which != Which::Zero && ranks.which != Which::NonZero && ranks.which != Which::Other) continue;
    if (may_pair(model, call, ranks)) continue;
    auto [start, end] = first_line_range(model, call.node);
    std::string name(call.canonical.substr(std::string_view("torch.distributed.").size()));
    ctx.report(start, end,
               "`" + name + "` inside a rank-dependent branch: " + ranks_named(ranks) +
                   ", so the ranks that do wait until the collective times out (the job hangs); call collectives "
                   "on every rank");
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
