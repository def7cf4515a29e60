// Constant values of expressions (value_of), argparse defaults (argparse_value),
// and which environment variable an expression reads (env_var_read).
#include "linter/model/internal.hpp"
#include "linter/node_access.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>

namespace ddplint {

using namespace model_detail;

namespace {

constexpr std::size_t kMaxStringValue = 4096;  // longer constant strings are Unknown (bounded memory)

// Names that conventionally hold parsed command-line arguments (`args.lr`).
constexpr std::array<std::string_view, 8> kArgsLikeNames = {"args", "opt", "opts", "flags", "FLAGS",
                                                            "hparams", "options", "cmd_args"};
bool is_args_like_name(std::string_view name) {
  return std::find(kArgsLikeNames.begin(), kArgsLikeNames.end(), name) != kArgsLikeNames.end();
}

}  // namespace

Value SemanticModel::value_of(TSNode expr) const { return value_rec(expr, 0); }

Value SemanticModel::argparse_value(std::string_view dest, int depth) const {
  std::string key(dest);
  if (auto m = argparse_memo_.find(key); m != argparse_memo_.end()) return m->second;
  Value v = argparse_uncached(key, depth);
  argparse_memo_[key] = v;
  return v;
}

Value SemanticModel::argparse_uncached(const std::string& key, int depth) const {
  return launched_argument(key, argparse_default(key, depth), depth);
}

namespace {
// The option strings of an add_argument call: its leading string arguments
// that start with `-` (`"--batch-size", "-b"`).
std::vector<std::string> option_strings(const SemanticModel& m, const CallSite& add) {
  std::vector<std::string> out;
  for (int i = 0; i < 8; ++i) {
    TSNode a = m.argument(add, "", i);
    if (node_is_null(a)) break;
    Value v = m.value_of(a);
    if (v.kind != Value::Kind::Str) break;
    if (v.s.starts_with("-")) out.push_back(v.s);
  }
  return out;
}

// Python's int() and float() of a command-line word, when the whole word reads.
std::optional<Value> parse_number(const std::string& word, bool integer) {
  if (word.empty() || std::isspace(static_cast<unsigned char>(word.front())) ||
      std::isspace(static_cast<unsigned char>(word.back())) || word.find('_') != std::string::npos)
    return std::nullopt;
  char* end = nullptr;
  errno = 0;
  if (integer) {
    long long x = std::strtoll(word.c_str(), &end, 10);
    if (errno != 0 || *end != '\0') return std::nullopt;
    return Value::integer(x);
  }
  double x = std::strtod(word.c_str(), &end);
  if (errno != 0 || *end != '\0' || !std::isfinite(x)) return std::nullopt;
  return Value::floating(x);
}
}  // namespace

Value SemanticModel::launched_argument(const std::string& key, const Value& fallback, int depth) const {
  const std::vector<LaunchOfScript>& launches = project().launched_by;
  if (launches.empty()) return fallback;
  auto it = argparse_.find(key);
  if (it == argparse_.end()) return Value::unknown();
  // a parser given its own list (`parse_args(["--lr", "1"])`) does not read the launch's command line
  for (std::string_view parse : {"parse_args", "parse_known_args"})
    for (const CallSite* c : calls_named(parse))
      if (TSNode a = argument(*c, "args", 0); !node_is_null(a) && value_of(a).kind != Value::Kind::None) return fallback;
  // the value argparse stores for option `a` of add_argument `add`
  auto converted = [&](const CallSite& add, const LaunchOfScript::Argument& a) -> Value {
    if (!node_is_null(argument(add, "nargs"))) return Value::unknown();
    TSNode action = argument(add, "action");
    if (!node_is_null(action)) {
      Value act = value_rec(action, depth + 1);
      if (act.kind == Value::Kind::Str && act.s == "store_true") return Value::boolean(true);
      if (act.kind == Value::Kind::Str && act.s == "store_false") return Value::boolean(false);
      if (act.kind != Value::Kind::Str || act.s != "store") return Value::unknown();
    }
    if (!a.value) return Value::unknown();
    TSNode type = argument(add, "type");
    if (node_is_null(type)) return Value::string(*a.value);  // argparse keeps the word as a str
    std::string_view t = node_symbol(type) == kinds().identifier ? text(type) : std::string_view();
    if (!bindings_of(t, region_of(type)).empty()) return Value::unknown();  // not the builtin
    if (t == "str") return Value::string(*a.value);
    if (t == "int" || t == "float") return parse_number(*a.value, t == "int").value_or(Value::unknown());
    return Value::unknown();  // a converter of the script's (`str2bool`), `bool`
  };
  std::optional<Value> agreed;
  for (const LaunchOfScript& launch : launches) {
    if (launch.arguments_opaque || launch.unread) return Value::unknown();
    Value v = fallback;
    for (const LaunchOfScript::Argument& a : launch.arguments) {
      const CallSite* hit = nullptr;
      bool prefix = false;  // `--batch` for `--batch-size` (argparse's allow_abbrev), `-b8` for `-b`
      for (int ci : it->second) {
        for (const std::string& opt : option_strings(*this, calls_[ci])) {
          if (a.written == opt) hit = &calls_[ci];
          else if (opt.starts_with(a.written) && a.written.starts_with("--") && a.written.size() > 2) prefix = true;
          else if (!opt.starts_with("--") && a.written.size() > opt.size() && a.written.starts_with(opt)) prefix = true;
        }
      }
      if (hit != nullptr) {
        v = converted(*hit, a);
      } else if (prefix) {
        // an abbreviation, unless it is exactly another option of the file (`--lr` beside `--lr-decay`)
        bool exact_elsewhere = false;
        for (const auto& [dest, calls] : argparse_)
          for (int ci : calls)
            for (const std::string& opt : option_strings(*this, calls_[ci])) exact_elsewhere |= opt == a.written;
        if (!exact_elsewhere) v = Value::unknown();
      }
    }
    if (!v.known()) return Value::unknown();
    if (agreed && (agreed->kind != v.kind || agreed->i != v.i || agreed->f != v.f || agreed->s != v.s))
      return Value::unknown();
    agreed = v;
  }
  return agreed ? *agreed : Value::unknown();
}

bool SemanticModel::gives_option(const LaunchOfScript& launch, TSNode expr) const {
  const Kinds& k = kinds();
  if (node_symbol(expr) != k.attribute) return false;
  TSNode object = field(expr, k.f_object);
  if (node_symbol(object) != k.identifier || !is_args_like_name(text(object))) return false;
  if (!bindings_of(path_of(expr), region_of(expr)).empty()) return false;  // assigned in the file
  auto it = argparse_.find(std::string(text(field(expr, k.f_attribute))));
  if (it == argparse_.end()) return false;
  for (const LaunchOfScript::Argument& a : launch.arguments)
    for (int ci : it->second)
      for (const std::string& opt : option_strings(*this, calls_[ci]))
        if (a.written == opt) return true;
  return false;
}

const LaunchOfScript* SemanticModel::launch_giving(TSNode expr) const {
  for (const LaunchOfScript& launch : project().launched_by)
    if (gives_option(launch, expr)) return &launch;
  return nullptr;
}

std::optional<std::int64_t> SemanticModel::launched_world_size() const {
  std::optional<std::int64_t> agreed;
  for (const LaunchOfScript& launch : project().launched_by) {
    if (launch.world_size <= 0 || (agreed && *agreed != launch.world_size)) return std::nullopt;
    agreed = launch.world_size;
  }
  return agreed;
}

bool SemanticModel::several_processes_test(TSNode cond, bool negated) const {
  NodeList operands;
  std::string_view op;
  if (!binary_comparison(cond, operands, op)) return false;
  for (int side = 0; side < 2; ++side) {
    if (!is_world_size_value(operands[side])) continue;
    Value v = value_of(operands[1 - side]);
    if (v.kind != Value::Kind::Int) return false;
    // the world size w on the left: `w op v`; a mirrored operator on the right
    std::string_view o = side == 1 ? mirrored(op) : op;
    // true exactly when w > 1 (`!= 1`, `> 1`, `>= 2`), or exactly when w == 1 (`== 1`, `<= 1`, `< 2`)
    bool several = (o == "!=" && v.i == 1) || (o == ">" && v.i == 1) || (o == ">=" && v.i == 2);
    bool one = (o == "==" && v.i == 1) || (o == "<=" && v.i == 1) || (o == "<" && v.i == 2);
    return negated ? one : several;
  }
  return false;
}

bool SemanticModel::branch_starts_by_exiting(TSNode if_statement) const {
  const Kinds& k = kinds();
  TSNode body = field(if_statement, k.f_consequence);
  TSNode first = node_is_null(body) ? TSNode{} : ts_node_named_child(body, 0);
  while (!node_is_null(first) && node_symbol(first) == k.comment) first = ts_node_next_named_sibling(first);
  if (node_is_null(first)) return false;
  if (node_symbol(first) == k.raise_statement) return true;
  if (node_symbol(first) != k.expression_statement) return false;
  const CallSite* exit = call_at(ts_node_named_child(first, 0));
  if (exit == nullptr) return false;
  std::string_view callee = exit->canonical;
  if (callee.empty() && !node_is_null(exit->callee) && node_symbol(exit->callee) == k.identifier)
    callee = text(exit->callee);  // the builtins exit() and quit()
  return callee == "sys.exit" || callee == "os._exit" || callee == "exit" || callee == "quit";
}

bool SemanticModel::refuses_several_processes() const {
  const Kinds& k = kinds();
  // the statement that a world-size value is tested in: `assert W == 1`, or an
  // `if W != 1:` (`elif`) whose body starts by raising or exiting
  auto refusal = [&](TSNode test) {
    TSNode p = ts_node_parent(test);
    while (!node_is_null(p) && node_symbol(p) == k.parenthesized_expression) {
      test = p;
      p = ts_node_parent(p);
    }
    if (node_is_null(p)) return false;
    TSSymbol ps = node_symbol(p);
    if (ps == k.assert_statement) return ts_node_eq(ts_node_named_child(p, 0), test) && several_processes_test(test, true);
    if ((ps != k.if_statement && ps != k.elif_clause) || !ts_node_eq(field(p, k.f_condition), test)) return false;
    return several_processes_test(test, false) && branch_starts_by_exiting(p);
  };
  for (const CallSite& c : calls_) {
    if (!is_world_size_value(c.node)) continue;
    TSNode test = ts_node_parent(c.node);
    if (!node_is_null(test) && node_symbol(test) == k.comparison_operator && refusal(test)) return true;
  }
  return false;
}

namespace {
// The text a string literal starts with before its first interpolation
// (`f"tcp://127.0.0.1:{port}"` gives "tcp://127.0.0.1:"); empty for anything else.
std::string_view literal_start(const SemanticModel& model, TSNode string) {
  const Kinds& k = kinds();
  if (node_is_null(string) || node_symbol(string) != k.string) return {};
  for (TSNode c : children(string)) {
    TSSymbol s = node_symbol(c);
    if (s == k.string_content) return model.text(c);
    if (s == k.interpolation) return {};
  }
  return {};
}
}  // namespace

bool SemanticModel::pins_master_to_this_machine() const {
  for (const EnvWrite& w : env_writes_) {
    if (w.name != "MASTER_ADDR") continue;
    Value v = value_of(w.value);
    if (v.kind == Value::Kind::Str && (v.s == "localhost" || v.s == "127.0.0.1")) return true;
  }
  // init_process_group's own rendezvous on this machine
  // (`init_method="tcp://127.0.0.1:{}".format(port)`), or a world as large as
  // this machine's GPU count (`world_size=torch.cuda.device_count()`): the
  // group cannot span nodes
  for (const CallSite* c : calls_to("torch.distributed.init_process_group")) {
    TSNode method = argument(*c, "init_method", 1);
    if (const CallSite* format = node_is_null(method) ? nullptr : call_at(method);
        format != nullptr && format->method == "format")
      method = format->receiver;
    std::string start(literal_start(*this, method));
    if (Value v = value_of(method); v.kind == Value::Kind::Str) start = v.s;
    for (std::string_view local : {"tcp://127.0.0.1:", "tcp://localhost:"})
      if (start.rfind(local, 0) == 0) return true;
    TSNode world = argument(*c, "world_size", 2);
    const CallSite* count = node_is_null(world) ? nullptr : call_at(world);
    if (count != nullptr && count->canonical == "torch.cuda.device_count") return true;
  }
  return false;
}

bool SemanticModel::declares_single_process() const {
  if (refuses_several_processes()) return true;
  for (const EnvWrite& w : env_writes_) {
    if (w.name != "WORLD_SIZE" || node_is_null(w.value)) continue;
    // `os.environ.setdefault("WORLD_SIZE", "1")` leaves a launcher's value
    if (const CallSite* c = call_at(w.at); c && c->canonical == "os.environ.setdefault") continue;
    Value v = value_of(w.value);
    if (!((v.kind == Value::Kind::Str && v.s == "1") || (v.kind == Value::Kind::Int && v.i == 1))) continue;
    if (region_of(w.at) == 0) return true;  // the module's own region: no function, loop or branch around it
  }
  return false;
}

Value SemanticModel::argparse_default(const std::string& key, int depth) const {
  // parser-level defaults always win (argparse docs); several of them: unknown
  if (auto sd = argparse_set_defaults_.find(key); sd != argparse_set_defaults_.end()) {
    return sd->second.size() == 1 ? value_rec(sd->second[0], depth + 1) : Value::unknown();
  }
  auto it = argparse_.find(key);
  if (it == argparse_.end()) return Value::unknown();
  // several options may write one dest (`--pin-mem` / `--no-pin-mem`): only an
  // agreed default is known
  std::optional<Value> agreed;
  for (int ci : it->second) {
    const CallSite& add = calls_[ci];
    Value v;
    TSNode def = argument(add, "default");
    TSNode action = argument(add, "action");
    if (!node_is_null(def)) {
      v = value_rec(def, depth + 1);
    } else if (!node_is_null(action)) {
      Value a = value_rec(action, depth + 1);
      if (a.kind == Value::Kind::Str && a.s == "store_true") v = Value::boolean(false);
      else if (a.kind == Value::Kind::Str && a.s == "store_false") v = Value::boolean(true);
    } else {
      v = Value::none();
    }
    if (!v.known()) return v;
    if (agreed && (agreed->kind != v.kind || agreed->i != v.i || agreed->f != v.f || agreed->s != v.s))
      return Value::unknown();
    agreed = v;
  }
  return agreed ? *agreed : Value::unknown();
}

Value SemanticModel::value_rec(TSNode expr, int depth) const {
  if (node_is_null(expr) || depth > kMaxDepth) return Value::unknown();
  // memoised per node: names used many times (`max(a, a, a)`) are resolved
  // once, and a cycle (`a = b; b = a`) reads the in-progress Unknown
  MemoKey key{node_start_byte(expr), node_end_byte(expr), node_symbol(expr), 0};
  auto [it, inserted] = value_memo_.try_emplace(key, Value::unknown());
  if (!inserted) return it->second;
  Value v = value_uncached(expr, depth);
  if (v.kind == Value::Kind::Str && v.s.size() > kMaxStringValue) v = Value::unknown();
  value_memo_[key] = v;
  return v;
}

Value SemanticModel::value_uncached(TSNode expr, int depth) const {
  const Kinds& k = kinds();
  TSSymbol s = node_symbol(expr);
  if (s == k.integer) {
    std::string t(text(expr));
    std::erase(t, '_');
    if (t.empty() || t.back() == 'j' || t.back() == 'J' || t.back() == 'l' || t.back() == 'L') return Value::unknown();
    int base = 10;
    std::size_t skip = 0;
    if (t.size() > 2 && t[0] == '0') {
      char p = static_cast<char>(std::tolower(static_cast<unsigned char>(t[1])));
      if (p == 'x') base = 16, skip = 2;
      else if (p == 'o') base = 8, skip = 2;
      else if (p == 'b') base = 2, skip = 2;
    }
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(t.c_str() + skip, &end, base);
    if (errno != 0 || *end != '\0') return Value::unknown();
    return Value::integer(v);
  }
  if (s == k.float_) {
    std::string t(text(expr));
    std::erase(t, '_');
    if (!t.empty() && (t.back() == 'j' || t.back() == 'J')) return Value::unknown();
    char* end = nullptr;
    double v = std::strtod(t.c_str(), &end);
    if (*end != '\0') return Value::unknown();
    return Value::floating(v);
  }
  if (s == k.true_) return Value::boolean(true);
  if (s == k.false_) return Value::boolean(false);
  if (s == k.none) return Value::none();
  if (s == k.string) {
    std::string out;
    for (TSNode c : children(expr)) {
      TSSymbol cs = node_symbol(c);
      if (cs == k.interpolation) return Value::unknown();
      if (cs == k.string_content) out += text(c);
    }
    return Value::string(std::move(out));
  }
  if (s == k.concatenated_string) {
    std::string out;
    for (TSNode part : children(expr)) {
      Value v = value_rec(part, depth + 1);
      if (v.kind != Value::Kind::Str) return Value::unknown();
      out += v.s;
    }
    return Value::string(std::move(out));
  }
  if (s == k.parenthesized_expression) {
    if (ts_node_named_child_count(expr) != 1) return Value::unknown();
    return value_rec(ts_node_named_child(expr, 0), depth + 1);
  }
  if (s == k.unary_operator) {
    Value v = value_rec(field(expr, k.f_argument), depth + 1);
    std::string_view op = text(field(expr, k.f_operator));
    if (!v.is_number()) return Value::unknown();
    if (op == "-") {
      if (v.kind == Value::Kind::Float) return Value::floating(-v.f);
      return v.i == INT64_MIN ? Value::unknown() : Value::integer(-v.i);
    }
    if (op == "+") return v.kind == Value::Kind::Bool ? Value::integer(v.i) : v;
    return Value::unknown();
  }
  if (s == k.not_operator) {
    Value v = value_rec(ts_node_named_child(expr, 0), depth + 1);
    if (!v.known()) return v;
    return Value::boolean(!v.truthy());
  }
  if (s == k.binary_operator) {
    Value l = value_rec(field(expr, k.f_left), depth + 1);
    Value r = value_rec(field(expr, k.f_right), depth + 1);
    std::string_view op = text(field(expr, k.f_operator));
    if (l.kind == Value::Kind::Str && r.kind == Value::Kind::Str && op == "+") return Value::string(l.s + r.s);
    if (!l.is_number() || !r.is_number()) return Value::unknown();
    bool ints = l.kind != Value::Kind::Float && r.kind != Value::Kind::Float;
    if (ints) {
      // Python integers do not overflow; past 64 bits the value is Unknown here
      std::int64_t a = l.i, b = r.i, out = 0;
      if (op == "+") return __builtin_add_overflow(a, b, &out) ? Value::unknown() : Value::integer(out);
      if (op == "-") return __builtin_sub_overflow(a, b, &out) ? Value::unknown() : Value::integer(out);
      if (op == "*") return __builtin_mul_overflow(a, b, &out) ? Value::unknown() : Value::integer(out);
      if ((op == "//" || op == "%") && (b == 0 || (b == -1 && a == INT64_MIN))) return Value::unknown();
      if (op == "//") return Value::integer(a / b - ((a % b != 0) && ((a < 0) != (b < 0))));
      if (op == "%") return Value::integer(((a % b) + b) % b);
      if (op == "/" && b != 0) return Value::floating(static_cast<double>(a) / static_cast<double>(b));
      return Value::unknown();
    }
    double a = l.as_double(), b = r.as_double();
    if (op == "+") return Value::floating(a + b);
    if (op == "-") return Value::floating(a - b);
    if (op == "*") return Value::floating(a * b);
    if (op == "/" && b != 0) return Value::floating(a / b);
    if (op == "//" && b != 0) return Value::floating(std::floor(a / b));
    return Value::unknown();
  }
  if (s == k.conditional_expression) {
    // `a if cond else b`: children are a, cond, b
    if (ts_node_named_child_count(expr) != 3) return Value::unknown();
    Value c = value_rec(ts_node_named_child(expr, 1), depth + 1);
    Value a = value_rec(ts_node_named_child(expr, 0), depth + 1);
    Value b = value_rec(ts_node_named_child(expr, 2), depth + 1);
    if (c.known()) return c.truthy() ? a : b;
    if (a.known() && b.known() && a.kind == b.kind && a.i == b.i && a.f == b.f && a.s == b.s) return a;
    return Value::unknown();
  }
  if ((s == k.call || s == k.subscript) && !project().launched_by.empty()) {
    // the world size every launch of this file sets (WORLD_SIZE, which torchrun exports)
    if (std::optional<std::int64_t> world = launched_world_size()) {
      const CallSite* c = s == k.call ? call_at(expr) : nullptr;
      if (c != nullptr && c->canonical == "torch.distributed.get_world_size" &&
          node_is_null(argument(*c, "group", 0)))
        return Value::integer(*world);
      if ((s == k.subscript || (c != nullptr && c->method != "int" && c->method != "str")) &&
          env_var_read(expr) == "WORLD_SIZE")
        return Value::string(std::to_string(*world));
    }
  }
  if (s == k.call) {
    TSNode callee = field(expr, k.f_function);
    if (node_is_null(callee) || node_symbol(callee) != k.identifier) return Value::unknown();
    std::string_view fn = text(callee);
    if (!bindings_of(fn, region_of(expr)).empty()) return Value::unknown();  // shadowed builtin
    const CallSite* call = call_at(expr);
    if (!call || has_unpacked_arguments(*call)) return Value::unknown();
    int n = positional_count(*call);
    if ((fn == "int" || fn == "float" || fn == "str" || fn == "bool") && n == 1) {
      Value v = value_rec(argument(*call, "", 0), depth + 1);
      if (!v.known()) return v;
      if (fn == "int" && v.is_number()) {
        if (v.kind != Value::Kind::Float) return Value::integer(v.i);
        if (!(v.f > -9.2e18 && v.f < 9.2e18)) return Value::unknown();  // out of range, inf or nan
        return Value::integer(static_cast<std::int64_t>(v.f));
      }
      if (fn == "int" && v.kind == Value::Kind::Str) {
        char* end = nullptr;
        errno = 0;
        long long x = std::strtoll(v.s.c_str(), &end, 10);
        return (!v.s.empty() && *end == '\0' && errno == 0) ? Value::integer(x) : Value::unknown();
      }
      if (fn == "float" && v.is_number()) return Value::floating(v.as_double());
      if (fn == "bool") return Value::boolean(v.truthy());
      if (fn == "str" && v.kind == Value::Kind::Str) return v;
      return Value::unknown();
    }
    if ((fn == "min" || fn == "max") && n >= 2) {
      Value best;
      for (int i = 0; i < n; ++i) {
        Value v = value_rec(argument(*call, "", i), depth + 1);
        if (!v.is_number()) return Value::unknown();
        if (!best.known() || (fn == "min" ? v.as_double() < best.as_double() : v.as_double() > best.as_double()))
          best = v;
      }
      return best;
    }
    return Value::unknown();
  }
  if (s == k.identifier || s == k.attribute) {
    std::string path = path_of(expr);
    if (path.empty()) return Value::unknown();
    auto bs = bindings_of(path, region_of(expr));
    if (!bs.empty()) {
      if (bs.size() != 1 || bs[0]->kind != Binding::Kind::Assign || node_is_null(bs[0]->value)) return Value::unknown();
      if (node_eq(bs[0]->target, expr)) return Value::unknown();
      // An instance attribute read in one method and written in another
      // (`self.num_workers = 0` in __init__): the object's state between the
      // calls, which a subclass, a caller holding the object or a config
      // loader may set too (a base class's placeholder that its YAML-driven
      // subclass fills in). Unknown; within one method the write decides.
      if (path.starts_with("self.") && bs[0]->scope != regions_[region_of(expr)].scope) return Value::unknown();
      return value_rec(bs[0]->value, depth + 1);
    }
    if (s == k.attribute) {
      TSNode object = field(expr, k.f_object);
      if (node_symbol(object) == k.identifier && is_args_like_name(text(object))) {
        std::string_view dest = text(field(expr, k.f_attribute));
        if (defines_option(dest)) return argparse_value(dest, depth);
        // no such option here: a parameter that callers elsewhere fill with their command line
        if (std::optional<std::int64_t> v = command_line_parameter(object, dest)) return Value::integer(*v);
        return Value::unknown();
      }
    }
    return Value::unknown();
  }
  return Value::unknown();
}

bool SemanticModel::defines_option(std::string_view dest) const {
  std::string key(dest);
  return argparse_.find(key) != argparse_.end() || argparse_set_defaults_.find(key) != argparse_set_defaults_.end();
}

std::optional<std::int64_t> SemanticModel::command_line_parameter(TSNode object, std::string_view dest) const {
  const auto& given = project().command_line_parameters;
  if (given.empty() || node_symbol(object) != kinds().identifier) return std::nullopt;
  int f = top_level_function_of(object);
  if (f < 0) return std::nullopt;
  // the parameter itself, never rebound in the function
  BindingList bs = bindings_of(text(object), region_of(object));
  if (bs.size() != 1 || bs[0]->kind != Binding::Kind::Parameter || bs[0]->scope != functions_[f].region)
    return std::nullopt;
  auto function = given.find(functions_[f].name);
  if (function == given.end()) return std::nullopt;
  auto parameter = function->second.find(text(object));
  if (parameter == function->second.end()) return std::nullopt;
  auto value = parameter->second.find(dest);
  if (value == parameter->second.end()) return std::nullopt;
  return value->second;
}

bool SemanticModel::is_command_line(TSNode expr) const {
  return !node_is_null(expr) && node_symbol(expr) == kinds().identifier && is_args_like_name(text(expr)) &&
         !argparse_.empty();
}

ProjectFacts::OptionValues SemanticModel::launched_command_line() const {
  ProjectFacts::OptionValues out;
  const std::vector<LaunchOfScript>& launches = project().launched_by;
  if (launches.empty()) return out;
  for (const LaunchOfScript& l : launches)
    if (l.unread || l.arguments_opaque) return out;
  for (std::string_view dest : argparse_destinations()) {
    // an option the file sets in code after parsing (`args.lr = ...`) is not the launch's
    bool assigned = false;
    for (std::string_view holder : kArgsLikeNames)
      if (!assigned) assigned = !bindings_of(std::string(holder) + "." + std::string(dest), 0).empty();
    if (assigned) continue;
    Value v = argparse_value(dest, 0);
    if (v.kind == Value::Kind::Int || v.kind == Value::Kind::Bool) out.emplace(std::string(dest), v.i);
  }
  return out;
}

Value SemanticModel::launched_value(TSNode expr) const { return launched_rec(expr, 0); }

Value SemanticModel::launched_rec(TSNode expr, int depth) const {
  const Kinds& k = kinds();
  if (node_is_null(expr) || depth > kMaxDepth) return Value::unknown();
  TSSymbol s = node_symbol(expr);
  if (s == k.parenthesized_expression) return launched_rec(parenthesized_inner(expr), depth + 1);
  if (s == k.integer) return value_of(expr);
  if (s == k.identifier) {
    BindingList bs = bindings_of(text(expr), region_of(expr));
    if (bs.size() != 1 || bs[0]->kind != Binding::Kind::Assign || node_is_null(bs[0]->value) ||
        node_eq(bs[0]->target, expr))
      return Value::unknown();
    return launched_rec(bs[0]->value, depth + 1);
  }
  if (s != k.attribute) return Value::unknown();
  TSNode object = field(expr, k.f_object);
  if (node_symbol(object) != k.identifier || !is_args_like_name(text(object))) return Value::unknown();
  if (!bindings_of(path_of(expr), region_of(expr)).empty()) return Value::unknown();  // set in code
  std::string_view dest = text(field(expr, k.f_attribute));
  if (defines_option(dest))  // this file's option: only where a launch script starts the file
    return project().launched_by.empty() ? Value::unknown() : argparse_value(dest, depth);
  if (std::optional<std::int64_t> v = command_line_parameter(object, dest)) return Value::integer(*v);
  return Value::unknown();
}

bool SemanticModel::environ_or_copy(TSNode expr) const {
  const Kinds& k = kinds();
  if (canonical_name(expr) == "os.environ") return true;
  if (node_symbol(expr) != k.identifier) return false;
  TSNode bound = single_assignment(expr);
  if (node_is_null(bound)) return false;
  bool copy = false;
  if (node_symbol(bound) == k.dictionary_comprehension) {
    TSNode pair = ts_node_named_child(bound, 0);
    if (node_is_null(pair) || node_symbol(pair) != k.pair) return false;
    TSNode key = ts_node_child_by_field_name(pair, "key", 3);
    TSNode value = ts_node_child_by_field_name(pair, "value", 5);
    copy = !node_is_null(key) && !node_is_null(value) && node_symbol(key) == k.identifier &&
           node_symbol(value) == k.subscript && canonical_name(field(value, k.f_value)) == "os.environ" &&
           text(field(value, k.f_subscript)) == text(key);
  } else if (const CallSite* c = node_symbol(bound) == k.call ? call_at(bound) : nullptr) {
    copy = c->canonical == "os.environ.copy" ||
           (c->method == "dict" && node_is_null(c->receiver) && positional_count(*c) == 1 &&
            canonical_name(argument(*c, "", 0)) == "os.environ");
  }
  if (!copy) return false;
  // a copy written to afterwards (`env["RANK"] = env["LOCAL_RANK"]`,
  // `env.update(...)`) holds what the script put there, not the environment
  std::string_view name = text(expr);
  for (const auto& [sub, value] : name_subscript_writes_)
    if (text(field(sub, k.f_value)) == name) return false;
  for (std::string_view method : {"update", "setdefault", "pop", "__setitem__", "clear"})
    for (const CallSite* c : calls_named(method))
      if (!node_is_null(c->receiver) && node_symbol(c->receiver) == k.identifier && text(c->receiver) == name)
        return false;
  return true;
}

bool SemanticModel::reads_env_var(std::string_view name) const {
  for (const CallSite& c : calls())
    if ((c.canonical == "os.environ.get" || c.canonical == "os.getenv") && env_var_read(c.node) == name) return true;
  std::string subscript = "environ[\"" + std::string(name) + "\"]";
  if (mentions_in_code(subscript)) return true;
  subscript = "environ['" + std::string(name) + "']";
  return mentions_in_code(subscript);
}

std::string SemanticModel::env_var_read(TSNode expr) const {
  const Kinds& k = kinds();
  for (int guard = 0; guard < 4 && !node_is_null(expr); ++guard) {
    TSSymbol s = node_symbol(expr);
    if (s == k.subscript) {
      if (!environ_or_copy(field(expr, k.f_value))) return {};
      Value v = value_of(field(expr, k.f_subscript));
      return v.kind == Value::Kind::Str ? v.s : std::string();
    }
    if (s != k.call) return {};
    const CallSite* c = call_at(expr);
    if (!c) return {};
    if (c->canonical == "os.environ.get" || c->canonical == "os.getenv" ||
        (c->method == "get" && !node_is_null(c->receiver) && environ_or_copy(c->receiver))) {
      Value v = value_of(argument(*c, "key", 0));
      return v.kind == Value::Kind::Str ? v.s : std::string();
    }
    if (c->method == "int" || c->method == "str") {
      expr = argument(*c, "", 0);
      continue;
    }
    return {};
  }
  return {};
}

std::vector<std::string_view> SemanticModel::argparse_destinations() const {
  std::vector<std::string_view> out;
  out.reserve(argparse_.size());
  for (const auto& [dest, calls] : argparse_) out.push_back(dest);
  return out;
}

const CallSite* SemanticModel::argparse_definition(std::string_view dest) const {
  auto it = argparse_.find(dest);
  if (it == argparse_.end() || it->second.empty()) return nullptr;
  return &calls_[static_cast<std::size_t>(it->second.front())];
}

}  // namespace ddplint
