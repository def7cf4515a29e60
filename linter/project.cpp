#include "linter/project.hpp"
#include "linter/node_access.hpp"

#include <algorithm>
#include <set>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <unordered_set>

#include <climits>
#include <optional>

#include "linter/config.hpp"
#include "linter/discovery.hpp"
#include "linter/gitignore.hpp"
#include "linter/launch_model.hpp"
#include "linter/lint_cache.hpp"
#include "linter/source.hpp"
#include "linter/syntax.hpp"

namespace ddplint {

namespace fs = std::filesystem;

namespace {

// Every guard kind: a call under any classified `if` is not "every step" for
// another file (a rule there may exempt any of them).
constexpr GuardMask kAnyGuard = kGuardPeriodic | kGuardFinalStep | kGuardMainProcess | kGuardRankDependent |
                                kGuardOffByDefault | kGuardOnFailure;


std::vector<std::string> split_dots(std::string_view name) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= name.size()) {
    std::size_t dot = name.find('.', start);
    if (dot == std::string_view::npos) dot = name.size();
    parts.emplace_back(name.substr(start, dot - start));
    start = dot + 1;
  }
  return parts;
}

// The modules one file imports, read from its import statements' lines: the
// edges the index then checks with the model. A sound over-approximation of
// the file's `import`/`from` statements (a word `import` in a docstring adds a
// candidate that resolves to nothing or to a file that is then summarised for
// nothing; it decides no fact), like the prefilter.
// Bounds on what one import line adds (a crafted line of 50,000 dots and
// 10,000 names would otherwise cost seconds and hundreds of MB).
constexpr std::size_t kMaxModuleName = 256, kMaxNamesPerImport = 256;

// Logical lines of `text` for the import scan: physical lines joined where a
// `(` is still open or a line ends in `\`, split at `;`, with a leading
// `try:`/`else:`/`finally:` or an `if ...:` one-liner's condition dropped.
// Line breaks are `\n`, `\r\n` or a lone `\r`, as Python reads them.
template <class Each>
void import_statements(std::string_view text, Each&& each) {
  std::string logical;
  int depth = 0;
  auto flush = [&] {
    std::string_view rest(logical);
    for (;;) {  // `;`-joined statements
      std::size_t semi = rest.find(';');
      std::string_view stmt = rest.substr(0, semi);
      std::size_t i = stmt.find_first_not_of(" \t");
      if (i != std::string_view::npos) {
        stmt.remove_prefix(i);
        for (std::string_view head : {"try:", "else:", "finally:"})
          if (stmt.starts_with(head)) {
            stmt.remove_prefix(head.size());
            stmt.remove_prefix(std::min(stmt.size(), stmt.find_first_not_of(" \t")));
          }
        if (stmt.starts_with("if ")) {  // `if TYPE_CHECKING: import x`
          std::size_t colon = stmt.find(": ");
          if (colon != std::string_view::npos) {
            stmt.remove_prefix(colon + 1);
            stmt.remove_prefix(std::min(stmt.size(), stmt.find_first_not_of(" \t")));
          }
        }
        each(stmt);
      }
      if (semi == std::string_view::npos) break;
      rest.remove_prefix(semi + 1);
    }
    logical.clear();
    depth = 0;
  };
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t eol = text.find_first_of("\r\n", pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + (text.substr(eol, 2) == "\r\n" ? 2 : 1);
    if (std::size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    bool continued = !line.empty() && line.back() == '\\';
    if (continued) line.remove_suffix(1);
    // only a statement that may import is kept (and joined with its continuation lines)
    if (logical.empty()) {
      std::size_t i = line.find_first_not_of(" \t");
      std::string_view start = i == std::string_view::npos ? std::string_view() : line.substr(i);
      if (!(start.starts_with("from ") || start.starts_with("import ") || start.starts_with("try:") ||
            start.starts_with("if ") || start.starts_with("else:")))
        continue;
    }
    logical.append(line);
    logical.push_back(' ');
    for (char c : line) depth += c == '(' ? 1 : c == ')' ? -1 : 0;
    if (depth <= 0 && !continued) flush();
    else if (logical.size() > 4 * kMaxModuleName * kMaxNamesPerImport) flush();  // bounded
  }
  if (!logical.empty()) flush();
}

// True when the text imports a module by a computed name: a call of
// `import_module(` or `__import__(` (not on a comment line) whose first
// argument is not one plain string literal.
// `importlib.import_module("torch.distributed")` names its module and is no
// computed import. A mention in a docstring still counts (no claim is the
// safe side: reachability is then not answered).
bool computed_import(std::string_view text) {
  for (std::string_view call : {std::string_view("import_module("), std::string_view("__import__(")}) {
    for (std::size_t at = text.find(call); at != std::string_view::npos; at = text.find(call, at + 1)) {
      std::size_t line_start = text.rfind('\n', at);
      line_start = line_start == std::string_view::npos ? 0 : line_start + 1;
      std::string_view before = text.substr(line_start, at - line_start);
      std::size_t code = before.find_first_not_of(" \t");
      if (code != std::string_view::npos && before[code] == '#') continue;  // a comment line
      if (before.find('#') != std::string_view::npos) return true;  // a comment after code, or a '#' in a string: no claim
      std::size_t i = at + call.size();
      while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
      if (i < text.size() && (text[i] == 'r' || text[i] == 'u')) ++i;  // r"..." (not f"...")
      if (i >= text.size() || (text[i] != '"' && text[i] != '\'')) return true;
      char quote = text[i];
      std::size_t close = i + 1;
      while (close < text.size() && text[close] != quote && text[close] != '\n' && text[close] != '\\') ++close;
      if (close >= text.size() || text[close] != quote) return true;
      std::size_t j = close + 1;
      while (j < text.size() && (text[j] == ' ' || text[j] == '\t')) ++j;
      if (j >= text.size() || (text[j] != ',' && text[j] != ')')) return true;  // "models." + name
    }
  }
  return false;
}

std::vector<std::string> imported_modules(std::string_view text) {
  std::vector<std::string> out;
  // identifier bytes: ASCII letters, digits, `_`, `.`, and any byte of a
  // non-ASCII (UTF-8) name
  auto ident = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || static_cast<unsigned char>(c) >= 0x80;
  };
  import_statements(text, [&](std::string_view line) {
    auto words = [&](std::string_view rest, auto&& each) {  // comma-separated dotted names
      std::size_t j = 0, names = 0;
      while (j < rest.size()) {
        while (j < rest.size() && (rest[j] == ' ' || rest[j] == ',' || rest[j] == '(' || rest[j] == ')' || rest[j] == '\t')) ++j;
        std::size_t k = j;
        while (k < rest.size() && ident(rest[k])) ++k;
        if (k == j) break;
        std::string_view word = rest.substr(j, k - j);
        j = k;
        if (word.size() > kMaxModuleName || ++names > kMaxNamesPerImport) break;
        while (j < rest.size() && (rest[j] == ' ' || rest[j] == '\t')) ++j;
        if (rest.substr(j, 3) == "as " || rest.substr(j, 3) == "as\t") {  // skip the alias
          j += 3;
          while (j < rest.size() && (rest[j] == ' ' || rest[j] == '\t')) ++j;
          while (j < rest.size() && ident(rest[j])) ++j;
        }
        each(word);
      }
    };
    if (line.starts_with("import ")) {
      words(line.substr(7), [&](std::string_view w) { out.emplace_back(w); });
    } else if (line.starts_with("from ")) {
      std::string_view rest = line.substr(5);
      rest.remove_prefix(std::min(rest.size(), rest.find_first_not_of(" \t")));
      std::size_t k = 0;
      while (k < rest.size() && ident(rest[k])) ++k;
      std::string module(rest.substr(0, k));
      if (module.empty() || module.size() > kMaxModuleName) return;
      std::size_t imp = rest.find(" import", k);
      out.push_back(module);
      if (imp == std::string_view::npos) return;
      words(rest.substr(imp + 7), [&](std::string_view w) {  // `from pkg import mod`: mod may be a module
        out.push_back(module.back() == '.' ? module + std::string(w) : module + "." + std::string(w));
      });
    }
  });
  return out;
}

// The name of the top-level function whose body holds `node` (empty: none).
std::string top_level_function_of(const SemanticModel& model, TSNode node) {
  int f = model.top_level_function_of(node);
  return f < 0 ? std::string() : std::string(model.functions()[f].name);
}

