// What code a run of the project reaches: definitions no code names
// (SemanticModel::unreached), from the file's name occurrences and the
// project's imports (ProjectFacts::imported_names).
#include <algorithm>
#include <optional>

#include "linter/model/internal.hpp"
#include "linter/node_access.hpp"

namespace ddplint {

namespace {

// `__name__ == "__main__"` (either side, either quote).
bool main_test(const SemanticModel& m, TSNode condition) {
  const Kinds& k = kinds();
  while (!node_is_null(condition) && node_symbol(condition) == k.parenthesized_expression)
    condition = parenthesized_inner(condition);
  if (node_is_null(condition) || node_symbol(condition) != k.comparison_operator) return false;
  bool name = false, main = false;
  for (TSNode c : children(condition)) {
    if (node_symbol(c) == k.identifier && m.text(c) == "__name__") name = true;
    if (node_symbol(c) == k.string) {
      std::string_view t = m.text(c);
      main = main || t == "\"__main__\"" || t == "'__main__'";
    }
  }
  return name && main;
}

}  // namespace

bool SemanticModel::has_main_guard() const {
  const Kinds& k = kinds();
  for (TSNode c : children(regions_[0].node))
    if (node_symbol(c) == k.if_statement && main_test(*this, field(c, k.f_condition))) return true;
  return false;
}

void SemanticModel::build_unreached() const {
  unreached_built_ = true;
  const ProjectFacts& p = project();
  // a module's self-test: the `if __name__ == "__main__":` block of a module
  // that other files of the project import and no launch script starts (a
  // dataset module that prints one batch, a loss module's demo); the project
  // runs the module through its imports, never as the main program (a
  // module imported by a computed name elsewhere is still only imported:
  // an import never runs the block)
  if (p.imported && p.launched_by.empty()) {
    const Kinds& k = kinds();
    for (TSNode c : children(regions_[0].node))
      if (node_symbol(c) == k.if_statement && main_test(*this, field(c, k.f_condition)))
        unreached_.emplace_back(node_start_byte(c), node_end_byte(c));
  }
  // what runs is certain from here on: names in these ranges reach nothing
  // (the self-test block above is a judgement, and its names still reach)
  const std::size_t certain = unreached_.size();
  build_unreached_constant_branches();
  build_unreached_launched_branches();
  build_unreached_definitions(certain);
  std::sort(unreached_.begin(), unreached_.end());
}

namespace {
// True when byte `at` lies in one of `ranges` ([start, end) pairs sorted by start).
template <class Ranges>
bool covered(const Ranges& ranges, std::uint32_t at) {
  auto it = std::upper_bound(ranges.begin(), ranges.end(), at,
                             [](std::uint32_t b, const std::pair<std::uint32_t, std::uint32_t>& r) { return b < r.first; });
  return it != ranges.begin() && at < std::prev(it)->second;
}

// The truth of `c` when it is known from constants alone (`False`, `0`,
// `False and x`, `not True`, `x and False`), else nullopt.
std::optional<bool> constant_truth(const SemanticModel& m, TSNode c, int depth) {
  const Kinds& k = kinds();
  if (node_is_null(c) || depth > 8) return std::nullopt;
  TSSymbol s = node_symbol(c);
  if (s == k.parenthesized_expression) return constant_truth(m, parenthesized_inner(c), depth + 1);
  if (s == k.not_operator) {
    std::optional<bool> v = constant_truth(m, ts_node_named_child(c, 0), depth + 1);
    return v ? std::optional<bool>(!*v) : std::nullopt;
  }
  if (s == k.boolean_operator) {
    std::string_view op = m.text(field(c, k.f_operator));
    std::optional<bool> a = constant_truth(m, field(c, k.f_left), depth + 1);
    std::optional<bool> b = constant_truth(m, field(c, k.f_right), depth + 1);
    if (op == "and") {
      if ((a && !*a) || (b && !*b)) return false;
      if (a && b) return true;
    } else {
      if ((a && *a) || (b && *b)) return true;
      if (a && b) return false;
    }
    return std::nullopt;
  }
  // literals only: a name bound to a constant may be rebound where the walk does not see
  if (s == k.false_ || s == k.none) return false;
  if (s == k.true_) return true;
  if (s == k.integer) {
    std::string_view t = m.text(c);
    return !(t == "0");
  }
  return std::nullopt;
}
}  // namespace

void SemanticModel::build_unreached_constant_branches() const {
  // `if False:`, `if False and not params.print_diagnostics:`, `if 0:`, and the
  // `else` of `if True:`: no run takes the branch
  for (std::size_t r = 1; r < regions_.size(); ++r) {
    const Region& reg = regions_[r];
    if (reg.kind != Region::Kind::Branch || node_is_null(reg.condition)) continue;
    std::optional<bool> v = constant_truth(*this, reg.condition, 0);
    if (v && *v == reg.negated) unreached_.push_back(region_ranges_[r]);
  }
}

void SemanticModel::build_unreached_launched_branches() const {
  // a branch on a command-line option (`if args.enable_deepspeed:`) that every
  // launch of the script gives, with one value: the other branch is not how
  // the project runs (VideoMAE's DDP wrap in the `else` of a DeepSpeed flag
  // every script passes). A value the launches do not give is left alone: a
  // default may be changed at run time by a helper that receives `args`.
  const ProjectFacts& p = project();
  if (p.launched_by.empty()) return;
  const Kinds& k = kinds();
  for (std::size_t r = 1; r < regions_.size(); ++r) {
    const Region& reg = regions_[r];
    if (reg.kind != Region::Kind::Branch || node_is_null(reg.condition)) continue;
    TSNode c = reg.condition;
    bool negated = reg.negated;
    for (int guard = 0; guard < 8 && !node_is_null(c); ++guard) {
      TSSymbol s = node_symbol(c);
      if (s == k.parenthesized_expression) c = parenthesized_inner(c);
      else if (s == k.not_operator) {
        c = ts_node_named_child(c, 0);
        negated = !negated;
      } else
        break;
    }
    if (node_is_null(c) || node_symbol(c) != k.attribute) continue;
    // every launch read and giving the option itself
    bool every_launch_gives = true;
    for (const LaunchOfScript& launch : p.launched_by)
      every_launch_gives = every_launch_gives && !launch.unread && !launch.arguments_opaque && gives_option(launch, c);
    if (!every_launch_gives) continue;
    Value v = launched_value(c);
    if (!v.known() || (v.kind != Value::Kind::Int && v.kind != Value::Kind::Bool)) continue;
    if (v.truthy() == negated) unreached_.push_back(region_ranges_[r]);
  }
}

std::uint8_t SemanticModel::dynamic_name_use() const {
  if (dynamic_name_use_) return *dynamic_name_use_;
  std::uint8_t use = 0;
  for (const CallSite& c : calls_) {
    // builtins have no canonical name unless imported: the callee's name
    std::string_view n = !c.canonical.empty() ? c.canonical
                         : !node_is_null(c.callee) && node_symbol(c.callee) == kinds().identifier ? text(c.callee)
                                                                                                  : std::string_view();
    const bool bare = arguments(c).empty();
    if (n == "globals" || n == "locals" || n == "eval" || n == "exec") use |= kNamesByScope;
    else if (n == "vars") use |= bare ? kVarsOfScope : kNamesByAttribute;
    else if (n == "fire.Fire" && bare) use |= kFireCommands;
    else if (n == "getattr") use |= kNamesByAttribute;
  }
  dynamic_name_use_ = use;
  return use;
}

void SemanticModel::build_unreached_definitions(std::size_t certain) const {
  const ProjectFacts& p = project();
  // a package's module is an API others may call, whatever this project calls
  if (!p.indexed || p.imported_whole || p.package_module) return;
  // only an entry of the project: otherwise nothing says what runs at all
  if (p.launched_by.empty() && !p.imported && !has_main_guard()) return;
  if (dynamic_name_use() & (kNamesByScope | kVarsOfScope | kFireCommands)) return;
  const Kinds& k = kinds();
  struct Definition {
    std::uint32_t start, end;
    std::string_view name;
    bool reached = false;
  };
  std::vector<Definition> defs;  // the candidates, in text order
  for (TSNode c : children(regions_[0].node)) {
    TSSymbol s = node_symbol(c);
    if (s != k.function_definition && s != k.class_definition) continue;  // decorated ones are reached
    TSNode name = field(c, k.f_name);
    if (node_is_null(name)) continue;
    std::string_view n = text(name);
    if (n.size() > 4 && n.starts_with("__") && n.ends_with("__")) continue;  // module __getattr__, __dir__
    if (p.imported_names.contains(n)) continue;
    defs.push_back({node_start_byte(c), node_end_byte(c), n});
  }
  if (defs.empty()) return;
  auto container = [&](std::uint32_t at) -> int {  // the candidate holding byte `at`, or -1
    auto it = std::upper_bound(defs.begin(), defs.end(), at, [](std::uint32_t b, const Definition& d) { return b < d.start; });
    if (it == defs.begin()) return -1;
    --it;
    return at < it->end ? static_cast<int>(it - defs.begin()) : -1;
  };
  if (!name_occurrences_built_) build_name_occurrences();
  // a name in code no run takes (unreached_[certain..]: constant-false
  // branches, branches the launches never take) reaches nothing
  std::vector<std::pair<std::uint32_t, std::uint32_t>> dead(unreached_.begin() + static_cast<std::ptrdiff_t>(certain),
                                                            unreached_.end());
  std::sort(dead.begin(), dead.end());
  // edges: a candidate named inside another reaches it only if that one is reached
  std::vector<std::vector<int>> named_in(defs.size());
  std::vector<int> work;
  for (std::size_t i = 0; i < defs.size(); ++i) {
    NameOccurrence key{name_hash(defs[i].name), 0, 0};
    for (auto it = std::lower_bound(name_occurrences_.begin(), name_occurrences_.end(), key);
         it != name_occurrences_.end() && it->hash == key.hash; ++it) {
      int in = container(it->start);
      if (in == static_cast<int>(i)) continue;  // its own name, recursion
      if (covered(dead, it->start)) continue;
      if (in < 0) {
        if (!defs[i].reached) work.push_back(static_cast<int>(i));
        defs[i].reached = true;
        break;
      }
      named_in[static_cast<std::size_t>(in)].push_back(static_cast<int>(i));
    }
  }
  while (!work.empty()) {
    int d = work.back();
    work.pop_back();
    for (int next : named_in[static_cast<std::size_t>(d)])
      if (!defs[static_cast<std::size_t>(next)].reached) {
        defs[static_cast<std::size_t>(next)].reached = true;
        work.push_back(next);
      }
  }
  for (const Definition& d : defs)
    if (!d.reached) unreached_.emplace_back(d.start, d.end);
}

bool SemanticModel::unreached(std::uint32_t offset) const {
  if (!unreached_built_) build_unreached();
  return covered(unreached_, offset);
}

}  // namespace ddplint
