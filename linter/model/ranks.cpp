// Ranks: the set of ranks of a distributed run on which a condition holds
// (RankSet), decided by evaluating each rank comparison on rank 0 and on the
// other ranks rather than by its spelling, and the ranks that run a node within
// its function (the intersection over its enclosing branches).
#include "linter/model/internal.hpp"
#include "linter/node_access.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <vector>

namespace ddplint {

using namespace model_detail;

namespace {

using Which = RankSet::Which;

// Which as a two-bit mask of {rank 0, every rank > 0}, for the sets that are one
// (None 0b00, Zero 0b01, NonZero 0b10, All 0b11); -1 for Other and Unknown.
int mask_of(Which w) {
  switch (w) {
    case Which::None: return 0;
    case Which::Zero: return 1;
    case Which::NonZero: return 2;
    case Which::All: return 3;
    default: return -1;
  }
}

Which which_of(int mask) {
  static constexpr std::array<Which, 4> by_mask = {Which::None, Which::Zero, Which::NonZero, Which::All};
  return by_mask[static_cast<std::size_t>(mask & 3)];
}

RankSet unknown() { return {}; }

RankSet constant(Which w) {
  RankSet r;
  r.which = w;
  return r;
}

// `a op b` on two integers; nullopt for an operator that is not a comparison of numbers.
std::optional<bool> compare(std::string_view op, std::int64_t a, std::int64_t b) {
  if (op == "==") return a == b;
  if (op == "!=") return a != b;
  if (op == "<") return a < b;
  if (op == "<=") return a <= b;
  if (op == ">") return a > b;
  if (op == ">=") return a >= b;
  return std::nullopt;
}

}  // namespace

bool RankSet::complements(const RankSet& other) const {
  int a = mask_of(which), b = mask_of(other.which);
  if (a < 0 || b < 0 || (a ^ b) != 3 || a == 0 || a == 3) return false;
  return rank == other.rank && uniform == other.uniform;
}

RankSet SemanticModel::rank_set(TSNode condition, bool negated) const {
  return rank_set_rec(condition, negated, 0);
}

// rank_set's recursion: `c` under `neg` negations, `depth` levels down.
RankSet SemanticModel::rank_set_rec(TSNode c, bool neg, int depth) const {
  const Kinds& k = kinds();
  if (node_is_null(c) || depth > kMaxDepth) return unknown();
  TSSymbol s = node_symbol(c);
  if (s == k.parenthesized_expression && !node_is_null(parenthesized_inner(c)))
    return rank_set_rec(parenthesized_inner(c), neg, depth + 1);
  if (s == k.not_operator) return rank_set_rec(ts_node_named_child(c, 0), !neg, depth + 1);
  // a condition the guard classifier sees no rank in holds alike on every rank:
  // it is kept by its text, as a condition both of a pair of branches must share
  GuardMask g = classify_condition(c, neg);
  auto mentions_rank = [&](TSNode x) {
    // any rank value or main-process test inside `x` (bounded walk)
    std::vector<TSNode> stack{x};
    for (int budget = 256; !stack.empty() && budget > 0; --budget) {
      TSNode n = stack.back();
      stack.pop_back();
      TSSymbol ns = node_symbol(n);
      if ((ns == k.identifier || ns == k.attribute || ns == k.call || ns == k.subscript) && is_rank_value(n)) return true;
      if (ns == k.call || ns == k.identifier || ns == k.attribute) {
        GuardMask cg = classify_condition(n, false);
        if (cg & (kGuardMainProcess | kGuardRankDependent)) return true;
      }
      for (TSNode ch : children(n)) stack.push_back(ch);
    }
    return !stack.empty();  // out of budget: assume it may
  };
  if (s == k.boolean_operator) {
    bool conj = (text(field(c, k.f_operator)) == "and") != neg;  // De Morgan for the negated branch
    RankSet a = rank_set_rec(field(c, k.f_left), neg, depth + 1);
    RankSet b = rank_set_rec(field(c, k.f_right), neg, depth + 1);
    if (a.which == Which::Unknown || b.which == Which::Unknown) return unknown();
    int ma = mask_of(a.which), mb = mask_of(b.which);
    bool a_uniform = a.which == Which::All && a.rank.empty(), b_uniform = b.which == Which::All && b.rank.empty();
    if (conj) {
      // `R != 0 and U`: R's set, under U
      RankSet out;
      if (a_uniform || b_uniform) {
        out = a_uniform ? b : a;
        const RankSet& u = a_uniform ? a : b;
        out.uniform.insert(out.uniform.end(), u.uniform.begin(), u.uniform.end());
      } else if (ma >= 0 && mb >= 0 && (a.rank == b.rank || ma == 0 || ma == 3 || mb == 0 || mb == 3)) {
        out.which = which_of(ma & mb);
        out.rank = (ma == 0 || ma == 3) ? b.rank : a.rank;
        out.uniform = a.uniform;
        out.uniform.insert(out.uniform.end(), b.uniform.begin(), b.uniform.end());
      } else if (ma == 0 || mb == 0) {
        return constant(Which::None);
      } else {
        out.which = Which::Other;  // two rank tests that do not combine: still rank-dependent
        out.rank = a.rank;
      }
      std::sort(out.uniform.begin(), out.uniform.end());
      out.uniform.erase(std::unique(out.uniform.begin(), out.uniform.end()), out.uniform.end());
      return out;
    }
    // a disjunction: only of rank tests without conditions (`rank == -1 or rank == 0`)
    if (!a.uniform.empty() || !b.uniform.empty() || a_uniform || b_uniform) return unknown();
    if (ma >= 0 && mb >= 0 && (a.rank == b.rank || ma == 0 || ma == 3 || mb == 0 || mb == 3)) {
      RankSet out;
      out.which = which_of(ma | mb);
      out.rank = (ma == 0 || ma == 3) ? b.rank : a.rank;
      return out;
    }
    return unknown();
  }
  if (s == k.comparison_operator) {
    TSNode rank_side{};
    int m = rank_comparison_mask(c, neg, &rank_side);
    if (m >= 0) {
      RankSet out;
      out.rank = text(rank_side);
      out.which = m == 4 ? Which::Other : which_of(m);  // `rank == 3`, `rank < 4`: some of the other ranks
      return out;
    }
    if (g & kGuardRankDependent) {
      NodeList operands;
      for (TSNode ch : children(c)) operands.push_back(ch);
      if (operands.size() == 2 && (is_rank_value(operands[0]) || is_rank_value(operands[1])))
        return constant(Which::Other);
    }
  }
  // a name bound once to a test of the ranks: `is_master = rank == 0`,
  // `distributed = args.local_rank >= 0` (every rank of a distributed run)
  // (a few levels only: a chain of names bound to tests of each other,
  // `d1 = d0 and d0`, would otherwise be followed down every branch)
  if (s == k.identifier && depth < 4) {
    TSNode bound = single_assignment(c);
    if (!node_is_null(bound)) {
      TSSymbol bs = node_symbol(bound);
      if (bs == k.comparison_operator || bs == k.boolean_operator || bs == k.not_operator ||
          bs == k.parenthesized_expression) {
        RankSet via = rank_set_rec(bound, neg, depth + 1);
        if (via.which != Which::Unknown && !(via.which == Which::All && !via.uniform.empty())) return via;
      }
    }
  }
  // a main-process test by name (`is_main_process()`, `args.is_master`) or a bare rank
  // (`if rank:` is every rank but 0, `if not dist.get_rank():` is rank 0)
  if (s == k.call || s == k.identifier || s == k.attribute) {
    if (is_rank_value(c)) {
      RankSet out;
      out.rank = text(c);
      out.which = neg ? Which::Zero : Which::NonZero;
      return out;
    }
    GuardMask positive = classify_condition(c, false);
    if (positive & kGuardMainProcess) {
      RankSet out;
      out.rank = text(s == k.call ? field(c, k.f_function) : c);
      out.which = neg ? Which::NonZero : Which::Zero;
      return out;
    }
  }
  if (g & (kGuardMainProcess | kGuardRankDependent)) return constant(Which::Other);
  // `dist.is_initialized()` / `dist.is_available()`: true on every rank of a
  // distributed run, the only run where a collective can hang; taken false
  // (`if not dist.is_initialized(): return`), no rank of it enters
  if (s == k.call) {
    const CallSite* call = call_at(c);
    if (call != nullptr && (call->canonical == "torch.distributed.is_initialized" ||
                            call->canonical == "torch.distributed.is_available"))
      return constant(neg ? Which::None : Which::All);
  }
  if (mentions_rank(c)) return unknown();
  // no rank in it: the same on every rank; `rank != -1`-style distributed-mode tests land here too
  RankSet out;
  out.which = Which::All;
  out.uniform.emplace_back(text(c), neg);
  return out;
}

int SemanticModel::rank_comparison_mask(TSNode c, bool negated, TSNode* rank_side) const {
  const Kinds& k = kinds();
  if (node_is_null(c) || node_symbol(c) != k.comparison_operator) return -1;
  NodeList operands;
  std::string op;
  for (TSNode ch : children(c, false)) {
    if (ts_node_is_named(ch)) operands.push_back(ch);
    else op += (op.empty() ? "" : " ") + std::string(text(ch));
  }
  if (operands.size() != 2) return -1;
  int side = is_rank_value(operands[0]) ? 0 : is_rank_value(operands[1]) ? 1 : -1;
  if (side < 0) return -1;
  TSNode other = operands[1 - side];
  std::string_view o = side == 0 ? std::string_view(op) : mirrored(op);
  // the truth of the comparison on rank r, or nullopt when it cannot be told
  auto holds = [&](std::int64_t r) -> std::optional<bool> {
    if (op == "in" || op == "not in") {
      if (side != 0) return std::nullopt;
      TSSymbol os = node_symbol(other);
      if (os != k.tuple && os != k.list) return std::nullopt;
      bool found = false;
      for (TSNode element : children(other)) {
        Value e = value_of(element);
        if (e.kind != Value::Kind::Int) return std::nullopt;
        found = found || e.i == r;
      }
      return found == (op == "in");
    }
    Value v = value_of(other);
    if (v.kind != Value::Kind::Int) return std::nullopt;
    return compare(o, r, v.i);
  };
  auto t0 = holds(0), t1 = holds(1), tl = holds(std::int64_t{1} << 30);
  if (!t0 || !t1 || !tl) return -1;
  if (rank_side != nullptr) *rank_side = operands[side];
  if (*t1 != *tl) return 4;
  int m = (*t0 ? 1 : 0) | (*t1 ? 2 : 0);
  return negated ? (m ^ 3) : m;
}

RankSet SemanticModel::ranks_within_function(TSNode node) const {
  RankSet out = constant(Which::All);
  for (int r = region_of(node); r > 0; r = regions_[r].parent) {
    const Region& reg = regions_[r];
    if (reg.kind == Region::Kind::Function || reg.kind == Region::Kind::Class) break;
    if (reg.kind != Region::Kind::Branch || node_is_null(reg.condition)) continue;
    RankSet b = rank_set(reg.condition, reg.negated);
    if (b.which == Which::Unknown) return unknown();
    out.uniform.insert(out.uniform.end(), b.uniform.begin(), b.uniform.end());
    int mb = mask_of(b.which);
    if (mb == 3) continue;  // every rank (a distributed-mode test, or no rank at all)
    if (mb == 0) {
      out.which = Which::None;
      continue;
    }
    if (out.which == Which::Other || b.which == Which::Other || (!out.rank.empty() && out.rank != b.rank)) {
      out.which = Which::Other;  // rank-dependent, but not one of the sets that pair up
      if (out.rank.empty()) out.rank = b.rank;
      continue;
    }
    if (out.which == Which::None) continue;
    out.which = which_of(mask_of(out.which) & mb);
    out.rank = b.rank;
  }
  std::sort(out.uniform.begin(), out.uniform.end());
  out.uniform.erase(std::unique(out.uniform.begin(), out.uniform.end()), out.uniform.end());
  return out;
}

bool SemanticModel::block_exits_after(TSNode node) const {
  const Kinds& k = kinds();
  // the statement of `node`'s block: the child of a `block` (or the module) that holds it
  TSNode statement = node;
  for (TSNode n = node; !node_is_null(n); n = ts_node_parent(n)) {
    TSNode p = ts_node_parent(n);
    if (node_is_null(p) || node_symbol(p) == k.block || node_symbol(p) == k.module) {
      statement = n;
      break;
    }
  }
  for (TSNode n = ts_node_next_named_sibling(statement); !node_is_null(n); n = ts_node_next_named_sibling(n)) {
    TSSymbol s = node_symbol(n);
    if (s == k.return_statement || s == k.raise_statement) return true;
  }
  return false;
}

}  // namespace ddplint