// True when some binding of `expr` (a name or attribute path) visible from
// `region` is the result of a DDP or FSDP wrap.
bool may_hold_ddp_model(const SemanticModel& model, TSNode expr, int region) {
  const Kinds& k = kinds();
  if (node_symbol(expr) == k.call) {  // `engine.fit(DDP(net), ...)`
    const CallSite* c = model.call_at(expr);
    return c != nullptr && is_ddp_wrap(c->canonical);
  }
  if (node_symbol(expr) != k.identifier && node_symbol(expr) != k.attribute) return false;
  std::string path = model.path_of(expr);
  if (path.empty()) return false;
  auto is_wrap = [&](const Binding* b) {
    if (b->kind != Binding::Kind::Assign || node_is_null(b->value)) return false;
    const CallSite* c = model.call_at(b->value);
    return c != nullptr && is_ddp_wrap(c->canonical);
  };
  // in the same function, the last binding before the call that runs on
  // every path to it (its region holds the call: `model = model.module` after
  // the wrap unwraps it) decides, unless a binding in a branch after it may
  // wrap (`if args.distributed: model = DDP(model)`); no such binding: any
  // wrap may
  const int scope = model.regions()[region].scope;
  auto holds_call = [&](int r) {
    for (int at = region; at >= 0; at = model.regions()[at].parent) {
      if (at == r) return true;
      if (at == 0) break;
    }
    return false;
  };
  const Binding* decisive = nullptr;
  bool any = false;
  for (const Binding* b : model.bindings_of(path, region)) {
    any = any || is_wrap(b);
    if (b->scope == scope && !node_is_null(b->target) && node_start_byte(b->target) < node_start_byte(expr) &&
        holds_call(model.region_of(b->target)) &&
        (decisive == nullptr || node_start_byte(b->target) > node_start_byte(decisive->target)))
      decisive = b;
  }
  if (decisive == nullptr) return any;
  if (is_wrap(decisive)) return true;
  for (const Binding* b : model.bindings_of(path, region))
    if (b->scope == scope && is_wrap(b) && node_start_byte(b->target) > node_start_byte(decisive->target) &&
        node_start_byte(b->target) < node_start_byte(expr))
      return true;
  return false;
}

// A call whose result may be, or may hold, objects that live on after the
// statement (another object's state): a listing or view of them
// (`model.parameters()`, `d.values()`, `x.view(-1)`, `t.float()`, which is `t`
// when already float), or a builtin container of such (`list(grads)`); false
// for a new object (`torch.stack(xs)`, `x.mean()`, `loss.item()`).
bool may_alias_call(const SemanticModel& model, const CallSite& c, int depth);
bool holds_own_value(const SemanticModel& model, std::string_view name, int region, int depth = 0);

// True when `value`, bound to a name a call passes, may hold objects that
// outlive that statement and are read by code ddplint does not follow there:
// an attribute or subscript (`p.grad`), a comprehension of them (`[p.grad for
// p in model.parameters()]`: the gradients the optimizer steps with), another
// name, a display holding any of these, an aliasing call. A literal,
// arithmetic or a new object: false.
bool may_alias_state(const SemanticModel& model, TSNode value, int depth) {
  const Kinds& k = kinds();
  if (node_is_null(value) || depth > 4) return true;
  TSSymbol s = node_symbol(value);
  // `f([loss])[0]`: an entry of what a call returns is that call's result
  if (s == k.subscript && node_symbol(field(value, k.f_value)) == k.call)
    return may_alias_state(model, field(value, k.f_value), depth + 1);
  // another name: what that name holds (`loss = partial_loss`)
  if (s == k.identifier) return !holds_own_value(model, model.text(value), model.region_of(value), depth + 1);
  if (s == k.attribute || s == k.subscript) return true;
  if (s == k.list_comprehension || s == k.generator_expression || s == k.set_comprehension ||
      s == k.dictionary_comprehension) {
    TSNode element = ts_node_named_child(value, 0);  // the body before `for`
    if (!node_is_null(element) && node_symbol(element) == k.pair) element = field(element, k.f_value);
    return may_alias_state(model, element, depth + 1);
  }
  if (s == k.list || s == k.tuple || s == k.parenthesized_expression || s == k.dictionary) {
    for (TSNode e : children(value)) {
      if (!ts_node_is_named(e) || node_symbol(e) == k.comment) continue;
      if (may_alias_state(model, node_symbol(e) == k.pair ? field(e, k.f_value) : e, depth + 1)) return true;
    }
    return false;
  }
  if (s == k.call) {
    const CallSite* c = model.call_at(value);
    return c == nullptr || may_alias_call(model, *c, depth);
  }
  if (s == k.conditional_expression || s == k.named_expression || s == k.list_splat || s == k.dictionary_splat)
    return true;
  return false;  // a literal, arithmetic, a comparison: a new value
}

// The generator a call is given as its only argument (`f(p.grad for p in
// params)`: tree-sitter makes it the call's argument list), or a null node.
TSNode generator_argument(const CallSite& c) {
  TSNode args = field(c.node, kinds().f_arguments);
  return !node_is_null(args) && node_symbol(args) == kinds().generator_expression ? args : TSNode{};
}

bool may_alias_call(const SemanticModel& model, const CallSite& c, int depth) {
  // objects the receiver holds (a module's parameters, a dict's entries)
  static constexpr std::string_view kHeld[] = {"parameters", "named_parameters", "buffers", "named_buffers",
                                               "children", "modules", "values", "items", "keys", "get", "pop",
                                               "setdefault", "state_dict"};
  // the receiver itself or a view of its storage
  static constexpr std::string_view kViews[] = {
      "view", "view_as", "reshape", "reshape_as", "flatten", "expand", "expand_as", "squeeze", "unsqueeze",
      "narrow", "split", "chunk", "unbind", "t", "transpose", "permute", "detach", "to", "float", "half",
      "bfloat16", "double", "cuda", "cpu", "contiguous", "type", "copy_", "add_", "mul_", "div_", "zero_",
      "fill_", "requires_grad_", "detach_"};
  static constexpr std::string_view kContainers[] = {"list", "tuple", "iter", "zip", "dict", "sorted", "reversed",
                                                     "enumerate", "filter", "map", "set"};
  if (!node_is_null(c.receiver)) {
    for (std::string_view v : kHeld)
      if (c.method == v) return true;
    // a view of the receiver's storage: what the receiver is (`loss.detach()`
    // of a loss of this step, `p.grad.view(-1)` of a gradient)
    for (std::string_view v : kViews)
      if (c.method == v) return may_alias_state(model, c.receiver, depth + 1);
    return false;  // a method's result: `x.mean()`, `loss.item()`, `x.clone()`
  }
  if (TSNode g = generator_argument(c); !node_is_null(g)) return may_alias_state(model, g, depth + 1);
  for (std::string_view b : kContainers) {
    if (c.method != b || !c.canonical.empty()) continue;
    for (const Argument& a : model.arguments(c))
      if (may_alias_state(model, a.value, depth + 1)) return true;
    return false;
  }
  return false;  // a function's result: `torch.stack(xs)`, `torch.tensor([v])`
}

// True when a name passed to a call holds only objects made in this function
// for it: every binding of the name that reaches the call is an assignment of
// a new value (a parameter is the caller's object, a loop variable an entry of
// another container, `grads = [p.grad for p in ...]` the model's gradients).
bool holds_own_value(const SemanticModel& model, std::string_view name, int region, int depth) {
  if (depth > 4) return false;
  BindingList bindings = model.bindings_of(name, region);
  if (bindings.empty()) return false;  // a global or builtin
  for (const Binding* b : bindings) {
    switch (b->kind) {
      case Binding::Kind::Assign:
        if (!node_is_null(b->value) && may_alias_state(model, b->value, depth)) return false;
        break;  // (a null value: an unpacking of a result, `loss, stats = ...`)
      case Binding::Kind::Augmented:
        break;
      default:
        return false;
    }
  }
  return true;
}

// True when what `arg` passes is, after the call, read only for logging or
// not at all: each name it holds (`loss`, the names of `[loss, acc]`, `x` of
// `x.detach()`, which shares its storage) holds a value of this function's
// own (holds_own_value) and is followed from the end of the statement making
// the call; a temporary (`x.mean()`, a literal) is read by nobody else. An
// attribute, a subscript, a comprehension or a listing of other objects'
// state (`model.parameters()`): not known (false).
bool argument_logged_only(const SemanticModel& model, TSNode arg, int region, std::uint32_t after, int depth = 0) {
  const Kinds& k = kinds();
  if (node_is_null(arg) || depth > 4) return false;
  TSSymbol s = node_symbol(arg);
  if (s == k.identifier)
    return holds_own_value(model, model.text(arg), region) &&
           model.value_use(model.text(arg), region, after).kind != ValueUse::Kind::Computation;
  if (s == k.list || s == k.tuple || s == k.parenthesized_expression) {
    for (TSNode e : children(arg))
      if (ts_node_is_named(e) && !argument_logged_only(model, e, region, after, depth + 1)) return false;
    return true;
  }
  if (s == k.call) {
    const CallSite* c = model.call_at(arg);
    if (c == nullptr) return false;
    if (c->method == "detach" && !node_is_null(c->receiver)) return argument_logged_only(model, c->receiver, region, after, depth + 1);
    return !may_alias_call(model, *c, 0);  // a new object only the callee sees
  }
  if (s == k.attribute || s == k.subscript) return false;
  return !may_alias_state(model, arg, 0);  // a literal, arithmetic: a temporary
}

