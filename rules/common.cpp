#include "rules/common.hpp"
#include "linter/node_access.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <limits>
#include <unordered_set>

namespace ddplint::rules {

bool is_collective(std::string_view canonical) {
  constexpr std::string_view prefix = "torch.distributed.";
  if (canonical.substr(0, prefix.size()) != prefix) return false;
  std::string_view name = canonical.substr(prefix.size());
  static constexpr std::array<std::string_view, 20> names = {
      "all_reduce", "all_gather", "broadcast", "reduce", "gather", "scatter", "barrier",
      "all_gather_object", "broadcast_object_list", "gather_object", "scatter_object_list",
      "all_gather_into_tensor", "reduce_scatter_tensor", "reduce_scatter", "all_to_all",
      "all_to_all_single", "all_reduce_coalesced", "all_gather_coalesced", "monitored_barrier",
      "_all_gather_base"};
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool in_autograd_function_backward(const SemanticModel& model, TSNode node) {
  const Kinds& k = kinds();
  for (int r = model.region_of(node); r > 0; r = model.regions()[r].parent) {
    const Region& region = model.regions()[r];
    if (region.kind != Region::Kind::Function) continue;
    if (region.function < 0 || model.functions()[region.function].name != "backward") return false;
    int parent = region.parent;
    if (parent <= 0 || model.regions()[parent].kind != Region::Kind::Class) return false;
    TSNode bases = field(model.regions()[parent].node, k.f_superclasses);
    if (node_is_null(bases)) return false;
    for (TSNode base : children(bases))
      if (ts_node_is_named(base) && model.canonical_name(base) == "torch.autograd.Function") return true;
    return false;
  }
  return false;
}

bool mentions_gradient(const SemanticModel& model, TSNode expr) {
  const Kinds& k = kinds();
  std::vector<std::pair<TSNode, int>> stack{{expr, 0}};
  std::unordered_set<std::uint64_t> seen;  // byte ranges of nodes already searched
  std::size_t budget = 4096;               // nodes looked at, whatever the shape of the bindings
  while (!stack.empty() && budget > 0) {
    auto [node, depth] = stack.back();
    stack.pop_back();
    if (node_is_null(node) || depth > 8) continue;
    std::uint64_t key = ((static_cast<std::uint64_t>(node_start_byte(node)) << 32) | node_end_byte(node)) * 31 +
                        node_symbol(node);
    if (!seen.insert(key).second) continue;  // reached again through another binding
    --budget;
    TSSymbol s = node_symbol(node);
    if (s == k.attribute && model.text(field(node, k.f_attribute)) == "grad") return true;
    if (s == k.identifier) {
      std::string name = lowercase(model.text(node));
      auto ends = [&](std::string_view suf) {
        return name.size() >= suf.size() && name.compare(name.size() - suf.size(), suf.size(), suf) == 0;
      };
      bool grad_name = name == "grad" || name == "grads" || name == "gradient" || name == "gradients" ||
                       ends("_grad") || ends("_grads") || ends("_gradients");
      if (grad_name && name.find("norm") == std::string::npos) return true;
      TSNode v = model.single_assignment(node);
      if (!node_is_null(v)) stack.emplace_back(v, depth + 1);
      continue;
    }
    for (TSNode c : children(node)) stack.emplace_back(c, depth + 1);
  }
  return false;
}

std::pair<std::uint32_t, std::uint32_t> first_line_range(const SemanticModel& model, TSNode node) {
  std::uint32_t start = node_start_byte(node);
  std::uint32_t end = node_end_byte(node);
  const LineIndex& lines = model.source().lines();
  std::uint32_t line_end = lines.line_end(lines.line_of(start));
  return {start, std::max(start, std::min(end, line_end))};
}

TSNode argument_node(const SemanticModel& model, const CallSite& call, TSNode value) {
  // from the call's recorded arguments: ts_node_parent walks down from the
  // root, past every earlier statement (quadratic over a file of many calls)
  for (const Argument& a : model.arguments(call))
    if (node_eq(a.value, value)) return a.node;
  return value;
}

namespace {
// The loader a loop's iterable walks is a torch DataLoader: `loader` (or
// `enumerate(loader)`, `tqdm(loader)`) where `loader = DataLoader(...)` is its
// only assignment or `loader: DataLoader` its parameter's annotation, or a
// `DataLoader(...)` call itself.
bool torch_data_loader(const SemanticModel& model, TSNode iterable) {
  TSNode loader = model.iterated_container(iterable);
  if (node_is_null(loader)) return false;
  TSNode value = node_symbol(loader) == kinds().call ? loader : model.single_assignment(loader);
  if (!node_is_null(value) && node_symbol(value) == kinds().call) {
    const CallSite* c = model.call_at(value);
    return c != nullptr && c->canonical == kDataLoader;
  }
  if (node_symbol(loader) != kinds().identifier) return false;
  auto bindings = model.bindings_of(model.text(loader), model.region_of(loader));
  if (bindings.size() != 1 || bindings[0]->kind != Binding::Kind::Parameter) return false;
  TSNode parameter = ts_node_parent(bindings[0]->target);
  if (node_is_null(parameter) || node_symbol(parameter) != kinds().typed_parameter) return false;
  TSNode type = ts_node_child_by_field_name(parameter, "type", 4);
  if (node_is_null(type) || ts_node_named_child_count(type) != 1) return false;
  return model.canonical_name(ts_node_named_child(type, 0)) == kDataLoader;
}

// `name` at `use` still holds what a loop over a torch DataLoader bound it to
// (`for x, y in loader:` ... `(y > 0).sum()` before `y = y.to(device)`): a
// batch the DataLoader's workers and collate built on the host. No other
// binding of the name in the function comes between the loop's header and
// `use`. (A dataset that returns CUDA tensors would break this; such a
// loader cannot use worker processes and is rare: a missed finding, not a
// false one.)
bool loader_batch_on_host(const SemanticModel& model, TSNode use) {
  auto bindings = model.bindings_of(model.text(use), model.region_of(use));
  for (TSNode n = ts_node_parent(use); !node_is_null(n); n = ts_node_parent(n)) {
    TSSymbol s = node_symbol(n);
    if (s == kinds().function_definition || s == kinds().class_definition) return false;
    if (s != kinds().for_statement) continue;
    TSNode left = field(n, kinds().f_left);
    bool bound_here = false;  // the model's loop-target binding of the name, in this loop's header
    for (const Binding* b : bindings)
      bound_here = bound_here || (b->kind == Binding::Kind::LoopTarget && node_start_byte(b->target) >= node_start_byte(left) &&
                                  node_end_byte(b->target) <= node_end_byte(left));
    if (!bound_here) continue;
    for (const Binding* b : bindings) {
      std::uint32_t at = node_start_byte(b->target);
      if (at >= node_end_byte(left) && at < node_start_byte(use)) return false;  // rebound on the way
    }
    return torch_data_loader(model, field(n, kinds().f_right));
  }
  return false;
}

bool host_tensor_rec(const SemanticModel& model, TSNode expr, int depth) {
  if (node_is_null(expr) || depth > 16) return false;
  const Kinds& k = kinds();
  TSSymbol s = node_symbol(expr);
  if (s == k.identifier) {
    if (loader_batch_on_host(model, expr)) return true;
    return host_tensor_rec(model, model.single_assignment(expr), depth + 1);
  }
  if (s == k.parenthesized_expression) return host_tensor_rec(model, ts_node_named_child(expr, 0), depth + 1);
  if (s == k.subscript) return host_tensor_rec(model, field(expr, k.f_value), depth + 1);  // `batch["label"]`, `y[:, 0]`
  if (s == k.comparison_operator || s == k.binary_operator) {
    // `y > 0`, `a + b`: on the host when every operand is a host tensor or a number
    bool tensor = false;
    for (TSNode c : children(expr)) {
      if (!ts_node_is_named(c)) continue;
      TSSymbol cs = node_symbol(c);
      if (cs == k.integer || cs == k.float_) continue;
      if (!host_tensor_rec(model, c, depth + 1)) return false;
      tensor = true;
    }
    return tensor;
  }
  if (s != k.call) return false;
  const CallSite* call = model.call_at(expr);
  if (call == nullptr) return false;
  static const std::string_view factories[] = {
      "torch.tensor", "torch.as_tensor", "torch.from_numpy", "torch.zeros", "torch.ones",  "torch.empty",
      "torch.full",   "torch.arange",    "torch.linspace",   "torch.rand",  "torch.randn", "torch.randint",
      "torch.randperm"};
  for (std::string_view f : factories) {
    if (call->canonical != f) continue;
    return node_is_null(model.argument(*call, "device")) && !model.has_unpacked_arguments(*call);
  }
  if (node_is_null(call->receiver) || !call->canonical.empty()) return false;
  // a method that may move the tensor or whose result is not known to stay on the host
  static const std::string_view keeps_device[] = {"mean", "sum", "max", "min", "float", "double", "long", "int",
                                                  "abs", "std", "var", "norm", "argmax", "argmin", "clone",
                                                  "detach", "squeeze", "flatten", "prod"};
  for (std::string_view m : keeps_device)
    if (call->method == m) return host_tensor_rec(model, call->receiver, depth + 1);
  return false;
}
}  // namespace

bool host_tensor(const SemanticModel& model, TSNode expr) { return host_tensor_rec(model, expr, 0); }

bool spells_out_nccl(const SemanticModel& model) { return model.mentions_in_code("NCCL"); }

std::optional<Edit> append_argument(const SemanticModel& model, const CallSite& call, std::string_view text,
                                    std::uint32_t line_length) {
  const Kinds& k = kinds();
  TSNode args = field(call.node, k.f_arguments);
  if (node_is_null(args) || node_symbol(args) != k.argument_list) return std::nullopt;
  std::span<const Argument> given = model.arguments(call);
  TSNode last = given.empty() ? TSNode{} : given.back().node;
  std::string add(text);
  if (node_is_null(last)) {
    // `f()`: right after the opening parenthesis
    std::uint32_t at = node_start_byte(args) + 1;
    if (model.source().text().substr(node_start_byte(args), 1) != "(") return std::nullopt;
    return Edit{at, at, add};
  }
  std::uint32_t at = node_end_byte(last);
  Edit simple{at, at, ", " + add};
  if (line_length == 0) return simple;
  // the line would be too long: one argument a line
  std::string_view source = model.source().text();
  const LineIndex& lines = model.source().lines();
  std::uint32_t open = node_start_byte(args), close = node_end_byte(args);
  std::uint32_t line = lines.line_of(open);
  if (lines.line_of(close > open ? close - 1 : open) != line) {
    // already one argument a line with a trailing comma: the new one on a line of its own
    std::uint32_t comma = at;
    while (comma < close && (source[comma] == ' ' || source[comma] == '\t')) ++comma;
    std::uint32_t after = comma + 1;
    while (after < close && (source[after] == ' ' || source[after] == '\t')) ++after;
    if (comma < close && source[comma] == ',' && after < close && (source[after] == '\n' || source[after] == '\r')) {
      std::uint32_t last_line = lines.line_of(node_start_byte(last));
      std::string_view last_text =
          source.substr(lines.line_start(last_line), lines.line_end(last_line) - lines.line_start(last_line));
      std::string indent(last_text.substr(0, last_text.find_first_not_of(" \t")));
      return Edit{comma + 1, comma + 1, std::string(source[after] == '\r' ? "\r\n" : "\n") + indent + add + ","};
    }
    return simple;
  }
  std::string_view text_of_line = source.substr(lines.line_start(line), lines.line_end(line) - lines.line_start(line));
  std::size_t width = simple.replacement.size();
  for (unsigned char c : text_of_line) width += (c & 0xC0) == 0x80 ? 0 : 1;
  if (width <= line_length) return simple;
  std::string indent(text_of_line.substr(0, text_of_line.find_first_not_of(" \t")));
  std::uint32_t end_of_line = lines.line_end(line);
  const std::string nl = end_of_line < source.size() && source[end_of_line] == '\r' ? "\r\n" : "\n";  // the file's own
  std::string wrapped = "(" + nl;
  for (TSNode a : children(args)) {
    TSSymbol s = node_symbol(a);
    if (s == kinds().comment) return simple;
    if (!ts_node_is_named(a)) continue;  // `(`, `,`, `)`
    wrapped += indent + "    " + std::string(model.text(a)) + "," + nl;
  }
  wrapped += indent + "    " + add + "," + nl + indent + ")";
  return Edit{open, close, wrapped};
}

std::optional<Edit> remove_argument(const SemanticModel& model, const CallSite& call, TSNode arg) {
  const Kinds& k = kinds();
  TSNode args = field(call.node, k.f_arguments);
  if (node_is_null(args) || node_symbol(args) != k.argument_list) return std::nullopt;
  std::vector<TSNode> real;
  for (const Argument& a : model.arguments(call)) real.push_back(a.node);
  auto it = std::find_if(real.begin(), real.end(), [&](TSNode a) { return same_node(a, arg); });
  if (it == real.end()) return std::nullopt;
  std::uint32_t start, end;
  if (it + 1 != real.end()) {  // `arg, next`: up to the next argument
    start = node_start_byte(arg);
    end = node_start_byte(*(it + 1));
  } else if (it != real.begin()) {  // `prev, arg`: from the end of the previous one
    start = node_end_byte(*(it - 1));
    end = node_end_byte(arg);
  } else {  // the only argument
    start = node_start_byte(arg);
    end = node_end_byte(arg);
  }
  for (TSNode a : children(args))
    if (node_symbol(a) == k.comment && node_start_byte(a) < end && node_end_byte(a) > start) return std::nullopt;
  return Edit{start, end, ""};
}

std::string local_rank_name(const SemanticModel& model, TSNode at) {
  std::uint32_t before = node_start_byte(at);
  int scope = model.regions()[static_cast<std::size_t>(model.region_of(at))].scope;
  std::string best;
  std::uint32_t best_at = 0;
  for (const Binding& b : model.bindings()) {
    std::uint32_t where = node_start_byte(b.target);
    if (b.scope != scope && b.scope != 0) continue;
    if (b.scope == scope && where >= before) continue;
    std::string path = model.path_of(b.target);
    if (path.empty()) continue;
    bool local = model.last_name(b.target) == "local_rank";
    if (!local && !node_is_null(b.value)) local = model.env_var_read(b.value) == "LOCAL_RANK";
    if (!local) continue;
    // the innermost (function) binding wins over a module one, then the latest
    bool better = best.empty() || (b.scope == scope && scope != 0) || where > best_at;
    if (better) {
      best = path;
      best_at = where;
    }
  }
  if (!best.empty()) return best;
  // argparse: `parser.add_argument("--local_rank", ...)` and `args = parser.parse_args()` give `args.local_rank`
  bool option = false;
  for (const CallSite* c : model.calls_named("add_argument")) {
    Value v = model.value_of(model.argument(*c, "", 0));
    if (v.kind == Value::Kind::Str && (v.s == "--local_rank" || v.s == "--local-rank")) option = true;
  }
  if (!option) return {};
  for (const Binding& b : model.bindings()) {
    if (node_is_null(b.value) || node_symbol(b.value) != kinds().call) continue;
    const CallSite* c = model.call_at(b.value);
    if (c != nullptr && c->method == "parse_args" && node_start_byte(b.target) < before) {
      std::string path = model.path_of(b.target);
      if (!path.empty()) best = path + ".local_rank";
    }
  }
  return best;
}

bool imports_os(const SemanticModel& model) { return model.imports_module_as("os", "os"); }

std::string lowercase(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

bool evaluation_name(std::string_view raw) {
  std::string name = lowercase(raw);
  return name.find("val") != std::string::npos || name.find("test") != std::string::npos ||
         name.find("eval") != std::string::npos;
}

bool evaluation_loader(const SemanticModel& model, const CallSite& call) {
  return evaluation_name(model.last_name(model.assigned_to(call.node)));
}

namespace {
// True when `expr` is the name `name`, or a call whose first positional
// argument is (`tqdm(loader, desc=...)`, `enumerate(loader)`), to a few levels.
bool iterates_name(const SemanticModel& model, TSNode expr, std::string_view name) {
  const Kinds& k = kinds();
  for (int depth = 0; depth < 4 && !node_is_null(expr); ++depth) {
    TSSymbol s = node_symbol(expr);
    if (s == k.identifier) return model.text(expr) == name;
    if (s != k.call) return false;
    const CallSite* c = model.call_at(expr);
    if (!c || model.positional_count(*c) < 1) return false;
    expr = model.argument(*c, "", 0);
  }
  return false;
}

// `a, b, name = x.prepare(a, b, name)`: binding `b` of `name` is the result at
// the position where `name` is passed (Accelerate's prepare returns its
// arguments prepared, in order).
bool prepared_in_place(const SemanticModel& model, const Binding& b, std::string_view name) {
  const Kinds& k = kinds();
  if (node_is_null(b.target)) return false;
  TSNode pattern = ts_node_parent(b.target);
  if (node_is_null(pattern)) return false;
  std::string_view type = ts_node_type(pattern);
  if (type != "pattern_list" && type != "tuple_pattern") return false;
  TSNode assignment = ts_node_parent(pattern);
  if (node_is_null(assignment) || node_symbol(assignment) != k.assignment) return false;
  TSNode right = field(assignment, k.f_right);
  const CallSite* c = node_symbol(right) == k.call ? model.call_at(right) : nullptr;
  if (c == nullptr || c->method != "prepare" || model.has_unpacked_arguments(*c)) return false;
  int target_at = -1, i = 0;
  for (TSNode t : children(pattern)) {
    if (node_eq(t, b.target)) target_at = i;
    ++i;
  }
  int arg_at = -1;
  i = 0;
  for (const Argument& a : model.arguments(*c)) {
    if (a.kind != Argument::Kind::Positional) return false;
    if (node_symbol(a.value) == k.identifier && model.text(a.value) == name) arg_at = i;
    ++i;
  }
  return target_at >= 0 && target_at == arg_at && i == static_cast<int>(ts_node_named_child_count(pattern));
}

bool within(TSNode outer, TSNode inner) {
  return node_start_byte(inner) >= node_start_byte(outer) && node_end_byte(inner) <= node_end_byte(outer);
}

// True when a `return` or `yield` in the body of `scope` (not in a function
// nested in it) hands out the name `name`: `return loader`, `return model,
// loader`. The caller may iterate it: a use ddplint cannot follow.
bool hands_out(const SemanticModel& model, TSNode scope, std::string_view name) {
  const Kinds& k = kinds();
  std::vector<std::pair<TSNode, bool>> stack;  // (node, inside a return/yield)
  TSNode body = field(scope, k.f_body);
  if (node_is_null(body)) return false;
  stack.emplace_back(body, false);
  while (!stack.empty()) {
    auto [n, out] = stack.back();
    stack.pop_back();
    TSSymbol sym = node_symbol(n);
    if (out && sym == k.identifier && model.text(n) == name) return true;
    if (sym == k.function_definition || sym == k.class_definition || sym == k.lambda) continue;
    bool inside = out || sym == k.return_statement || ts_node_type(n) == std::string_view("yield");
    for (TSNode ch : children(n)) stack.emplace_back(ch, inside);
  }
  return false;
}

// True when `c` calls the builtin `len()` (no binding of `len` in its scope).
bool builtin_len(const SemanticModel& model, const CallSite& c) {
  return node_symbol(c.callee) == kinds().identifier && model.text(c.callee) == "len" &&
         model.bindings_of("len", c.region).empty();
}

// True when every use of the name `name` in `scope` (its binding by `loader`,
// the DataLoader call, aside) is the one argument of the builtin `len()` (a
// loader made only to count its batches, `steps = len(loader) * epochs`,
// none of which it loads) or an argument of a function of this file
// decorated with `@torch.no_grad()` / `@torch.inference_mode()`, where no
// gradient can be computed (a loss-analysis tool's `analyze(loader, ...)`).
// Any other use (iterated here, an attribute read, passed to anything else,
// returned, in a comprehension) is false.
bool counted_or_inspected(const SemanticModel& model, TSNode scope, TSNode loader, std::string_view name) {
  const Kinds& k = kinds();
  TSNode body = node_symbol(scope) == k.module ? scope : field(scope, k.f_body);
  if (node_is_null(body)) return false;
  bool counted_once = false;
  std::vector<TSNode> stack{body};
  for (int budget = 1 << 16; !stack.empty(); --budget) {
    if (budget == 0) return false;
    TSNode n = stack.back();
    stack.pop_back();
    if (node_symbol(n) == k.identifier && model.text(n) == name) {
      TSNode p = ts_node_parent(n);
      if (node_symbol(p) == k.assignment && node_eq(field(p, k.f_left), n) && node_eq(field(p, k.f_right), loader))
        continue;
      TSNode call = node_symbol(p) == k.argument_list ? ts_node_parent(p) : TSNode{};
      const CallSite* c = node_is_null(call) ? nullptr : model.call_at(call);
      if (c == nullptr) return false;
      bool counted = ts_node_named_child_count(p) == 1 && builtin_len(model, *c);
      if (!counted) {
        auto targets = model.resolve_local_function(*c);
        if (targets.empty()) return false;
        for (int f : targets)
          if (!model.functions()[static_cast<std::size_t>(f)].no_grad) return false;
      }
      counted_once = true;
      continue;
    }
    for (TSNode ch : children(n)) stack.push_back(ch);
  }
  return counted_once;
}
}  // namespace

namespace {
// True when a name's words (split at `_`, `.`, `-`, digits and case changes)
// name an evaluation split and none names training: `val_loader`,
// `_test_dataloader`, `"validation"`; not `train_val`.
bool names_evaluation_split(std::string_view name, bool& train) {
  static constexpr std::array<std::string_view, 10> eval_words = {
      "val", "valid", "validation", "eval", "evaluation", "test", "testing", "predict", "prediction", "inference"};
  bool eval = false;
  std::size_t i = 0;
  while (i < name.size()) {
    while (i < name.size() && !std::isalpha(static_cast<unsigned char>(name[i]))) ++i;
    std::size_t j = i;
    std::string word;
    while (j < name.size() && std::isalpha(static_cast<unsigned char>(name[j]))) {
      if (j > i && std::isupper(static_cast<unsigned char>(name[j])) && std::islower(static_cast<unsigned char>(name[j - 1])))
        break;  // camelCase: `valLoader`
      word += static_cast<char>(std::tolower(static_cast<unsigned char>(name[j])));
      ++j;
    }
    if (word == "train" || word == "training") train = true;
    if (std::find(eval_words.begin(), eval_words.end(), word) != eval_words.end()) eval = true;
    i = j;
  }
  return eval;
}

// The words of the names and string keys in `expr` (`self.datasets["validation"]`).
void split_words_of(const SemanticModel& model, TSNode expr, bool& eval, bool& train, int depth) {
  if (node_is_null(expr) || depth > 6) return;
  const Kinds& k = kinds();
  TSSymbol s = node_symbol(expr);
  if (s == k.identifier) {
    eval |= names_evaluation_split(model.text(expr), train);
    return;
  }
  if (s == k.string) {
    Value v = model.value_of(expr);
    if (v.kind == Value::Kind::Str) eval |= names_evaluation_split(v.s, train);
    return;
  }
  if (s == k.call) return;  // what a call returns is not named by its arguments
  for (TSNode child : children(expr))
    if (ts_node_is_named(child)) split_words_of(model, child, eval, train, depth + 1);
}
}  // namespace

// True when the file sits in a folder the project names for evaluation
// (`eval/`, `evals/`, `evaluation/`, `evaluations/`, as tests sit in `tests/`)
// and trains nothing itself: its loaders feed evaluation harnesses
// (llm-foundry's in-context-learning tasks under `llmfoundry/eval/`).
bool evaluation_module(const SemanticModel& model) {
  if (model.trains()) return false;
  std::string_view path = model.source().path();
  std::size_t start = 0;
  while (start < path.size()) {
    std::size_t end = path.find_first_of("/\\", start);
    if (end == std::string_view::npos) return false;  // the file's own name
    std::string_view part = path.substr(start, end - start);
    if (part == "eval" || part == "evals" || part == "evaluation" || part == "evaluations") return true;
    start = end + 1;
  }
  return false;
}

bool loader_for_evaluation(const SemanticModel& model, const CallSite& call) {
  if (evaluation_module(model)) return true;
  bool eval = false, train = false;
  split_words_of(model, model.argument(call, "dataset", 0), eval, train, 0);
  TSNode target = model.assigned_to(call.node);
  if (!node_is_null(target)) split_words_of(model, target, eval, train, 0);
  // the function that builds it: `def _val_dataloader(self):`, `build_test_loader`
  for (int r = call.region; r > 0; r = model.regions()[r].parent) {
    if (model.regions()[r].kind != Region::Kind::Function) continue;
    for (const FunctionInfo& f : model.functions())
      if (f.region == r) eval |= names_evaluation_split(f.name, train);
    break;
  }
  return eval && !train;
}

namespace {
// In a file that trains nothing (no training call or loop, no project
// function that trains, no framework hook): true when every use of the
// loader's name `name` in `scope` stays in this file and trains nothing.
// Accepted uses: its binding to a DataLoader (this one or another: a
// tutorial rebinds `dataloader`), the iterable of a loop or comprehension,
// an argument of the builtins len/iter/next/enumerate, of a function of this
// file, or of a function of another module the project index knows trains
// nothing, or any argument in a function decorated with @torch.no_grad()
// (an evaluation script's `evaluate_generation(model, loader)`).
// Returned or yielded, passed to anything else, stored in an attribute or
// another name, or a module-level name another file may import: false.
bool used_only_where_nothing_trains(const SemanticModel& model, int scope, std::string_view name) {
  const Kinds& k = kinds();
  if (model.trains()) return false;
  const ProjectFacts& p = model.project();
  TSNode scope_node = model.regions()[scope].node;
  if (scope == 0) {
    // a notebook is imported by nobody; a module's name only where the index saw every import
    bool notebook = model.source().notebook() != nullptr;
    if (!notebook && !(p.indexed && !p.imported_whole && !p.imported_names.contains(name))) return false;
  } else if (hands_out(model, scope_node, name)) {
    return false;
  }
  TSNode body = node_symbol(scope_node) == k.module ? scope_node : field(scope_node, k.f_body);
  if (node_is_null(body)) return false;
  // a function decorated with @torch.no_grad() / @torch.inference_mode():
  // what it passes the loader to computes no gradient either
  const int function = model.regions()[scope].function;
  const bool no_grad = scope > 0 && function >= 0 && model.functions()[static_cast<std::size_t>(function)].no_grad;
  auto builtin = [&](const CallSite& c) {
    if (node_symbol(c.callee) != k.identifier) return false;
    std::string_view f = model.text(c.callee);
    return (f == "len" || f == "iter" || f == "next" || f == "enumerate") && model.bindings_of(f, c.region).empty();
  };
  bool used = false;
  std::vector<TSNode> occurrences = model.occurrences_of(name);
  // past a few hundred uses (a generated file that rebinds one name): not
  // followed, and no claim that they train nothing
  if (occurrences.size() > 256) return false;
  for (TSNode n : occurrences) {
    if (node_start_byte(n) < node_start_byte(body) || node_end_byte(n) > node_end_byte(body)) continue;
    // another variable of the same name (a parameter of a function defined here)
    bool ours = false;
    for (const Binding* b : model.bindings_of(name, model.region_of(n))) ours = ours || b->scope == scope;
    if (!ours) continue;
    TSNode parent = ts_node_parent(n);
    TSSymbol ps = node_symbol(parent);
    // one of the names `model, loader = accelerator.prepare(model, loader)` binds
    if (ps == k.pattern_list || ps == k.tuple_pattern) {
      TSNode assignment = ts_node_parent(parent);
      const CallSite* bound = node_symbol(assignment) == k.assignment && node_eq(field(assignment, k.f_left), parent)
                                  ? model.call_at(field(assignment, k.f_right))
                                  : nullptr;
      if (bound == nullptr || bound->method != "prepare") return false;
      continue;
    }
    if (ps == k.assignment && node_eq(field(parent, k.f_left), n)) {
      // `loader = DataLoader(...)`, or `loader = accelerator.prepare(loader)` (its argument is read below)
      const CallSite* bound = model.call_at(field(parent, k.f_right));
      if (bound == nullptr || (bound->canonical != kDataLoader && bound->method != "prepare")) return false;
      continue;
    }
    if ((ps == k.for_statement || ps == k.for_in_clause) && node_eq(field(parent, k.f_right), n)) {
      used = true;
      continue;
    }
    TSNode call = ps == k.argument_list ? ts_node_parent(parent) : TSNode{};
    const CallSite* c = node_is_null(call) ? nullptr : model.call_at(call);
    if (c == nullptr) return false;
    // Accelerate's prepare() hands back the loader (the binding above names it again)
    bool prepared = c->method == "prepare";
    if (!builtin(*c) && !prepared && !no_grad) {
      std::vector<int> local = model.resolve_local_function(*c);
      if (local.empty()) {
        std::optional<ProjectFacts::Trains> elsewhere = model.project_callee(*c);
        if (!elsewhere || *elsewhere != ProjectFacts::Trains::None) return false;
      }
      for (int f : local)
        if (model.function_trains(f) != ProjectFacts::Trains::None) return false;
    }
    used = true;
  }
  return used;
}
}  // namespace

bool loader_feeds_no_training(const SemanticModel& model, const CallSite& call) {
  const Kinds& k = kinds();
  if (loader_for_evaluation(model, call)) return true;
  TSNode target = model.assigned_to(call.node);
  if (node_is_null(target) || node_symbol(target) != k.identifier) return false;
  std::string_view name = model.text(target);
  const int scope = model.regions()[model.region_of(call.node)].scope;
  // a file that trains nothing, whose loaders stay in it
  if (used_only_where_nothing_trains(model, scope, name)) return true;
  // every binding of the name in this scope: this DataLoader, `name = x.prepare(name)`,
  // or one of the results of `model, ..., name = x.prepare(model, ..., name)` at its position
  for (const Binding& b : model.bindings()) {
    if (b.scope != scope || b.path != name) continue;
    if (node_eq(b.value, call.node)) continue;
    if (node_is_null(b.value) && prepared_in_place(model, b, name)) continue;
    const CallSite* c = node_is_null(b.value) ? nullptr : model.call_at(b.value);
    if (!c || c->method != "prepare" || model.arguments(*c).size() != 1 || !iterates_name(model, b.value, name)) return false;
  }
  // nor copied to another name (`loader2 = loader`)
  for (const Binding& b : model.bindings())
    if (!node_is_null(b.value) && node_symbol(b.value) == k.identifier && model.text(b.value) == name) return false;
  // the loops that iterate it, none of which trains
  std::vector<TSNode> iterables;
  for (int r = 0; r < static_cast<int>(model.regions().size()); ++r) {
    const Region& reg = model.regions()[r];
    if (reg.kind != Region::Kind::Loop || reg.scope != scope || node_symbol(reg.node) != k.for_statement) continue;
    TSNode iterable = field(reg.node, k.f_right);
    if (!iterates_name(model, iterable, name)) continue;
    // (an evaluation loop may sit inside the epoch loop: it is no training loop itself;
    // a loop that stops within a few iterations, a probe or a one-step tutorial, trains no run)
    if (!model.few_iterations(r)) {
      if (model.is_step_loop(r) || model.is_training_loop(r)) return false;
      for (const CallSite& c : model.calls())
        if (model.is_training_call(c) && within(reg.node, c.node)) return false;
    }
    iterables.push_back(iterable);
  }
  // made only to count its batches: `len(loader)` and nothing else
  // (in a function: a module-level name may be imported and iterated elsewhere)
  if (iterables.empty()) return scope > 0 && counted_or_inspected(model, model.regions()[scope].node, call.node, name);
  // returned to the caller, who may train on it
  if (scope > 0 && hands_out(model, model.regions()[scope].node, name)) return false;
  // the name passed to any other call: a use ddplint cannot follow
  for (const CallSite& c : model.calls()) {
    // another function's own `loader` (a closure's use of this one still counts)
    if (model.regions()[c.region].scope != scope) {
      bool own = false;
      for (const Binding* b : model.bindings_of(name, c.region)) own = own || b->scope != scope;
      if (own) continue;
    }
    for (const Argument& a : model.arguments(c)) {
      if (node_is_null(a.value) || node_symbol(a.value) != k.identifier || model.text(a.value) != name) continue;
      bool in_loop = std::any_of(iterables.begin(), iterables.end(), [&](TSNode it) { return within(it, c.node); });
      bool prepared = c.method == "prepare";
      // `len(loader)`: the number of batches, none of them loaded
      bool counted = builtin_len(model, c);
      if (!in_loop && !prepared && !counted) return false;
    }
  }
  return true;
}

std::string autocast_precision(const SemanticModel& model, const CallSite& call) {
  std::string_view c = call.canonical;
  bool cuda_amp = c == "torch.cuda.amp.autocast";
  if (!cuda_amp && c != "torch.autocast" && c != "torch.amp.autocast") return {};
  if (!cuda_amp) {
    // torch.autocast(device_type, dtype=None, enabled=True, ...)
    Value device = model.value_of(model.argument(call, "device_type", 0));
    if (device.kind != Value::Kind::Str || device.s != "cuda") return {};
  }
  Value enabled = model.value_of(model.argument(call, "enabled", cuda_amp ? 0 : 2));
  if (enabled.known() && !enabled.truthy()) return {};
  // dtype is the second parameter of both torch.cuda.amp.autocast(enabled, dtype)
  // and torch.autocast(device_type, dtype)
  TSNode dtype = model.argument(call, "dtype", 1);
  if (node_is_null(dtype)) return model.has_unpacked_arguments(call) ? "" : "fp16";  // CUDA's default
  std::string d = model.canonical_name(dtype);
  if (d == "torch.float16" || d == "torch.half") return "fp16";
  if (d == "torch.bfloat16") return "bf16";
  Value v = model.value_of(dtype);
  if (v.kind == Value::Kind::Str && (v.s == "float16" || v.s == "fp16")) return "fp16";
  if (v.kind == Value::Kind::Str && (v.s == "bfloat16" || v.s == "bf16")) return "bf16";
  return {};
}

void Pins::add(const SemanticModel& model, TSNode pin) {
  int scope = model.regions()[model.region_of(pin)].scope;
  auto [it, inserted] = first_in_scope.try_emplace(scope, node_start_byte(pin));
  if (!inserted) it->second = std::min(it->second, node_start_byte(pin));
}

bool Pins::before(const SemanticModel& model, TSNode node) const {
  if (anywhere) return true;
  int scope = model.regions()[model.region_of(node)].scope;
  auto it = first_in_scope.find(scope);
  std::size_t here = 0;
  if (it != first_in_scope.end()) {
    if (it->second < node_start_byte(node)) return true;
    here = 1;
  }
  return first_in_scope.size() > here;  // pins in other scopes
}

Pins collect_pins(const SemanticModel& model) {
  Pins pins;
  pins.anywhere = model.mentions_in_code("CUDA_VISIBLE_DEVICES");  // not `# CUDA_VISIBLE_DEVICES=0,1`
  if (pins.anywhere) return pins;
  for (const CallSite* c : model.calls_to("torch.cuda.set_device")) pins.add(model, c->node);
  for (const CallSite* c : model.calls_to("torch.cuda.device")) pins.add(model, c->node);
  for (const CallSite* c : model.calls_to("torch.distributed.init_process_group"))
    if (!node_is_null(model.argument(*c, "device_id"))) pins.add(model, c->node);
  for (std::string_view method : {"to", "cuda"}) {
    for (const CallSite* c : model.calls_named(method)) {
      if (node_is_null(c->receiver)) continue;
      TSNode device = model.argument(*c, "device", 0);
      if (node_is_null(device)) continue;  // .cuda(): the current device, GPU 0 unless set
      if (model.may_be_indexed_device(device)) pins.add(model, c->node);
    }
  }
  // torch.device("cuda", rank): a device of this process's own, built by index
  for (const CallSite* c : model.calls_to("torch.device")) {
    TSNode index = model.argument(*c, "index", 1);
    if (!node_is_null(index) && model.value_of(index).kind != Value::Kind::Int) pins.add(model, c->node);
  }
  // deepspeed.initialize sets each process's device from its local rank
  // (DeepSpeedEngine._set_distributed_vars: get_accelerator().set_device(local_rank))
  CallRange deepspeed = model.calls_to("deepspeed.initialize");
  if (!deepspeed.empty()) pins.add(model, (*deepspeed.begin())->node);
  // a function of another file that selects the device (`init_distributed_mode(args)`)
  if (!model.project().device_selecting_calls.empty())
    for (const CallSite& c : model.calls())
      if (model.project().device_selecting_calls.contains(c.canonical)) pins.add(model, c.node);
  return pins;
}

namespace {
bool ends_run(const SemanticModel& model, TSNode statement) {
  const Kinds& k = kinds();
  TSSymbol s = node_symbol(statement);
  if (s == k.raise_statement) return true;
  if (s != k.expression_statement || ts_node_named_child_count(statement) != 1) return false;
  TSNode call = ts_node_named_child(statement, 0);
  if (node_symbol(call) != k.call) return false;
  const CallSite* c = model.call_at(call);
  if (c == nullptr) return false;
  return c->canonical == "sys.exit" || c->canonical == "os._exit" ||
         (node_symbol(c->callee) == k.identifier && (c->method == "exit" || c->method == "quit"));
}
}  // namespace

bool in_run_ending_branch(const SemanticModel& model, TSNode node) {
  const Kinds& k = kinds();
  for (int r = model.region_of(node); r > 0; r = model.regions()[r].parent) {
    const Region& region = model.regions()[r];
    if (region.kind == Region::Kind::Loop || region.kind == Region::Kind::Function) return false;
    if (region.kind != Region::Kind::Branch) continue;
    TSNode block = field(region.node, node_symbol(region.node) == k.else_clause ? k.f_body : k.f_consequence);
    if (node_is_null(block)) continue;
    for (TSNode statement : children(block))
      if (ts_node_is_named(statement) && ends_run(model, statement)) return true;
  }
  return false;
}

bool process_group_started_elsewhere(const SemanticModel& model) {
  if (!model.calls_to("torch.distributed.init_process_group").empty()) return false;
  if (model.wraps_ddp()) return true;
  for (const CallSite& c : model.calls()) {
    if (c.canonical.rfind("torch.distributed.", 0) == 0) return true;
    // another package's subclass of DistributedDataParallel (mmcv's
    // MMDistributedDataParallel, apex.parallel's): the process group, and with
    // it the device, is that package's set-up, which this file cannot see
    std::string_view name = c.canonical;
    if (name.rfind("torch.", 0) != 0 && name.find('.') != std::string_view::npos &&
        name.size() >= 23 && name.substr(name.size() - 23) == "DistributedDataParallel")
      return true;
  }
  return false;
}

TSNode all_ranks_on_default_gpu(const SemanticModel& model, const Pins& pins) {
  if (!model.is_distributed() || !model.uses_cuda() || pins.any()) return {};
  if (process_group_started_elsewhere(model)) return {};
  for (const CallSite* c : model.calls_to("torch.nn.parallel.DistributedDataParallel"))
    if (!node_is_null(model.argument(*c, "device_ids", 1)) || model.has_unpacked_arguments(*c)) return {};
  // the first move to the default device, in document order
  for (const CallSite& c : model.calls()) {
    if (c.method == "cuda" && !node_is_null(c.receiver) && node_is_null(model.argument(c, "device", 0)))
      return c.node;
    TSNode device{};
    if (c.method == "to" && !node_is_null(c.receiver)) device = model.argument(c, "device", 0);
    if (c.canonical == "torch.device" && node_is_null(model.argument(c, "index", 1))) device = model.argument(c, "type", 0);
    if (node_is_null(device)) continue;
    Value v = model.value_of(device);
    if (v.kind == Value::Kind::Str && v.s == "cuda") return c.node;
  }
  return {};
}

std::vector<DdpWrap> ddp_wraps(const SemanticModel& model) {
  std::vector<DdpWrap> out;
  for (std::string_view name : {"torch.nn.parallel.DistributedDataParallel", "torch.distributed.fsdp.FullyShardedDataParallel"}) {
    for (const CallSite* c : model.calls_to(name)) {
      DdpWrap w;
      w.call = c;
      w.result = model.path_of(model.assigned_to(c->node));
      w.module = model.path_of(model.argument(*c, "module", 0));
      w.scope = model.regions()[c->region].scope;
      out.push_back(std::move(w));
    }
  }
  return out;
}

namespace {
// True when `a` and `b` lie in the two arms of one conditional expression
// (`DDP(model, ...) if not debug else model.to(gpu)`): one runs instead of the other.
bool alternative_arms(TSNode a, TSNode b) {
  const Kinds& k = kinds();
  for (TSNode c = ts_node_parent(a); !node_is_null(c); c = ts_node_parent(c)) {
    TSSymbol s = node_symbol(c);
    if (s == k.block || s == k.function_definition || s == k.class_definition || s == k.module) return false;
    if (s != k.conditional_expression || ts_node_named_child_count(c) < 3) continue;
    TSNode consequence = ts_node_named_child(c, 0), alternative = ts_node_named_child(c, 2);
    auto within = [](TSNode n, TSNode arm) {
      return node_start_byte(arm) <= node_start_byte(n) && node_end_byte(n) <= node_end_byte(arm);
    };
    if ((within(a, consequence) && within(b, alternative)) || (within(a, alternative) && within(b, consequence)))
      return true;
  }
  return false;
}
}  // namespace

bool runs_after(const SemanticModel& model, const DdpWrap& wrap, TSNode later) {
  if (node_start_byte(later) < node_end_byte(wrap.call->node)) return false;
  if (alternative_arms(wrap.call->node, later)) return false;
  for (int r = model.region_of(later); r >= 0; r = model.regions()[r].parent) {
    if (r == wrap.call->region) return true;
    if (r == 0) break;
  }
  return false;
}

bool after_wrap_of(const SemanticModel& model, const std::vector<DdpWrap>& wraps, const CallSite& at,
                   const std::string& path) {
  if (path.empty()) return false;
  int scope = model.regions()[at.region].scope;
  for (const DdpWrap& w : wraps) {
    if (w.scope == scope && (path == w.result || path == w.module) && runs_after(model, w, at.node)) return true;
  }
  return false;
}

namespace {
bool tensor_method(std::string_view m) {
  static constexpr std::array<std::string_view, 40> names = {
      "sum", "mean", "max", "min", "norm", "detach", "float", "half", "clone", "argmax", "argmin", "view",
      "reshape", "pow", "sqrt", "abs", "exp", "log", "std", "var", "softmax", "cuda", "to", "squeeze", "flatten",
      "masked_fill", "any", "all", "long", "int", "bool", "eq", "ne", "gt", "lt", "ge", "le", "isnan", "isinf",
      "sigmoid"};
  return std::find(names.begin(), names.end(), m) != names.end();
}

// A name bound to a torch.nn module instance or a DDP/FSDP wrap: calling it runs a forward.
bool module_instance(const SemanticModel& model, TSNode callee, int depth) {
  if (depth > 8) return false;
  std::string path = model.path_of(callee);
  if (path.empty()) return false;
  auto bindings = model.bindings_of(path, model.region_of(callee));
  if (bindings.empty()) return false;
  for (const Binding* b : bindings) {
    if (b->kind != Binding::Kind::Assign || node_is_null(b->value) || node_symbol(b->value) != kinds().call)
      return false;
    const CallSite* c = model.call_at(b->value);
    if (!c) return false;
    bool nn = c->canonical.rfind("torch.nn.", 0) == 0 && c->canonical.find("functional") == std::string::npos &&
              c->canonical.find("init.") == std::string::npos && c->canonical.find("utils") == std::string::npos;
    // `nn.Linear(...).cuda()` or `net.to(device)` of a module is still the module
    bool moved = false;
    if ((c->method == "to" || c->method == "cuda") && !node_is_null(c->receiver)) {
      if (node_symbol(c->receiver) == kinds().call) {
        const CallSite* inner = model.call_at(c->receiver);
        moved = inner && inner->canonical.rfind("torch.nn.", 0) == 0;
      } else {
        moved = module_instance(model, c->receiver, depth + 1);
      }
    }
    // a DDP/FSDP wrap is called like the module
    moved = moved || c->canonical == "torch.nn.parallel.DistributedDataParallel";
    if (!nn && !moved) return false;
  }
  return true;
}
}  // namespace

namespace {
// `p.grad` or `p.grad.data` where `p` is bound by a loop over a module's
// parameters (`for p in model.parameters()`, `for name, p in
// model.named_parameters()`): a parameter's gradient, a tensor.
bool parameter_gradient(const SemanticModel& model, TSNode expr) {
  const Kinds& k = kinds();
  if (node_symbol(expr) != k.attribute) return false;
  if (model.text(field(expr, k.f_attribute)) == "data") expr = field(expr, k.f_object);
  if (node_symbol(expr) != k.attribute || model.text(field(expr, k.f_attribute)) != "grad") return false;
  TSNode owner = field(expr, k.f_object);
  if (node_symbol(owner) != k.identifier) return false;
  BindingList bindings = model.bindings_of(model.text(owner), model.region_of(owner));
  if (bindings.empty()) return false;
  for (const Binding* b : bindings) {
    if (b->kind != Binding::Kind::LoopTarget || node_is_null(b->target)) return false;
    TSNode loop = ts_node_parent(b->target);
    while (!node_is_null(loop) && node_symbol(loop) != k.for_statement) loop = ts_node_parent(loop);
    if (node_is_null(loop)) return false;
    const CallSite* c = model.call_at(field(loop, k.f_right));
    if (c == nullptr || node_is_null(c->receiver) || (c->method != "parameters" && c->method != "named_parameters"))
      return false;
  }
  return true;
}
}  // namespace

bool tensor_valued(const SemanticModel& model, TSNode expr, int depth) {
  if (node_is_null(expr) || depth > 8) return false;
  const Kinds& k = kinds();
  TSSymbol s = node_symbol(expr);
  if (s == k.parenthesized_expression && !node_is_null(parenthesized_inner(expr)))
    return tensor_valued(model, parenthesized_inner(expr), depth + 1);
  if (s == k.call) {
    const CallSite* c = model.call_at(expr);
    if (!c) return false;
    std::string_view cn = c->canonical;
    if (cn.rfind("torch.", 0) == 0) {
      for (std::string_view not_tensor : {"torch.cuda.", "torch.distributed.", "torch.device", "torch.backends.",
                                          "torch.utils.", "torch.optim.", "torch.nn.", "torch.is_", "torch.set_",
                                          "torch.get_", "torch.manual_seed", "torch.save", "torch.load", "torch.no_grad",
                                          "torch.autocast", "torch.amp.", "torch.compile", "torch.inference_mode"})
        if (cn.rfind(not_tensor, 0) == 0)
          return cn.rfind("torch.nn.functional.", 0) == 0 || cn.rfind("torch.nn.utils.clip_grad_norm", 0) == 0;
      return true;
    }
    if (!node_is_null(c->receiver) && tensor_method(c->method)) return tensor_valued(model, c->receiver, depth + 1);
    if (node_is_null(c->receiver) || node_symbol(c->callee) == k.attribute)
      return module_instance(model, c->callee, depth + 1);
    return false;
  }
  if (s == k.binary_operator)
    return tensor_valued(model, field(expr, k.f_left), depth + 1) || tensor_valued(model, field(expr, k.f_right), depth + 1);
  if (s == k.subscript) return tensor_valued(model, field(expr, k.f_value), depth + 1);
  if (s == k.comparison_operator) {  // `pred == y` on tensors is a tensor (not `is` / `is not`)
    for (TSNode op : children(expr, false))
      if (!ts_node_is_named(op) && model.text(op).starts_with("is")) return false;
    for (TSNode operand : children(expr))
      if (tensor_valued(model, operand, depth + 1)) return true;
    return false;
  }
  if (s == k.identifier || s == k.attribute) {
    if (parameter_gradient(model, expr)) return true;
    auto bindings = model.bindings_of(model.path_of(expr), model.region_of(expr));
    int tensors = 0;
    for (const Binding* b : bindings) {
      if (node_eq(b->target, expr)) continue;
      if (b->kind == Binding::Kind::Augmented) continue;  // `total += loss`: as the other bindings
      if (b->kind != Binding::Kind::Assign || node_is_null(b->value) || !tensor_valued(model, b->value, depth + 1))
        return false;
      ++tensors;
    }
    return tensors > 0;
  }
  return false;
}

std::uint32_t line_of(const SemanticModel& model, TSNode node) {
  return model.source().lines().line_of(node_start_byte(node)) + 1;
}

bool region_within(const SemanticModel& model, int inner, int outer) {
  for (int r = inner; r >= 0; r = model.regions()[r].parent) {
    if (r == outer) return true;
    if (r == 0) break;
  }
  return false;
}

bool under_no_grad(const SemanticModel& model, TSNode node) {
  for (int r = model.region_of(node); r > 0; r = model.regions()[r].parent) {
    const Region& reg = model.regions()[r];
    if (reg.kind == Region::Kind::With) {
      std::string_view header = model.text(reg.node);
      header = header.substr(0, header.find(':'));
      if (header.find("no_grad") != std::string_view::npos || header.find("inference_mode") != std::string_view::npos ||
          header.find("set_grad_enabled(False)") != std::string_view::npos)
        return true;
    }
    if (reg.kind == Region::Kind::Function && model.functions()[reg.function].no_grad) return true;
  }
  return false;
}

bool calls_as_model(const SemanticModel& model, const CallSite& call, std::string_view path) {
  return model.path_of(call.callee) == path || (call.method == "forward" && model.path_of(call.receiver) == path);
}

std::string_view bound_parameter(const SemanticModel& model, int f, const Argument& a, int position) {
  if (a.kind == Argument::Kind::Keyword) return a.keyword;
  auto parameters = model.parameters_of(f);
  return position >= 0 && position < static_cast<int>(parameters.size())
             ? parameters[static_cast<std::size_t>(position)].first
             : std::string_view();
}

std::vector<TSNode> with_item_values(TSNode with_statement) {
  const Kinds& k = kinds();
  std::vector<TSNode> out;
  for (TSNode clause : children(with_statement)) {
    if (node_symbol(clause) != k.with_clause) continue;
    for (TSNode item : children(clause)) {
      if (node_symbol(item) != k.with_item) continue;
      TSNode value = field(item, k.f_value);
      if (!node_is_null(value) && std::string_view(ts_node_type(value)) == "as_pattern") value = ts_node_named_child(value, 0);
      if (!node_is_null(value)) out.push_back(value);
    }
  }
  return out;
}

// --- host-device syncs of a step (DDP401, DDP404) ---------------------------

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

// The step loop around `region` in its function (an inner loop over a dict
// of losses is part of the step), else its innermost loop, else the function
// whose body holds it outside any loop, or -1.
int step_loop_of(const SemanticModel& model, int region) {
  int innermost = model.innermost_loop(region);
  for (int loop = innermost; loop > 0; loop = model.innermost_loop(model.regions()[loop].parent))
    if (model.is_step_loop(loop)) return loop;
  // a Lightning hook that runs every step is the body of the Trainer's step loop
  int scope = model.regions()[region].scope;
  if (innermost < 0 && scope > 0 && model.regions()[scope].kind == Region::Kind::Function &&
      model.is_lightning_step_hook(model.regions()[scope].function))
    return scope;
  // a function body with no step loop (a helper the step loop calls, in this
  // file or another): its statements run in order, so a second sync right
  // after a first one waits for nothing (`return (a.item() + b.item()) ** 0.5`),
  // and a loop in it over a dict of metrics is part of the same step
  if (scope > 0 && model.regions()[scope].kind == Region::Kind::Function) return scope;
  return innermost;
}

}  // namespace

// The byte ranges of the file's lambdas (one walk, only when the code has
// one): a call inside a lambda runs when the lambda is called, not where it
// stands.
ByteRanges lambda_ranges(const SemanticModel& model) {
  ByteRanges out;
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

bool in_lambda(const ByteRanges& lambdas, TSNode node) {
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
bool tensor_condition(const SemanticModel& model, TSNode cond, int depth) {
  if (node_is_null(cond) || depth > 8) return false;
  const Kinds& k = kinds();
  TSSymbol s = node_symbol(cond);
  if (s == k.parenthesized_expression || s == k.not_operator) {
    return ts_node_named_child_count(cond) > 0 && tensor_condition(model, ts_node_named_child(cond, 0), depth + 1);
  }
  if (s == k.boolean_operator)
    return tensor_condition(model, field(cond, k.f_left), depth + 1) ||
           tensor_condition(model, field(cond, k.f_right), depth + 1);
  if (s == k.comparison_operator) {
    for (TSNode op : children(cond, false))
      if (!ts_node_is_named(op) && model.text(op).starts_with("is")) return false;
    for (TSNode operand : children(cond))
      if (tensor_valued(model, operand)) return true;
    return false;
  }
  return tensor_valued(model, cond);
}

DrainedSyncs syncs_after_sync(const SemanticModel& model, const std::vector<DdpWrap>& wraps, const ByteRanges& lambdas) {
  DrainedSyncs drained;
  // a sync seen: where it ends, and the region it runs in
  struct Seen {
    std::uint32_t end;
    int region;
  };
  std::vector<Seen> recent;
  int recent_loop = -2;
  // the branch conditions on a tensor in a step, in file order (merged with the calls)
  std::vector<const Region*> conditions;
  const Kinds& k = kinds();
  for (const Region& r : model.regions()) {
    if (r.kind != Region::Kind::Branch || r.negated || node_is_null(r.condition)) continue;
    if (node_symbol(r.node) != k.if_statement && node_symbol(r.node) != k.elif_clause) continue;
    if (step_loop_of(model, r.parent) < 0 || !tensor_condition(model, r.condition)) continue;
    conditions.push_back(&r);
  }
  std::sort(conditions.begin(), conditions.end(), [](const Region* a, const Region* b) {
    return node_start_byte(a->condition) < node_start_byte(b->condition);
  });
  std::size_t next_condition = 0;
  // the loops inside a step whose body queues work: a sync in one follows its
  // previous iteration's work, whatever came before the loop
  std::unordered_set<int> loops_with_work;
  for (const CallSite& c : model.calls()) {
    if (!launches_step_work(model, c, wraps)) continue;
    for (int l = model.innermost_loop(c.region); l > 0 && loops_with_work.insert(l).second;
         l = model.innermost_loop(model.regions()[l].parent)) {
    }
  }
  auto in_loop_with_work = [&](int region, int outer) {
    for (int l = model.innermost_loop(region); l > 0 && region_within(model, l, outer) && l != outer;
         l = model.innermost_loop(model.regions()[l].parent))
      if (loops_with_work.contains(l)) return true;
    return false;
  };
  // one sync at `node` in `region`: drained when an earlier one of the step holds it
  auto visit = [&](TSNode node, int region, bool counts) -> bool {
    int loop = step_loop_of(model, region);
    if (loop < 0) return false;
    if (loop != recent_loop) recent.clear(), recent_loop = loop;
    std::uint32_t start = node_start_byte(node);
    bool after = false;
    // a loop inside a helper (per parameter, per metric) makes one round trip
    // per iteration: hundreds of them are a cost of their own, not a copy
    int inner = model.innermost_loop(region);
    bool helper_loop = model.regions()[loop].kind == Region::Kind::Function && inner > 0 &&
                       region_within(model, inner, loop);
    for (const Seen& s : helper_loop ? std::vector<Seen>{} : recent)
      if (s.end <= start && region_within(model, region, s.region) && !in_loop_with_work(region, s.region))
        after = true;
    if (counts && model.runs_every_step(node, kRareGuards)) {
      if (recent.size() == 64) recent.erase(recent.begin());
      recent.push_back({node_end_byte(node), region});
    }
    return after;
  };
  auto conditions_before = [&](std::uint32_t at) {
    for (; next_condition < conditions.size() && node_start_byte(conditions[next_condition]->condition) < at;
         ++next_condition) {
      const Region& r = *conditions[next_condition];
      if (visit(r.condition, r.parent, true)) drained.conditions.insert(node_start_byte(r.condition));
    }
  };
  for (const CallSite& c : model.calls()) {
    std::uint32_t start = node_start_byte(c.node);
    conditions_before(start);
    int loop = step_loop_of(model, c.region);
    if (loop < 0) continue;
    if (launches_step_work(model, c, wraps)) {
      if (loop != recent_loop) recent.clear(), recent_loop = loop;
      // work queued after those syncs: they no longer drain what comes next
      std::erase_if(recent, [&](const Seen& s) { return s.end <= start; });
      continue;
    }
    if (!sync_call(model, c) || in_lambda(lambdas, c.node)) continue;
    bool counts = node_is_null(c.receiver) || !host_tensor(model, c.receiver);
    if (visit(c.node, c.region, counts)) drained.calls.insert(&c);
  }
  conditions_before(std::numeric_limits<std::uint32_t>::max());
  return drained;
}


namespace {
// Lightning's and Fabric's DDP strategy classes (lightning/pytorch/strategies/ddp.py,
// lightning/fabric/strategies/ddp.py), however imported.
bool lightning_ddp_strategy(std::string_view canonical) {
  if (!canonical.ends_with(".DDPStrategy")) return false;
  for (std::string_view root : {"lightning.", "pytorch_lightning.", "lightning_fabric."})
    if (canonical.starts_with(root)) return true;
  return false;
}
}  // namespace

std::optional<Fix> strategy_rename_fix(const SemanticModel& model, const FrameworkStrategy& st, std::string_view name) {
  if (node_symbol(st.value) != kinds().string || model.text(st.value).find('{') != std::string_view::npos)
    return std::nullopt;
  std::string quoted = "\"" + std::string(name) + "\"";
  return Fix{Fix::Applicability::Unsafe, "Use `strategy=" + quoted + "`",
             {Edit{node_start_byte(st.value), node_end_byte(st.value), quoted}}};
}

std::vector<FrameworkStrategy> framework_strategies(const SemanticModel& model) {
  std::vector<FrameworkStrategy> out;
  const Kinds& k = kinds();
  std::vector<const CallSite*> passed;
  for (const FrameworkConfig& config : model.framework_configs()) {
    if (config.framework != Framework::Lightning && config.framework != Framework::Fabric) continue;
    FrameworkSetting s = model.framework_setting(config, "strategy");
    if (s.state != FrameworkSetting::State::Written) continue;
    FrameworkStrategy st;
    st.config = &config;
    st.value = s.value;
    TSNode v = s.value;
    if (node_symbol(v) == k.identifier) {
      TSNode bound = model.single_assignment(v);
      if (!node_is_null(bound) && node_symbol(bound) == k.call) v = bound;
    }
    if (node_symbol(v) == k.call) {
      const CallSite* c = model.call_at(v);
      if (c != nullptr && lightning_ddp_strategy(c->canonical)) st.object = c, passed.push_back(c);
    } else {
      Value name = model.value_of(v);
      if (name.kind == Value::Kind::Str) st.name = name.s;
    }
    if (st.object != nullptr || !st.name.empty()) out.push_back(std::move(st));
  }
  for (const CallSite& c : model.calls()) {
    if (!lightning_ddp_strategy(c.canonical)) continue;
    if (std::find(passed.begin(), passed.end(), &c) != passed.end()) continue;
    FrameworkStrategy st;
    st.object = &c;
    st.value = c.node;
    out.push_back(std::move(st));
  }
  return out;
}

namespace {
// The Accelerator whose prepared DataLoader `expr` holds: `accelerator.prepare(...)`
// (one of its results), `accelerator.prepare_data_loader(loader)`,
// `accelerator.skip_first_batches(loader, n)`, or a name whose last binding
// before byte `before` is one of those. Null node when not known to be one.
TSNode preparing_accelerator(const SemanticModel& model, TSNode expr, std::uint32_t before, int depth = 0) {
  const Kinds& k = kinds();
  if (node_is_null(expr) || depth > 3) return {};
  if (node_symbol(expr) == k.call) {
    const CallSite* c = model.call_at(expr);
    if (c == nullptr || (c->method != "prepare" && c->method != "prepare_data_loader" && c->method != "skip_first_batches"))
      return {};
    if (model.framework_object(c->receiver) == FrameworkObject::Accelerator) return c->receiver;
    // an Accelerator handed in (`def train(accelerator, model, loader)`) in a
    // file that imports Accelerate: a parameter is all it can be bound to here
    bool imports_accelerate = false;
    for (const auto& [local, target] : model.imports().entries())
      imports_accelerate = imports_accelerate || target == "accelerate" || target.starts_with("accelerate.");
    if (!imports_accelerate || node_symbol(c->receiver) != k.identifier) return {};
    BindingList bs = model.bindings_of(model.text(c->receiver), model.region_of(c->receiver));
    if (bs.empty()) return {};
    for (const Binding* b : bs)
      if (b->kind != Binding::Kind::Parameter) return {};
    return c->receiver;
  }
  if (node_symbol(expr) != k.identifier) return {};
  const Binding* last = nullptr;
  for (const Binding* b : model.bindings_of(model.text(expr), model.region_of(expr)))
    if (!node_is_null(b->target) && node_start_byte(b->target) < before &&
        (last == nullptr || node_start_byte(b->target) > node_start_byte(last->target)))
      last = b;
  if (last == nullptr || last->kind != Binding::Kind::Assign) return {};
  // `model, optimizer, loader = accelerator.prepare(...)`: the assignment's right side
  TSNode value = last->value;
  if (node_is_null(value)) {
    for (TSNode n = ts_node_parent(last->target); !node_is_null(n); n = ts_node_parent(n)) {
      if (node_symbol(n) == k.assignment) {
        value = field(n, k.f_right);
        break;
      }
      std::string_view type = ts_node_type(n);
      if (type != "pattern_list" && type != "tuple_pattern" && type != "list_pattern") break;
    }
  }
  return preparing_accelerator(model, value, node_start_byte(last->target), depth + 1);
}

// True when `call` runs in a loop over a DataLoader that Accelerate prepared
// with its default configuration: each batch is moved to the GPU with a
// blocking copy (accelerate/data_loader.py, DataLoaderShard.__iter__:
// send_to_device(batch, device, non_blocking=self._non_blocking), False unless
// DataLoaderConfiguration(non_blocking=True)), so the loop already waits for
// the GPU's queue at every batch: one more sync in the step costs little.
// True when step loop region `loop` iterates such a loader.
bool blocking_accelerate_loop(const SemanticModel& model, int loop) {
  const Kinds& k = kinds();
  TSNode stmt = model.regions()[loop].node;
  if (node_symbol(stmt) != k.for_statement) return false;
  TSNode accelerator = preparing_accelerator(model, model.iterated_container(field(stmt, k.f_right)),
                                             node_start_byte(stmt));
  if (node_is_null(accelerator)) return false;
  // the Accelerator's configuration, where this file makes it: not blocking
  // only when known to move batches without waiting (DataLoaderConfiguration(
  // non_blocking=True)) or not to move them at all (device_placement=False);
  // an Accelerator passed in or configured elsewhere moves them as by default
  const FrameworkConfig* config = model.framework_config_of(accelerator);
  if (config == nullptr) return true;
  FrameworkSetting placement = model.framework_setting(*config, "device_placement");
  if (placement.state == FrameworkSetting::State::Written) {
    Value v = model.value_of(placement.value);
    if (!v.known() || !v.truthy()) return false;
  }
  FrameworkSetting dl = model.framework_setting(*config, "dataloader_config");
  if (dl.state != FrameworkSetting::State::Written) return true;
  TSNode made = dl.value;
  if (node_symbol(made) == k.identifier) made = model.single_assignment(made);
  const CallSite* c = !node_is_null(made) && node_symbol(made) == k.call ? model.call_at(made) : nullptr;
  if (c == nullptr) return model.value_of(dl.value).kind == Value::Kind::None;  // dataloader_config=None
  Value non_blocking = model.value_of(model.argument(*c, "non_blocking"));
  return node_is_null(model.argument(*c, "non_blocking")) || (non_blocking.known() && !non_blocking.truthy());
}

// The step loops that call torch.cuda.synchronize() themselves on every
// iteration (in the body, or in a `with` or inner loop of it, under no branch:
// a timing pattern, `synchronize(); t0 = time.time()`): the step already waits
// for the GPU's queue, so one more host-device sync in it costs little. The
// call is `torch.cuda.synchronize()` or a call of a name bound once to it
// (`synchronize = torch.cuda.synchronize if device_type == "cuda" else lambda:
// None`: on CUDA, the runs this linter speaks of, it is that). Region
// indices, sorted; one pass over the bindings and one over the calls.
std::vector<int> synchronizing_loops(const SemanticModel& model) {
  const Kinds& k = kinds();
  // `torch.cuda.synchronize`, or a conditional expression with it as a branch
  auto names_synchronize = [&](TSNode value) {
    if (model.canonical_name(value) == "torch.cuda.synchronize") return true;
    if (node_symbol(value) != k.conditional_expression) return false;
    for (TSNode branch : children(value))
      if (model.canonical_name(branch) == "torch.cuda.synchronize") return true;
    return false;
  };
  std::vector<std::string_view> aliases;  // names bound to torch.cuda.synchronize
  for (const Binding& b : model.bindings())
    if (b.kind == Binding::Kind::Assign && !node_is_null(b.value) && !node_is_null(b.target) &&
        node_symbol(b.target) == k.identifier && names_synchronize(b.value))
      aliases.push_back(model.text(b.target));
  std::vector<int> out;
  for (const CallSite& c : model.calls()) {
    bool sync = c.canonical == "torch.cuda.synchronize";
    if (!sync && !aliases.empty() && !node_is_null(c.callee) && node_symbol(c.callee) == k.identifier &&
        std::find(aliases.begin(), aliases.end(), model.text(c.callee)) != aliases.end()) {
      TSNode value = model.single_assignment(c.callee);  // bound once, to it
      sync = !node_is_null(value) && names_synchronize(value);
    }
    if (!sync) continue;
    for (int r = c.region; r > 0; r = model.regions()[r].parent) {
      const Region& here = model.regions()[r];
      if (here.kind == Region::Kind::Loop) out.push_back(r);
      else if (here.kind != Region::Kind::With) break;  // a branch, a function
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

BlockingLoaderSteps::BlockingLoaderSteps(const SemanticModel& model)
    : model_(model), synchronizing_(synchronizing_loops(model)) {
  bool any = false;
  all_ = true;
  for (int r = 0; r < static_cast<int>(model.regions().size()) && all_; ++r) {
    if (!model.is_step_loop(r)) continue;
    all_ = synchronizing(r) || blocking_accelerate_loop(model, r);
    any = true;
  }
  all_ = all_ && any;
}

bool BlockingLoaderSteps::in_region(int region) const {
  const SemanticModel& model = model_;
  const bool all_blocking = all_;
  for (int r = region; r > 0; r = model.regions()[r].parent) {
    const Region& here = model.regions()[r];
    if (here.kind == Region::Kind::Function || here.kind == Region::Kind::Class) return all_blocking;
    if (here.kind == Region::Kind::Loop && model.is_step_loop(r))
      return synchronizing(r) || blocking_accelerate_loop(model, r);
  }
  return all_blocking;
}


}  // namespace ddplint::rules