// The end of the statement that holds `node`.
std::uint32_t statement_end(TSNode node) {
  const Kinds& k = kinds();
  for (TSNode p = node; !node_is_null(p); p = ts_node_parent(p)) {
    TSNode parent = ts_node_parent(p);
    if (node_is_null(parent) || node_symbol(parent) == k.block || node_symbol(parent) == k.module) return node_end_byte(p);
  }
  return node_end_byte(node);
}

}  // namespace

FileSummary summarize(const SemanticModel& model, const std::function<bool(std::string_view)>& project_call) {
  FileSummary s;
  s.cuda = model.uses_cuda();
  // what each top-level function calls as a model: `p(x)`, `p.forward(x)` (by function index)
  std::unordered_map<int, std::set<std::string, std::less<>>> called_as_model;
  for (const CallSite& c : model.calls()) {
    if (node_is_null(c.callee)) continue;
    int f = model.top_level_function_of(c.node);
    if (f < 0) continue;
    const Kinds& k = kinds();
    if (node_symbol(c.callee) == k.identifier) called_as_model[f].insert(std::string(model.text(c.callee)));
    else if (c.method == "forward" && !node_is_null(c.receiver) && node_symbol(c.receiver) == k.identifier)
      called_as_model[f].insert(std::string(model.text(c.receiver)));
  }
  // the top-level functions that select a GPU for the process (by function index)
  std::unordered_set<int> selects_device;
  for (const CallSite& c : model.calls()) {
    int f = model.top_level_function_of(c.node);
    if (f >= 0 && model.selects_process_gpu(c)) selects_device.insert(f);
  }
  for (std::size_t f = 0; f < model.functions().size(); ++f) {
    if (!model.is_top_level_function(static_cast<int>(f))) continue;
    FileSummary::Function fn{std::string(model.functions()[f].name), model.function_trains(static_cast<int>(f)), {}, {}, {}};
    fn.selects_device = selects_device.contains(static_cast<int>(f));
    auto called = called_as_model.find(static_cast<int>(f));
    for (const auto& [p, default_value] : model.parameters_of(static_cast<int>(f))) {
      fn.parameters.emplace_back(p);
      fn.host_default.push_back(ts_node_is_null(default_value) || model.certainly_host_value(default_value));
      // (bound once: the parameter itself, never rebound in the body)
      fn.forwarded.push_back(called != called_as_model.end() && called->second.contains(p) &&
                             model.bindings_of(p, model.functions()[f].region).size() == 1);
    }
    s.functions.push_back(std::move(fn));
  }
  // the top-level Dataset classes whose samples' cost is known: those with a
  // `__getitem__` (found from the functions, one pass)
  for (const FunctionInfo& f : model.functions()) {
    if (f.name != "__getitem__") continue;
    const Region& r = model.regions()[static_cast<std::size_t>(f.region)];
    if (r.parent <= 0) continue;
    const Region& c = model.regions()[static_cast<std::size_t>(r.parent)];
    if (c.kind != Region::Kind::Class || c.parent != 0) continue;
    // the class is what its name holds: not rebound at the top level (a
    // function or an assignment of the same name later replaces it)
    std::string_view class_name = model.text(field(c.node, kinds().f_name));
    if (model.bindings_of(class_name, 0).size() != 1) continue;
    SemanticModel::DatasetClassCost cost = model.dataset_class_cost(c.node);
    if (!cost.in_memory && ts_node_is_null(cost.work)) continue;
    FileSummary::Dataset d{std::string(class_name), cost.in_memory, {}, 0};
    if (!cost.in_memory) {
      const CallSite* w = model.call_at(cost.work);
      std::string_view callee = w != nullptr && !ts_node_is_null(w->callee) ? model.text(w->callee) : std::string_view("?");
      d.work = std::string(callee.substr(0, 40));
      d.line = model.source().lines().line_of(ts_node_start_byte(cost.work)) + 1;
    }
    s.datasets.push_back(std::move(d));
  }
  std::unordered_map<std::string_view, std::size_t> seen;
  std::vector<bool> shown_non_host;  // per entry of s.calls: its line's call passes a non-host value
  std::vector<std::set<std::string, std::less<>>> not_command_line;  // per entry: arguments some call fills otherwise
  const LineIndex& lines = model.source().lines();
  for (const CallSite& c : model.calls()) {
    if (c.canonical.empty()) continue;
    auto [it, fresh] = seen.emplace(c.canonical, s.calls.size());
    if (fresh) {
      s.calls.push_back({std::string(c.canonical), lines.line_of(ts_node_start_byte(c.node)) + 1, false, false});
      shown_non_host.push_back(false);
      not_command_line.emplace_back();
    }
    FileSummary::Call& call = s.calls[it->second];
    if (fresh) call.function = top_level_function_of(model, c.node);
    const bool step = model.runs_every_step(c.node, kAnyGuard);
    if (step) {
      // the line shown is the first call made every step, or the first of
      // them that passes something other than a host value when an earlier
      // one passed only host values (`log(1.0)` then `log(loss)`: the
      // callee's sync is the second call's)
      const bool first_step_call = !call.every_step;
      if (first_step_call) {
        call.line = lines.line_of(ts_node_start_byte(c.node)) + 1;
        call.function = top_level_function_of(model, c.node);
      }
      call.every_step = true;
      // what each call made every step passes: host values or maybe tensors
      if (model.has_unpacked_arguments(c)) call.unpacked = true;
      int position = 0;
      bool passes_non_host = false;
      for (const Argument& a : model.arguments(c)) {
        std::string key = a.kind == Argument::Kind::Keyword ? std::string(a.keyword) : "#" + std::to_string(position++);
        // a host value, or a parameter every caller elsewhere fills with one
        bool host = model.certainly_host_value(a.value) || model.from_host_parameter(a.value);
        passes_non_host = passes_non_host || !host;
        auto [at, fresh_key] = call.host_arguments.emplace(key, host);
        if (!fresh_key) at->second = at->second && host;
      }
      if (first_step_call) {
        shown_non_host[it->second] = passes_non_host;
      } else if (passes_non_host && !shown_non_host[it->second]) {
        call.line = lines.line_of(ts_node_start_byte(c.node)) + 1;
        call.function = top_level_function_of(model, c.node);
        shown_non_host[it->second] = true;
      }
    }
    if (!call.in_training_loop && model.in_training_loop(c.node)) call.in_training_loop = true;
    if (model.wraps_ddp()) {
      int position = 0;
      for (const Argument& a : model.arguments(c)) {
        if (a.kind == Argument::Kind::ListSplat || a.kind == Argument::Kind::DictionarySplat) break;
        std::string key = a.kind == Argument::Kind::Keyword ? std::string(a.keyword) : "#" + std::to_string(position++);
        if (!may_hold_ddp_model(model, a.value, c.region)) continue;
        if (call.ddp_arguments.empty()) call.ddp_line = lines.line_of(ts_node_start_byte(c.node)) + 1;
        call.ddp_arguments.insert(std::move(key));
      }
    }
    // the arguments where this call passes the file's parsed command line
    // (and those where it passes something else: every call must agree)
    if (project_call && !model.has_unpacked_arguments(c) && project_call(c.canonical)) {
      int position = 0;
      for (const Argument& a : model.arguments(c)) {
        std::string key = a.kind == Argument::Kind::Keyword ? std::string(a.keyword) : "#" + std::to_string(position++);
        (model.is_command_line(a.value) ? call.command_line_arguments : not_command_line[it->second]).insert(std::move(key));
      }
    }
    bool result_computation = false;
    if (project_call && (call.result_logged_only || (step && (call.step_result_logged_only || call.logged_step_line == 0))) &&
        project_call(c.canonical))
      result_computation = model.result_use(c.node).kind == ValueUse::Kind::Computation;
    if (step && call.logged_step_line == 0 && !result_computation && project_call && !model.has_unpacked_arguments(c) &&
        project_call(c.canonical)) {
      std::uint32_t after = statement_end(c.node);
      // `f(p.grad for p in params)`: the generator is the argument list
      TSNode generator = generator_argument(c);
      bool logged = node_is_null(generator) || !may_alias_state(model, generator, 0);
      for (const Argument& a : model.arguments(c))
        if (logged && !argument_logged_only(model, a.value, c.region, after)) logged = false;
      if (logged) {
        call.logged_step_line = lines.line_of(ts_node_start_byte(c.node)) + 1;
        call.logged_step_function = top_level_function_of(model, c.node);
      }
    }
    if (result_computation) {
      call.result_logged_only = false;
      if (step) call.step_result_logged_only = false;
    }
  }
  bool passes_command_line = false;
  for (std::size_t i = 0; i < s.calls.size(); ++i) {
    std::erase_if(s.calls[i].command_line_arguments,
                  [&](const std::string& key) { return not_command_line[i].contains(key); });
    passes_command_line = passes_command_line || !s.calls[i].command_line_arguments.empty();
  }
  if (passes_command_line) s.launched_options = model.launched_command_line();
  for (const auto& [local, target] : model.imports().entries()) s.imports.emplace_back(local, target);
  for (std::string_view module : model.star_imports()) s.imports.emplace_back("*", module);
  return s;
}

namespace {

// project_root() of a file in folder `own` (absolute, normal).
fs::path root_of_folder(const fs::path& own) {
  std::error_code ec;
  for (fs::path dir = own; !dir.empty(); dir = dir.parent_path()) {
    if (is_project_marker_folder(dir)) return dir;
    if (dir == dir.root_path() || dir.parent_path() == dir) break;
  }
  // no marker: the folder holding the file's top package (`util/misc.py` with
  // `util/__init__.py` is imported as `util.misc` from the folder above)
  fs::path dir = own;
  for (int level = 0; level < 64 && fs::exists(dir / "__init__.py", ec) && dir.has_parent_path() &&
                      dir.parent_path() != dir;
       ++level)
    dir = dir.parent_path();
  return dir;
}

// `path` relative to `base` (both absolute and normal), generic separators:
// a prefix cut when `base` is a folder above (the common case), else lexically_relative.
std::string relative_to(const fs::path& path, const fs::path& base) {
  const std::string& p = path.native();
  const std::string& b = base.native();
  if (p.size() > b.size() + 1 && p.compare(0, b.size(), b) == 0 && (p[b.size()] == '/' || b.ends_with('/')))
    return p.substr(b.ends_with('/') ? b.size() : b.size() + 1);
  return path.lexically_relative(base).generic_string();
}

}  // namespace

bool is_project_marker_folder(const fs::path& dir) {
  std::error_code ec;
  for (const char* marker : {"pyproject.toml", ".git"}) {
    if (fs::exists(dir / marker, ec)) return true;
  }
  // a `setup.py` inside a package (beside its `__init__.py`) is one of its
  // modules (`pkg/apps/setup.py` defining `setup_dist_env`), not a
  // distribution's build script
  if (fs::exists(dir / "__init__.py", ec)) return false;
  return fs::exists(dir / "setup.py", ec) || fs::exists(dir / "setup.cfg", ec);
}

fs::path project_root(const fs::path& file) {
  std::error_code ec;
  return root_of_folder(fs::absolute(file, ec).lexically_normal().parent_path());
}

namespace {

struct ModuleFile {
  fs::path path;          // absolute, normal
  std::string relative;   // relative to the root, generic separators
  std::string shown;      // in messages: relative to the working folder
  bool on_edge = false;
  std::size_t component = 0;  // files joined by import edges (either way) share one
  FileSummary summary;
  ProjectFacts facts;
  bool summarised = false;
  std::vector<std::size_t> imports;  // the project files its import lines name (the scan's edges)
};

class Solver {
 public:
  Solver(const fs::path& root, std::vector<ModuleFile>& files) : root_(root), files_(files) {
    for (std::size_t i = 0; i < files_.size(); ++i) {
      by_path_.emplace(files_[i].path.native(), i);
      if (files_[i].relative.starts_with("src/")) has_src_ = true;
    }
    // a `src/` layout: `src/` is not a package, its packages are installed
    // (`package_dir={"": "src"}`), so `import pkg` finds `src/pkg`
    if (by_path_.contains((root_ / "src" / "__init__.py").native())) has_src_ = false;
  }

  // The file of module `dotted` imported from file `from`, or -1. Absolute
  // names resolve from the importing file's folder first (the entry script's
  // folder is first on sys.path), then from the root; relative ones (`.m`,
  // `..m`) from the file's package.
  long module_file(std::size_t from, std::string_view dotted) const {
    std::size_t dots = 0;
    while (dots < dotted.size() && dotted[dots] == '.') ++dots;
    std::string_view rest = dotted.substr(dots);
    std::vector<fs::path> bases;
    fs::path dir = files_[from].path.parent_path();
    if (dots > 0) {
      for (std::size_t up = 1; up < dots && dir.has_parent_path() && dir != root_; ++up) dir = dir.parent_path();
      bases.push_back(dir);
    } else if (by_path_.contains((dir / "__init__.py").native())) {
      bases.push_back(root_);  // a module of a package: its folder is not on sys.path, the root is
    } else {
      bases.push_back(dir);  // a script: its folder comes first on sys.path
      if (dir != root_) bases.push_back(root_);
    }
    if (dots == 0 && has_src_) bases.push_back(root_ / "src");  // then the installed src/ layout
    for (const fs::path& base : bases) {
      fs::path p = base;
      if (!rest.empty())
        for (const std::string& part : split_dots(rest)) p /= part;
      // a regular package wins over a module of the same name, as in Python
      if (auto it = by_path_.find((p / "__init__.py").native()); it != by_path_.end())
        return static_cast<long>(it->second);
      if (!rest.empty()) {
        fs::path file = p;
        file += ".py";
        if (auto it = by_path_.find(file.native()); it != by_path_.end()) return static_cast<long>(it->second);
      }
    }
    return -1;
  }

  // The file and top-level function that `canonical` (a call's name in file
  // `from`) names: the longest module prefix that is a project file, then one
  // name defined there, or imported there and resolved again (a package's
  // `__init__.py` re-exporting `from .builder import build_model`).
  std::pair<long, std::string> function_of(std::size_t from, const std::string& canonical, int depth = 0) const {
    if (depth > 4) return {-1, {}};
    std::size_t last = canonical.rfind('.');
    if (last == std::string::npos || last == 0) return {-1, {}};
    std::string module = canonical.substr(0, last);
    std::string name = canonical.substr(last + 1);
    if (name.empty()) return {-1, {}};
    long file = module_file(from, module);
    if (file < 0) return {-1, {}};
    const ModuleFile& m = files_[static_cast<std::size_t>(file)];
    if (!m.summarised) return {-1, {}};
    for (const FileSummary::Function& f : m.summary.functions)
      if (f.name == name) return {file, name};
    for (const FileSummary::Dataset& d : m.summary.datasets)  // a Dataset class, called to make one
      if (d.name == name) return {file, name};
    for (const auto& [local, target] : m.summary.imports)
      if (local == name && target != canonical) return function_of(static_cast<std::size_t>(file), target, depth + 1);
    // `from .dist import *` in a package's `__init__.py`: the name may come from any of them
    for (const auto& [local, target] : m.summary.imports) {
      if (local != "*") continue;
      std::string through = target;
      if (through.empty() || through.back() != '.') through += '.';
      through += name;
      if (through == canonical) continue;
      auto found = function_of(static_cast<std::size_t>(file), through, depth + 1);
      if (found.first >= 0) return found;
    }
    return {-1, {}};
  }

  // The calls in other files that lead to `function` of `caller` (as the
  // caller's facts stand): how a step entry, else a loop entry, reaches it.
  static std::vector<CallLink> chain_to(const ModuleFile& caller, const std::string& function) {
    if (function.empty()) return {};
    const ProjectCaller* up = nullptr;
    if (auto it = caller.facts.step_entries.find(function); it != caller.facts.step_entries.end()) up = &it->second;
    else if (auto at = caller.facts.loop_entries.find(function); at != caller.facts.loop_entries.end()) up = &at->second;
    if (up == nullptr) return {};
    std::vector<CallLink> chain = up->before;
    chain.push_back(CallLink{up->path, up->line});
    // a chain that comes back to the caller's file starts after its last
    // visit there (an import cycle would otherwise grow it every round)
    auto last = std::find_if(chain.rbegin(), chain.rend(), [&](const CallLink& l) { return l.path == caller.shown; });
    chain.erase(chain.begin(), last.base());
    if (chain.size() > ProjectFacts::kMaxChain)
      chain.erase(chain.begin(), chain.end() - static_cast<long>(ProjectFacts::kMaxChain));
    return chain;
  }

  const FileSummary::Function* function(long file, const std::string& name) const {
    for (const FileSummary::Function& f : files_[static_cast<std::size_t>(file)].summary.functions)
      if (f.name == name) return &f;
    return nullptr;
  }

  // The facts each file on an edge takes from the summaries as they stand.
  // Only the files of `component` are read: an import edge joins files of
  // one component, so no other file calls into it or imports it (and the
  // files of components solved before keep no summary).
  std::vector<ProjectFacts> facts(std::size_t component) const {
    std::vector<ProjectFacts> out(files_.size());
    std::vector<std::set<std::string, std::less<>>> host_seen(files_.size());  // per callee: functions met
    std::vector<std::set<std::string, std::less<>>> command_line_seen(files_.size());  // the same, any caller
    // per callee: functions whose result uses come from per-step CUDA callers
    std::vector<std::map<std::string, bool, std::less<>>> step_uses(files_.size());
    for (std::size_t a = 0; a < files_.size(); ++a) {
      const ModuleFile& caller = files_[a];
      if (!caller.summarised || !caller.on_edge || caller.component != component) continue;
      for (const FileSummary::Call& call : caller.summary.calls) {
        auto [b, name] = function_of(a, call.canonical);
        if (b < 0 || static_cast<std::size_t>(b) == a) continue;
        for (const FileSummary::Dataset& d : files_[static_cast<std::size_t>(b)].summary.datasets)
          if (d.name == name)
            out[a].datasets.emplace(call.canonical,
                                    ProjectFacts::DatasetCost{d.in_memory, d.work,
                                                              d.in_memory ? std::string() : files_[static_cast<std::size_t>(b)].shown + ":" + std::to_string(d.line)});
        const FileSummary::Function* f = function(b, name);
        if (f == nullptr) continue;
        ProjectFacts& callee = out[static_cast<std::size_t>(b)];
        out[a].callees.emplace(call.canonical, f->trains);  // None too: a project function known to train nothing
        if (f->selects_device) out[a].device_selecting_calls.insert(call.canonical);
        for (std::size_t i = 0; i < f->parameters.size() && i < f->forwarded.size(); ++i) {
          if (!f->forwarded[i]) continue;
          auto& forwarded = out[a].forwarding_calls[call.canonical];
          forwarded.insert("#" + std::to_string(i));
          forwarded.insert(f->parameters[i]);
        }
        for (std::size_t i = 0; i < f->parameters.size(); ++i) {
          if (!call.ddp_arguments.contains("#" + std::to_string(i)) && !call.ddp_arguments.contains(f->parameters[i]))
            continue;
          auto [d, fresh_ddp] = callee.ddp_parameters.try_emplace(name);
          if (fresh_ddp) d->second.caller = ProjectCaller{caller.shown, call.ddp_line, {}};
          d->second.parameters.insert(f->parameters[i]);
        }
        // the parameters this call fills with its launched command line:
        // every call from another file must, with the values all agree on
        {
          auto [seen, first] = command_line_seen[static_cast<std::size_t>(b)].insert(name);
          (void)seen;
          auto& by_parameter = callee.command_line_parameters[name];
          for (std::size_t i = 0; i < f->parameters.size(); ++i) {
            const std::string& p = f->parameters[i];
            bool passed = call.command_line_arguments.contains("#" + std::to_string(i)) ||
                          call.command_line_arguments.contains(p);
            const ProjectFacts::OptionValues& values =
                passed ? caller.summary.launched_options : ProjectFacts::OptionValues{};
            if (first) {
              if (!values.empty()) by_parameter[p] = values;
              continue;
            }
            auto known = by_parameter.find(p);
            if (known == by_parameter.end()) continue;
            std::erase_if(known->second, [&](const auto& option) {
              auto other = values.find(option.first);
              return other == values.end() || other->second != option.second;
            });
            if (known->second.empty()) by_parameter.erase(known);
          }
          if (by_parameter.empty()) callee.command_line_parameters.erase(name);
        }
        // how callers use the result: any caller, CUDA or not (a result that
        // feeds a computation anywhere is not only for the logs)
        // what matters is the use at the calls that make the callee per step
        // (an evaluation script's use of the same helper does not make the
        // training loop's call needed): over those when there are any
        bool step_call = caller.summary.cuda && call.every_step;
        auto use = callee.result_uses.emplace(name, ProjectFacts::ResultUse{true, {caller.shown, call.line}}).first;
        bool& from_step = step_uses[static_cast<std::size_t>(b)][name];
        if (step_call && !from_step) {  // the first per-step caller: the others so far do not count
          from_step = true;
          use->second = ProjectFacts::ResultUse{call.step_result_logged_only, {caller.shown, call.line}};
        } else if (step_call || !from_step) {
          use->second.logging_only = use->second.logging_only &&
                                     (step_call ? call.step_result_logged_only : call.result_logged_only);
        }
        // a CUDA caller only: a helper that a CPU smoke test calls every step
        // and a CUDA script calls every 100 steps is not per step on the GPU
        if (!caller.summary.cuda) continue;
        // the callee runs on CUDA when the call runs in a training loop or the
        // callee trains (a model factory called once does not make its file's
        // own `__main__` smoke test a CUDA script)
        if (call.in_training_loop || call.every_step || f->trains != ProjectFacts::Trains::None) callee.cuda = true;
        ProjectCaller here{caller.shown, call.line, chain_to(caller, call.function)};
        if (call.every_step) {
          callee.step_entries.emplace(name, here);
          // the parameters this caller passes host values (or leaves to their defaults)
          std::set<std::string, std::less<>> host;
          if (!call.unpacked) {
            for (std::size_t i = 0; i < f->parameters.size(); ++i) {
              const std::string& p = f->parameters[i];
              auto by_position = call.host_arguments.find("#" + std::to_string(i));
              auto by_name = call.host_arguments.find(p);
              bool passed = by_position != call.host_arguments.end() || by_name != call.host_arguments.end();
              bool passed_tensor = (by_position != call.host_arguments.end() && !by_position->second) ||
                                   (by_name != call.host_arguments.end() && !by_name->second);
              if (!passed_tensor && (passed || f->host_default[i])) host.insert(p);
            }
          }
          // every per-step CUDA caller must agree: the intersection
          auto [at, first] = host_seen[static_cast<std::size_t>(b)].insert(name);
          auto& known = callee.host_parameters[name];
          if (first) known = std::move(host);
          else std::erase_if(known, [&](const std::string& p) { return !host.contains(p); });
          if (known.empty()) callee.host_parameters.erase(name);
          (void)at;
          if (call.logged_step_line != 0)
            callee.logged_calls.emplace(name, ProjectCaller{caller.shown, call.logged_step_line,
                                                            chain_to(caller, call.logged_step_function)});
        }
        if (call.in_training_loop) callee.loop_entries.emplace(name, std::move(here));
      }
    }
    return out;
  }

  // Who imports each file, and which of its names (ProjectFacts::imported*),
  // once the component's fixed point stands (no other fact depends on them):
  // from the importers' summaries, for every edge the scan found. An edge
  // that no import of the importer's summary explains (its summary is
  // missing, or the import names a parent package: `import pkg.sub.m` binds
  // `pkg`) takes the module whole.
  struct Imported {
    bool imported = false, whole = false;
    std::set<std::string, std::less<>> names;
  };
  void importers(std::size_t component, std::unordered_map<std::size_t, Imported>& out) const {
    std::vector<std::size_t> explained;
    for (std::size_t a = 0; a < files_.size(); ++a) {
      const ModuleFile& importer = files_[a];
      if (!importer.on_edge || importer.component != component) continue;
      if (!importer.summarised) {
        for (std::size_t b : importer.imports)
          if (b != a) out[b].imported = out[b].whole = true;
        continue;
      }
      // each import resolved once: the module itself, or a name of a module
      explained.clear();
      for (const auto& [local, target] : importer.summary.imports) {
        long whole = module_file(a, target);
        if (whole >= 0 && static_cast<std::size_t>(whole) != a) {
          out[static_cast<std::size_t>(whole)].whole = true;  // `import m`, `from pkg import m`, `from m import *`
          explained.push_back(static_cast<std::size_t>(whole));
          continue;
        }
        if (local == "*") continue;
        std::size_t last = target.rfind('.');
        if (last == std::string::npos || last + 1 >= target.size()) continue;
        long from = module_file(a, target.substr(0, last));
        if (from >= 0 && static_cast<std::size_t>(from) != a) {
          out[static_cast<std::size_t>(from)].names.insert(target.substr(last + 1));
          explained.push_back(static_cast<std::size_t>(from));
        }
      }
      for (std::size_t b : importer.imports) {
        if (b == a) continue;
        out[b].imported = true;
        if (std::find(explained.begin(), explained.end(), b) == explained.end()) out[b].whole = true;
      }
      // calls through a module (`m.f(...)`) and re-exports (`from pkg import f`
      // where pkg/__init__.py imports f from .builder): the file defining f
      for (const FileSummary::Call& call : importer.summary.calls) {
        auto [b, name] = function_of(a, call.canonical);
        if (b >= 0 && static_cast<std::size_t>(b) != a) out[static_cast<std::size_t>(b)].names.insert(name);
      }
      for (const auto& [local, target] : importer.summary.imports) {
        if (local == "*") continue;
        auto [b, name] = function_of(a, target);
        if (b >= 0 && static_cast<std::size_t>(b) != a) out[static_cast<std::size_t>(b)].names.insert(name);
      }
    }
  }

 private:
  fs::path root_;
  std::vector<ModuleFile>& files_;
  std::unordered_map<fs::path::string_type, std::size_t> by_path_;
  bool has_src_ = false;
};

// A summary as bytes for the cache, and back (std::nullopt: damaged).
std::string encode_summary(const FileSummary* s) {
  ByteWriter out;
  out.flag(s != nullptr);  // false: the file could not be read, decoded or parsed
  if (s == nullptr) return std::move(out.bytes());
  out.number(s->functions.size());
  for (const FileSummary::Function& f : s->functions) {
    out.text(f.name);
    out.number(static_cast<std::uint64_t>(f.trains));
    out.number(f.parameters.size());
    for (std::size_t i = 0; i < f.parameters.size(); ++i) {
      out.text(f.parameters[i]);
      out.flag(f.host_default[i]);
      out.flag(f.forwarded[i]);
    }
    out.flag(f.selects_device);
  }
  out.number(s->calls.size());
  for (const FileSummary::Call& c : s->calls) {
    out.text(c.canonical);
    out.number(c.line);
    out.flag(c.every_step);
    out.flag(c.in_training_loop);
    out.number(c.host_arguments.size());
    for (const auto& [k, v] : c.host_arguments) {
      out.text(k);
      out.flag(v);
    }
    out.flag(c.unpacked);
    out.flag(c.result_logged_only);
    out.flag(c.step_result_logged_only);
    out.number(c.ddp_arguments.size());
    for (const std::string& a : c.ddp_arguments) out.text(a);
    out.number(c.ddp_line);
    out.number(c.command_line_arguments.size());
    for (const std::string& a : c.command_line_arguments) out.text(a);
    out.number(c.logged_step_line);
    out.text(c.logged_step_function);
    out.text(c.function);
  }
  out.number(s->datasets.size());
  for (const FileSummary::Dataset& d : s->datasets) {
    out.text(d.name);
    out.flag(d.in_memory);
    out.text(d.work);
    out.number(d.line);
  }
  out.number(s->imports.size());
  for (const auto& [local, target] : s->imports) {
    out.text(local);
    out.text(target);
  }
  out.flag(s->cuda);
  out.number(s->launched_options.size());
  for (const auto& [dest, v] : s->launched_options) {
    out.text(dest);
    out.number(static_cast<std::uint64_t>(v));
  }
  return std::move(out.bytes());
}

// The summary in `bytes`: an empty optional when the entry says the file had none.
std::optional<std::optional<FileSummary>> decode_summary(std::string_view bytes) {
  ByteReader in(bytes);
  if (!in.flag()) {
    if (in.failed() || !in.at_end()) return std::nullopt;
    return std::optional<FileSummary>{};
  }
  FileSummary s;
  for (std::uint64_t n = in.count(3 * 8); n > 0 && !in.failed(); --n) {
    FileSummary::Function f;
    f.name = in.text();
    std::uint64_t trains = in.number();
    if (trains > 2) in.fail();
    f.trains = static_cast<ProjectFacts::Trains>(trains);
    for (std::uint64_t p = in.count(3 * 8); p > 0 && !in.failed(); --p) {
      f.parameters.push_back(in.text());
      f.host_default.push_back(in.flag());
      f.forwarded.push_back(in.flag());
    }
    f.selects_device = in.flag();
    s.functions.push_back(std::move(f));
  }
  for (std::uint64_t n = in.count(8 * 8); n > 0 && !in.failed(); --n) {
    FileSummary::Call c;
    c.canonical = in.text();
    std::uint64_t line = in.number();
    if (line > UINT32_MAX) in.fail();
    c.line = static_cast<std::uint32_t>(line);
    c.every_step = in.flag();
    c.in_training_loop = in.flag();
    for (std::uint64_t a = in.count(2 * 8); a > 0 && !in.failed(); --a) {
      std::string k = in.text();
      c.host_arguments.emplace(std::move(k), in.flag());
    }
    c.unpacked = in.flag();
    c.result_logged_only = in.flag();
    c.step_result_logged_only = in.flag();
    for (std::uint64_t a = in.count(8); a > 0 && !in.failed(); --a) c.ddp_arguments.insert(in.text());
    std::uint64_t ddp_line = in.number();
    if (ddp_line > UINT32_MAX) in.fail();
    c.ddp_line = static_cast<std::uint32_t>(ddp_line);
    for (std::uint64_t a = in.count(8); a > 0 && !in.failed(); --a) c.command_line_arguments.insert(in.text());
    std::uint64_t logged_line = in.number();
    if (logged_line > UINT32_MAX) in.fail();
    c.logged_step_line = static_cast<std::uint32_t>(logged_line);
    c.logged_step_function = in.text();
    c.function = in.text();
    s.calls.push_back(std::move(c));
  }
  for (std::uint64_t n = in.count(4 * 8); n > 0 && !in.failed(); --n) {
    FileSummary::Dataset d;
    d.name = in.text();
    d.in_memory = in.flag();
    d.work = in.text();
    std::uint64_t line = in.number();
    if (line > UINT32_MAX) in.fail();
    d.line = static_cast<std::uint32_t>(line);
    s.datasets.push_back(std::move(d));
  }
  for (std::uint64_t n = in.count(2 * 8); n > 0 && !in.failed(); --n) {
    std::string local = in.text();
    s.imports.emplace_back(std::move(local), in.text());
  }
  s.cuda = in.flag();
  for (std::uint64_t n = in.count(2 * 8); n > 0 && !in.failed(); --n) {
    std::string dest = in.text();
    s.launched_options.emplace(std::move(dest), static_cast<std::int64_t>(in.number()));
  }
  if (in.failed() || !in.at_end()) return std::nullopt;
  return std::optional<FileSummary>(std::move(s));
}

// Summarises `m` with the facts it has now, in `round` of the fixed point.
// `cache` (may be null) holds summaries in a slot per file and round, keyed
// by the file's bytes, the project's layout (which modules exist decides
// which calls' results are followed) and the facts.
// The bytes of `path`: the overlay's text when it has one, else the file's.
std::optional<std::string> read_module(const fs::path& path, const SourceOverlay& overlay) {
  if (overlay)
    if (auto text = overlay(path)) return text;
  std::string err;
  return read_file(path.string(), err);
}

void summarise(ModuleFile& m, const Solver& solver, std::size_t index, int round, const Cache* cache,
               const CacheKey& layout, const SourceOverlay& overlay) {
  m.summarised = false;
  auto bytes = read_module(m.path, overlay);
  if (!bytes) return;
  CacheKey key;
  std::string slot;
  if (cache != nullptr) {
    KeyHasher h;
    h.add("summary").add(m.relative).add(*bytes).add(layout.hex()).add(fingerprint(m.facts.empty() ? nullptr : &m.facts));
    key = h.finish();
    slot = "summary:" + m.path.string() + "#" + std::to_string(round);
    if (auto entry = cache->get(slot, key)) {
      if (auto decoded = decode_summary(*entry)) {
        if (*decoded) {
          m.summary = std::move(**decoded);
          m.summarised = true;
        }
        return;
      }
    }
  }
  auto store = [&](const FileSummary* s) {
    if (cache != nullptr) cache->put(slot, key, encode_summary(s));
  };
  SourceFile source(m.relative, std::move(*bytes));
  if (source.check_decodable() != DecodeError::None) return store(nullptr);
  ParseArenaScope arena;
  SyntaxTree tree = parse_python(source);
  if (!tree) return store(nullptr);
  SemanticModel model(source, tree, m.facts.empty() ? nullptr : &m.facts);
  m.summary = summarize(model, [&](std::string_view canonical) {
    std::size_t last = canonical.rfind('.');
    return last != std::string_view::npos && last > 0 && solver.module_file(index, canonical.substr(0, last)) >= 0;
  });
  m.summarised = true;
  store(&m.summary);
}

}  // namespace

struct Project::State {
  std::vector<ModuleFile> files;
  std::unique_ptr<Solver> solver;
  std::unordered_map<fs::path::string_type, std::size_t> index;  // absolute path -> file
  std::vector<std::uint8_t> solved;                             // per component
  std::shared_ptr<const Cache> cache;                           // summaries, when the run keeps a cache
  CacheKey layout;                                              // the files found, in order
  SourceOverlay overlay;                                        // unsaved buffers, read instead of the files
  std::vector<fs::path> launch_scripts;                         // shell and SLURM scripts under the root
};

Project::Project(fs::path root, std::shared_ptr<const Cache> cache, SourceOverlay overlay)
    : root_(std::move(root)), state_(std::make_unique<State>()) {
  state_->cache = std::move(cache);
  state_->overlay = std::move(overlay);
  std::vector<ModuleFile>& files = state_->files;
  // the root's Python files, leaving out the default folders, nested projects
  // and what git ignores (a data folder of a million files is not walked)
  // (not when the root itself is ignored: a project kept in an ignored folder,
  // such as a benchmark corpus, is linted on purpose)
  GitIgnore gitignore;
  const bool use_gitignore = !gitignore.ignored(root_, true);
  ExcludeFn excluded = [&](const fs::path& path, bool is_dir) {
    if (!is_dir)
      return use_gitignore && gitignore.ignored(fs::absolute(path).lexically_normal(), false);  // (launch scripts too)
    std::string name = path.filename().string();
    if (std::find(kDefaultExclude.begin(), kDefaultExclude.end(), name) != kDefaultExclude.end()) return true;
    if (!name.empty() && name[0] == '.') return true;
    std::error_code ec;
    fs::path absolute = fs::absolute(path, ec).lexically_normal();
    if (absolute == root_) return false;
    return is_project_marker_folder(absolute) || (use_gitignore && gitignore.ignored(absolute, true));
  };
  std::error_code cwd_ec;
  fs::path cwd = fs::current_path(cwd_ec);
  PathWalk walk({root_.string()}, excluded);
  // the paths first: a project too large to index is given up before any
  // file's record is made
  std::vector<std::string> found;
  while (auto entry = walk.next()) {
    if (!entry->error.empty()) continue;
    std::string_view name = entry->path;
    if (!name.ends_with(".py")) {  // a launch script (the walk finds *.py and those only)
      if (state_->launch_scripts.size() < kMaxLaunchScripts) state_->launch_scripts.push_back(entry->path);
      continue;
    }
    if (name.ends_with("/.py")) continue;
    if (found.size() >= kMaxFiles) {
      file_count_ = 0;
      return;  // too large to index: no facts
    }
    found.push_back(std::move(entry->path));
  }
  files.reserve(found.size());
  for (std::string& p : found) {
    ModuleFile m;
    m.path = std::move(p);  // under the root, which is absolute and normal: so is the path
    m.relative = relative_to(m.path, root_);
    // shown in messages as a path from the working folder, like the findings' own paths
    std::string from_cwd = cwd.empty() ? std::string() : relative_to(m.path, cwd);
    m.shown = from_cwd.empty() ? m.path.generic_string() : from_cwd;
    files.push_back(std::move(m));
  }
  file_count_ = files.size();
  KeyHasher layout;
  for (const ModuleFile& m : files) layout.add(m.relative);
  state_->layout = layout.finish();
  state_->solver = std::make_unique<Solver>(root_, files);
  // edges: a file that imports another file of the project, and that file;
  // components of the undirected graph (union-find), each solved on first use
  std::vector<std::size_t> parent(files.size());
  for (std::size_t i = 0; i < parent.size(); ++i) parent[i] = i;
  auto find = [&](std::size_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  for (std::size_t i = 0; i < files.size(); ++i) {
    auto bytes = read_module(files[i].path, state_->overlay);
    if (!bytes) continue;
    // a module imported by a computed name (`importlib.import_module(name)`,
    // `__import__(name)`) may be any file: who imports what is then not known
    if (!dynamic_imports_ && computed_import(*bytes)) dynamic_imports_ = true;
    for (const std::string& module : imported_modules(*bytes)) {
      long target = state_->solver->module_file(i, module);
      if (target < 0 || static_cast<std::size_t>(target) == i) continue;
      files[i].imports.push_back(static_cast<std::size_t>(target));
      files[i].on_edge = true;
      files[static_cast<std::size_t>(target)].on_edge = true;
      parent[find(i)] = find(static_cast<std::size_t>(target));
    }
  }
  for (std::size_t i = 0; i < files.size(); ++i) {
    files[i].component = find(i);
    state_->index.emplace(files[i].path.native(), i);
  }
  state_->solved.assign(files.size(), 0);
}

Project::~Project() = default;

const Cache* Project::cache() const { return state_->cache.get(); }

// Summarises the files of one component and solves their facts.
void Project::solve(std::size_t component) const {
  std::vector<ModuleFile>& files = state_->files;
  std::vector<std::size_t> changed;
  for (std::size_t i = 0; i < files.size(); ++i)
    if (files[i].on_edge && files[i].component == component) changed.push_back(i);
  summarised_ += changed.size();
  // the launches that start each file, before its summary: its command
  // line's values as launched are part of what it passes its callees
  if (!launches_read_) read_launches();
  auto launched = [&](std::size_t i, ProjectFacts& f) {
    auto at = launches_of_.find(files[i].path.native());
    if (at != launches_of_.end()) f.launched_by = at->second;
  };
  for (std::size_t i : changed) launched(i, files[i].facts);
  int rounds = 0;
  for (; rounds < kMaxRounds && !changed.empty(); ++rounds) {
    for (std::size_t i : changed)
      summarise(files[i], *state_->solver, i, rounds, state_->cache.get(), state_->layout, state_->overlay);
    std::vector<ProjectFacts> next = state_->solver->facts(component);
    changed.clear();
    for (std::size_t i = 0; i < files.size(); ++i) {
      if (!files[i].on_edge || files[i].component != component) continue;
      launched(i, next[i]);
      if (next[i] == files[i].facts) continue;
      files[i].facts = std::move(next[i]);
      changed.push_back(i);
    }
  }
  rounds_ = std::max(rounds_, rounds);
  {
    std::unordered_map<std::size_t, Solver::Imported> imports;
    state_->solver->importers(component, imports);
    for (auto& [i, imported] : imports) {
      if (files[i].component != component) continue;  // (an edge joins one component's files)
      files[i].facts.imported = imported.imported || imported.whole || !imported.names.empty();
      files[i].facts.imported_whole = imported.whole;
      files[i].facts.imported_names = std::move(imported.names);
    }
  }
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (files[i].component != component) continue;
    if (files[i].summarised) summary_bytes_ += encode_summary(&files[i].summary).size();
    files[i].summary = FileSummary{};  // only the facts are kept
    files[i].facts.indexed = !dynamic_imports_;
    if (!files[i].facts.empty()) facts_.emplace(files[i].path.native(), std::move(files[i].facts));
  }
}

const ProjectFacts* Project::facts_for(const fs::path& file) const {
  std::lock_guard lock(mutex_);
  auto at = state_->index.find(file.native());
  if (at == state_->index.end()) return nullptr;
  const ModuleFile& m = state_->files[at->second];
  if (m.on_edge && !state_->solved[m.component]) {
    solve(m.component);
    state_->solved[m.component] = 1;
  }
  if (!launches_read_) read_launches();
  const bool package_module = state_->index.contains((file.parent_path() / "__init__.py").native());
  if (auto launches = launches_of_.find(file.native()); launches != launches_of_.end()) {
    ProjectFacts& f = facts_[file.native()];  // (solved above: later solves are of other components)
    if (f.launched_by.empty()) f.launched_by = launches->second;
    f.indexed = !dynamic_imports_;
    f.package_module = package_module;
    return &f;
  }
  // a file of the index with no facts: nothing imports it (known unless
  // modules are imported by computed names)
  static const ProjectFacts kIndexedAlone[2] = {[] {
                                                  ProjectFacts f;
                                                  f.indexed = true;
                                                  return f;
                                                }(),
                                                [] {
                                                  ProjectFacts f;
                                                  f.indexed = true;
                                                  f.package_module = true;
                                                  return f;
                                                }()};
  auto it = m.on_edge ? facts_.find(file.native()) : facts_.end();
  if (it != facts_.end()) {
    it->second.package_module = package_module;
    return &it->second;
  }
  return dynamic_imports_ ? nullptr : &kIndexedAlone[package_module ? 1 : 0];
}

std::optional<fs::path> Project::resolve_script(const fs::path& launch_script, std::string_view written) const {
  if (!written.ends_with(".py")) return std::nullopt;
  std::error_code ec;
  auto inside = [&](const fs::path& p) {
    auto [r, rest] = std::mismatch(root_.begin(), root_.end(), p.begin(), p.end());
    return r == root_.end();
  };
  if (fs::path(written).is_absolute()) {
    fs::path candidate = fs::path(written).lexically_normal();
    if (inside(candidate) && fs::is_regular_file(candidate, ec)) return candidate;
    return std::nullopt;
  }
  // the launch script's folder, then each folder above it up to the project
  // root, nearest first: `exps/finetune.sh` that runs `main_finetune.py` is
  // started from the folder above (`bash exps/finetune.sh`), a script of the
  // root's `scripts/` from the root
  for (fs::path base = launch_script.parent_path().lexically_normal(); inside(base); base = base.parent_path()) {
    fs::path candidate = (base / written).lexically_normal();
    if (inside(candidate) && fs::is_regular_file(candidate, ec)) return candidate;
    if (base == root_ || !base.has_relative_path() || base.parent_path() == base) break;
  }
  return std::nullopt;
}

void Project::read_launches() const {
  launches_read_ = true;
  for (const fs::path& script : state_->launch_scripts) {
    std::optional<std::string> bytes = read_module(script, state_->overlay);
    if (!bytes) continue;
    SourceFile source(script.string(), std::move(*bytes));
    if (source.check_decodable() != DecodeError::None || language_of(source.path(), source.text()) != Language::Shell)
      continue;
    SyntaxTree tree = parse_shell(source);
    LaunchModel model(source, tree);
    std::string relative = script.lexically_relative(root_).generic_string();
    // a launch is added for the file it starts; past the cap, the last one
    // says that more are not read
    auto add = [&](const fs::path& file, LaunchOfScript entry) {
      std::vector<LaunchOfScript>& of = launches_of_[file.native()];
      if (of.size() >= ProjectFacts::kMaxLaunchesOf) {
        of.back().unread = true;
        return;
      }
      of.push_back(std::move(entry));
    };
    // words naming a file of the project where no launch is read: a launch may hide there
    for (const ShellWord& w : model.unread_scripts())
      if (std::optional<fs::path> found = resolve_script(script, *w.value)) {
        LaunchOfScript entry;
        entry.path = relative;
        entry.line = source.lines().position(w.start).row;
        entry.unread = true;
        add(*found, std::move(entry));
      }
    for (const Launch& l : model.launches()) {
      if (!l.script || !l.script->value || l.module) continue;
      std::optional<fs::path> found = resolve_script(script, *l.script->value);
      if (!found) continue;
      LaunchOfScript entry;
      entry.path = relative;
      entry.line = source.lines().position(l.start).row;
      entry.passes_local_rank = l.launcher == Launcher::TorchDistributedLaunch && l.option("use-env") == nullptr;
      entry.torchrun = l.launcher == Launcher::Torchrun || l.launcher == Launcher::TorchDistributedRun;
      entry.processes_per_node = model.processes_per_node(l).value_or(0);
      entry.world_size = model.world_size(l).value_or(0);
      for (const LaunchOption& o : l.script_options)
        entry.arguments.push_back({o.written, o.value ? o.value->value : std::nullopt, o.value.has_value()});
      entry.arguments_opaque = l.opaque_script_options;
      entry.positional_arguments = l.positional_script_arguments;
      add(*found, std::move(entry));
    }
  }
}

namespace {
// The facts of one Python script that launch rules ask about (LaunchedScript).
// `local_module`: whether an import's first name is a module of the project
// (a file or package beside the script or at the root).
LaunchedScript describe_launched(const SemanticModel& model,
                                 const std::function<bool(std::string_view)>& local_module) {
  LaunchedScript out;
  out.distributed = model.is_distributed();
  auto unguarded = [&](TSNode node) {
    for (int r = model.region_of(node); r >= 0; r = model.regions()[static_cast<std::size_t>(r)].parent)
      if (model.regions()[static_cast<std::size_t>(r)].kind == Region::Kind::Branch) return false;
    return true;
  };
  out.spawns = model.starts_processes();
  for (const CallSite& c : model.calls()) {
    std::string_view n = c.canonical;
    if ((n == "torch.distributed.init_process_group" || n == "torch.nn.parallel.DistributedDataParallel") &&
        unguarded(c.node))
      out.ddp_always = true;
  }
  if (model.reads_env_var("LOCAL_RANK") || model.mentions_in_code("dict(os.environ)")) out.reads_local_rank_env = true;
  // a helper of the project may read it (DeiT's and MAE's `init_distributed_mode(args)`
  // in utils.py): unknown here, so taken as read
  for (const auto& [local, target] : model.imports().entries()) {
    std::string_view top = target.substr(0, target.find('.'));
    if (target.starts_with(".") || local_module(top)) out.reads_local_rank_env = true;
  }
  std::vector<std::string_view> dests = model.argparse_destinations();
  out.reads_local_rank_argument = std::find(dests.begin(), dests.end(), "local_rank") != dests.end() &&
                                  model.mentions_in_code(".local_rank");
  return out;
}
}  // namespace

const ProjectFacts* Project::launch_facts_for(const fs::path& file, std::string_view text) const {
  std::lock_guard lock(mutex_);
  auto known = launch_facts_.find(file.native());
  if (known != launch_facts_.end() && known->second.first == text) return known->second.second.get();
  SourceFile source(file.string(), std::string(text));
  if (source.check_decodable() != DecodeError::None) return nullptr;
  SyntaxTree tree = parse_shell(source);
  LaunchModel model(source, tree);
  auto facts = std::make_unique<ProjectFacts>();
  for (const Launch& l : model.launches()) {
    if (!l.script || !l.script->value || l.module) continue;
    const std::string& written = *l.script->value;
    if (!written.ends_with(".py") || facts->launched_script(written) != nullptr) continue;
    std::optional<fs::path> found = resolve_script(file, written);
    if (!found) {
      if (file_count_ > 0) facts->missing_scripts.insert(written);  // (an index was made: the project is known)
      continue;
    }
    auto cached = launched_.find(found->native());
    if (cached == launched_.end()) {
      std::optional<LaunchedScript> described;
      if (std::optional<std::string> bytes = read_module(*found, state_->overlay)) {
        SourceFile py(found->string(), std::move(*bytes));
        if (py.check_decodable() == DecodeError::None) {
          SyntaxTree py_tree = parse_python(py);
          if (py_tree) {
            SemanticModel py_model(py, py_tree, nullptr);
            fs::path script_dir = found->parent_path();
            described = describe_launched(py_model, [&](std::string_view top) {
              if (top.empty()) return false;
              std::error_code e;
              for (const fs::path& base : {script_dir, root_})
                if (fs::exists(base / (std::string(top) + ".py"), e) || fs::is_directory(base / std::string(top), e))
                  return true;
              return false;
            });
          }
        }
      }
      cached = launched_.emplace(found->native(), std::move(described)).first;
    }
    if (!cached->second) continue;
    LaunchedScript entry = *cached->second;
    entry.written = written;
    entry.path = found->lexically_relative(root_).generic_string();
    facts->launched.push_back(std::move(entry));
  }
  if (facts->launched.empty() && facts->missing_scripts.empty()) facts.reset();
  auto& slot = launch_facts_[file.native()];
  slot.first = std::string(text);
  slot.second = std::move(facts);
  return slot.second.get();
}

std::shared_ptr<const Project> ProjectSet::project_of(const fs::path& file) {
  std::error_code ec;
  fs::path folder = (file.is_absolute() ? file : fs::absolute(file, ec)).parent_path();
  std::shared_ptr<Slot> slot;
  {
    std::lock_guard lock(mutex_);
    // a folder's files share a root: looked up once per folder
    auto known = roots_.find(folder.native());
    if (known == roots_.end()) {
      if (roots_.size() >= kKnownFolders) roots_.clear();
      known = roots_.emplace(folder.native(), root_of_folder(folder.lexically_normal())).first;
    }
    const fs::path& root = known->second;
    slot = entries_.get(root.native(), [&] {
      auto made = std::make_shared<Slot>();
      made->root = root;
      return made;
    });
  }
  std::call_once(slot->once, [&] {
    slot->project =
        std::make_shared<const Project>(slot->root, caches_ ? caches_->cache_for(slot->root) : nullptr, overlay_);
  });
  return slot->project;
}

fs::path absolute_normal(const fs::path& path) {
  const std::string& p = path.native();
  // already absolute and normal: no `//`, no `.` or `..` component, no trailing `/`
  bool normal = !p.empty() && p[0] == '/' && (p.size() == 1 || p.back() != '/');
  for (std::size_t i = 0; normal && i < p.size(); ++i) {
    if (p[i] != '/') continue;
    std::size_t next = p.find('/', i + 1);
    std::string_view part = std::string_view(p).substr(i + 1, (next == std::string::npos ? p.size() : next) - i - 1);
    if (i + 1 < p.size() && (part.empty() || part == "." || part == "..")) normal = false;
  }
  if (normal) return path;
  std::error_code ec;
  return fs::absolute(path, ec).lexically_normal();
}

}  // namespace ddplint
