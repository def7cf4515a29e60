// The launch model (linter/launch_model.hpp): one walk over a tree-sitter-bash
// tree records assignments, commands and comments; then variables are
// resolved and each command is read as a launch (wrappers, launcher, options,
// script, script options).
#include "linter/launch_model.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <unordered_map>
#include <utility>

namespace ddplint {

std::optional<std::int64_t> parse_count(std::string_view text) {
  if (text.empty() || text.size() > 9) return std::nullopt;
  std::int64_t n = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  return n;
}

const LaunchOption* Launch::option(std::string_view name) const {
  const LaunchOption* found = nullptr;
  for (const LaunchOption& o : options)
    if (o.name == name) found = &o;  // the last one wins, as in argparse
  return found;
}

const LaunchOption* Launch::wrapper_option(std::initializer_list<std::string_view> names) const {
  const LaunchOption* found = nullptr;
  for (const LaunchOption& o : wrapper_options)
    for (std::string_view n : names)
      if (o.name == n) found = &o;
  return found;
}

namespace {

std::string_view kind(TSNode n) { return ts_node_type(n); }
std::uint32_t start_of(TSNode n) { return ts_node_start_byte(n); }
std::uint32_t end_of(TSNode n) { return ts_node_end_byte(n); }

std::string_view basename(std::string_view w) {
  std::size_t slash = w.rfind('/');
  return slash == std::string_view::npos ? w : w.substr(slash + 1);
}

// python, python3, python3.11 (a path to one too)
bool is_python(std::string_view w) {
  std::string_view b = basename(w);
  if (!b.starts_with("python")) return false;
  for (char c : b.substr(6))
    if (!(c == '.' || (c >= '0' && c <= '9'))) return false;
  return true;
}

std::string normalise(std::string_view option) {
  while (option.starts_with("-")) option.remove_prefix(1);
  std::string out(option);
  std::replace(out.begin(), out.end(), '_', '-');
  return out;
}

bool contains(std::initializer_list<std::string_view> set, std::string_view x) {
  return std::find(set.begin(), set.end(), x) != set.end();
}

// Options of each launcher that take no value (the rest take the next word
// unless written `--x=y`). torch/distributed/run.py and launch.py, accelerate's
// launch command, the deepspeed runner.
bool is_flag(Launcher l, std::string_view name) {
  switch (l) {
    case Launcher::Torchrun:
    case Launcher::TorchDistributedRun:
    case Launcher::TorchDistributedLaunch:
      return contains({"standalone", "m", "module", "no-python", "run-path", "use-env", "virtual-local-rank"}, name);
    case Launcher::Accelerate:
      return contains({"cpu", "multi-gpu", "tpu", "ipex", "use-deepspeed", "use-fsdp", "use-megatron-lm", "use-xpu",
                       "no-python", "m", "module", "debug", "quiet", "q", "same-network", "tpu-use-cluster",
                       "tpu-use-sudo", "downcast-bf16", "enable-cpu-affinity", "dynamo-use-fullgraph",
                       "dynamo-use-dynamic", "h", "help"},
                      name);
    case Launcher::DeepSpeed:
      return contains({"no-python", "module", "no-local-rank", "force-multi", "elastic-training", "bind-cores-to-rank",
                       "no-ssh-check", "no-ssh"},
                      name);
    case Launcher::Python:
      return false;
  }
  return false;
}

// Wrappers that start the command after their own options.
bool is_wrapper(std::string_view b) {
  return contains({"srun", "mpirun", "mpiexec", "nohup", "exec", "time", "stdbuf", "numactl", "taskset", "nice",
                   "ionice", "timeout", "xargs", "command", "sudo"},
                  b);
}

// Every child of `n`, anonymous ones too (the `&&` of a list), in O(children).
NodeList all_children(TSNode n) { return children(n, false); }

bool is_program_word(std::string_view w) {
  std::string_view b = basename(w);
  return is_python(b) || b == "torchrun" || b == "accelerate" || b == "deepspeed" || b == "bash" || b == "sh" ||
         w.ends_with(".py");
}

}  // namespace

struct LaunchBuilder {
  LaunchModel& m;
  const SourceFile& source;
  std::string_view text;

  struct Assignment {
    std::string name;
    TSNode value{};  // null node: no value (`export X`)
    bool has_value = false;
    EnvSetting::Scope scope = EnvSetting::Scope::Shell;
    std::uint32_t start = 0, end = 0;
    bool conditional = false;
    bool unknown = false;  // unset, read, or made by a command: its value is not known
  };
  struct Command {
    TSNode node;
    bool conditional;
    bool in_function;
  };
  std::vector<Assignment> assignments;  // statement-level and declaration assignments, in file order
  std::vector<Command> commands;
  bool seen_statement = false;

  std::string_view node_text(TSNode n) const { return text.substr(start_of(n), end_of(n) - start_of(n)); }

  // --- pass 1: the walk ----------------------------------------------------
  void walk(TSNode root) {
    struct Item {
      TSNode node;
      bool conditional;
      int depth;
      bool in_function;
    };
    std::vector<Item> stack{{root, false, 0, false}};
    while (!stack.empty()) {
      Item it = stack.back();
      stack.pop_back();
      TSNode n = it.node;
      std::string_view k = kind(n);
      if (k == "comment") {
        m.comments_.emplace_back(start_of(n), end_of(n));
        if (!seen_statement) header_comment(n);
        continue;
      }
      if (it.depth == 1 && !seen_statement && ts_node_is_named(n)) {
        seen_statement = true;
        m.header_end_ = start_of(n);
      }
      if (it.depth > 400) continue;  // hostile nesting: the rest is unknown
      if (k == "command") {
        commands.push_back({n, it.conditional, it.in_function});
        // command substitutions inside its words are not looked into
        continue;
      }
      if (k == "variable_assignment") {
        add_assignment(n, EnvSetting::Scope::Shell, it.conditional);
        continue;
      }
      if (k == "declaration_command") {
        declaration(n, it.conditional);
        continue;
      }
      if (k == "unset_command") {  // `unset X`: X's value is no longer the one set before
        for (TSNode c : all_children(n))
          if (kind(c) == "variable_name" || kind(c) == "word") unset(c, it.conditional);
        continue;
      }
      // a subshell's settings do not leak out of it: for what follows, they are
      // as unknown as a guarded setting
      bool child_conditional = it.conditional || k == "if_statement" || k == "case_statement" ||
                               k == "for_statement" || k == "c_style_for_statement" || k == "while_statement" ||
                               k == "function_definition" || k == "subshell";
      bool child_in_function = it.in_function || k == "function_definition";
      // children pushed in reverse so that they pop in file order
      bool after_or = false;
      std::vector<Item> items;
      for (TSNode c : all_children(n)) {
        // `a && b`, `a || b`: b runs only on some paths (`[ -n "$X" ] && export ...` is a guard)
        if (k == "list" && !ts_node_is_named(c) && (node_text(c) == "||" || node_text(c) == "&&")) after_or = true;
        items.push_back({c, child_conditional || after_or, it.depth + 1, child_in_function});
      }
      for (auto c = items.rbegin(); c != items.rend(); ++c) stack.push_back(*c);
    }
    if (!seen_statement) m.header_end_ = static_cast<std::uint32_t>(text.size());
  }

  void add_assignment(TSNode n, EnvSetting::Scope scope, bool conditional) {
    TSNode name = ts_node_child_by_field_name(n, "name", 4);
    if (ts_node_is_null(name) || kind(name) != "variable_name") return;
    Assignment a;
    a.name = std::string(node_text(name));
    a.value = ts_node_child_by_field_name(n, "value", 5);
    a.has_value = true;
    a.scope = scope;
    a.start = start_of(n);
    a.end = end_of(n);
    a.conditional = conditional;
    assignments.push_back(std::move(a));
  }

  // A setting whose value is not known from here on (`unset X`, `read X`,
  // `env -u X`): recorded as an unconditional setting of unknown value.
  void unset(TSNode name, bool conditional) {
    Assignment a;
    a.name = std::string(node_text(name));
    a.scope = EnvSetting::Scope::Exported;
    a.start = start_of(name);
    a.end = end_of(name);
    a.conditional = conditional;
    a.unknown = true;
    assignments.push_back(std::move(a));
  }

  void declaration(TSNode n, bool conditional) {
    NodeList kids = all_children(n);
    if (kids.empty()) return;
    std::string_view keyword = node_text(kids[0]);
    bool exported = keyword == "export";
    bool unexport = false;
    for (std::size_t i = 1; i < kids.size(); ++i) {
      std::string_view w = node_text(kids[i]);
      if (!w.starts_with("-")) continue;
      if ((keyword == "declare" || keyword == "typeset") && w.find('x') != std::string_view::npos) exported = true;
      if (keyword == "export" && w.find('n') != std::string_view::npos) unexport = true;  // `export -n X`
    }
    if (unexport) exported = false;
    EnvSetting::Scope scope = exported ? EnvSetting::Scope::Exported : EnvSetting::Scope::Shell;
    for (std::size_t i = 1; i < kids.size(); ++i) {
      TSNode c = kids[i];
      if (kind(c) == "variable_assignment") {
        add_assignment(c, scope, conditional);
      } else if (kind(c) == "variable_name" && exported) {
        // `export X`: the shell variable X, from here on in the environment
        Assignment a;
        a.name = std::string(node_text(c));
        a.scope = scope;
        a.start = start_of(c);
        a.end = end_of(c);
        a.conditional = conditional;
        assignments.push_back(std::move(a));
      }
    }
  }

  void header_comment(TSNode n) {
    std::string_view c = node_text(n);
    while (!c.empty() && (c.back() == '\r' || c.back() == ' ')) c.remove_suffix(1);  // CRLF files
    if (!c.starts_with("#SBATCH")) return;
    std::size_t at = 7;
    if (at < c.size() && c[at] != ' ' && c[at] != '\t') return;
    // words after #SBATCH up to a further `#`
    std::vector<std::pair<std::size_t, std::size_t>> words;
    while (at < c.size()) {
      while (at < c.size() && (c[at] == ' ' || c[at] == '\t')) ++at;
      if (at >= c.size() || c[at] == '#') break;
      std::size_t j = at;
      while (j < c.size() && c[j] != ' ' && c[j] != '\t') ++j;
      words.emplace_back(at, j);
      at = j;
    }
    std::uint32_t base = start_of(n);
    for (std::size_t i = 0; i < words.size(); ++i) {
      std::string_view w = c.substr(words[i].first, words[i].second - words[i].first);
      if (!w.starts_with("-")) continue;
      LaunchOption o;
      o.start = base + static_cast<std::uint32_t>(words[i].first);
      o.end = base + static_cast<std::uint32_t>(words[i].second);
      auto value_word = [&](std::size_t from, std::size_t to) {
        ShellWord v;
        v.start = base + static_cast<std::uint32_t>(from);
        v.end = base + static_cast<std::uint32_t>(to);
        v.value = std::string(c.substr(from, to - from));
        return v;
      };
      if (w.starts_with("--")) {
        std::size_t eq = w.find('=');
        o.written = std::string(w.substr(0, eq));
        o.name = normalise(o.written);
        if (eq != std::string_view::npos) {
          o.value = value_word(words[i].first + eq + 1, words[i].second);
        } else if (i + 1 < words.size() && c[words[i + 1].first] != '-') {
          o.value = value_word(words[i + 1].first, words[i + 1].second);
          o.end = base + static_cast<std::uint32_t>(words[i + 1].second);
          ++i;
        }
      } else {  // -N 2, -N2
        o.written = std::string(w.substr(0, 2));
        o.name = std::string(w.substr(1, 1));
        if (w.size() > 2) {
          o.value = value_word(words[i].first + (w[2] == '=' ? 3 : 2), words[i].second);
        } else if (i + 1 < words.size() && c[words[i + 1].first] != '-') {
          o.value = value_word(words[i + 1].first, words[i + 1].second);
          o.end = base + static_cast<std::uint32_t>(words[i + 1].second);
          ++i;
        }
      }
      m.sbatch_.push_back(SbatchDirective{std::move(o)});
    }
  }

  // --- values ----------------------------------------------------------------
  // The value of variable `name` read at byte `at`: its one unconditional
  // assignment in the file, made before `at`, with a known value.
  // An `unset`, `read`, a sourced file or an `eval` before `at` makes it unknown.
  // Values longer than kMaxValue are unknown (`A1="$A0$A0"` doubling), and
  // each assignment's value is worked out once.
  static constexpr std::size_t kMaxValue = 4096;
  std::unordered_map<std::string, std::vector<std::size_t>> by_name;  // name -> assignments, in order
  std::vector<std::optional<std::optional<std::string>>> memo;         // per assignment
  std::vector<std::uint32_t> opaque;  // `source`, `.`, `eval`: may set anything

  std::optional<std::string> variable(std::string_view name, std::uint32_t at, int depth) {
    if (by_name.empty() && !assignments.empty()) {
      for (std::size_t i = 0; i < assignments.size(); ++i) by_name[assignments[i].name].push_back(i);
      memo.assign(assignments.size(), std::nullopt);
    }
    auto it = by_name.find(std::string(name));
    if (it == by_name.end()) return std::nullopt;
    std::size_t only = SIZE_MAX;
    int count = 0;
    for (std::size_t i : it->second) {
      const Assignment& a = assignments[i];
      if (a.unknown && a.start < at) return std::nullopt;
      if (!a.has_value) continue;
      ++count;
      only = i;
    }
    if (count != 1) return std::nullopt;
    const Assignment& a = assignments[only];
    if (a.conditional || a.start >= at) return std::nullopt;
    for (std::uint32_t o : opaque)
      if (o > a.start && o < at) return std::nullopt;
    if (memo[only]) return *memo[only];
    memo[only] = std::optional<std::string>();  // (a cycle reads as unknown)
    std::optional<std::string> v = ts_node_is_null(a.value) ? std::optional<std::string>(std::string())  // `X=`
                                                            : value(a.value, a.start, depth + 1);
    if (v && v->size() > kMaxValue) v.reset();
    memo[only] = v;
    return v;
  }

  std::optional<std::string> value(TSNode n, std::uint32_t at, int depth = 0) {
    if (depth > 16) return std::nullopt;
    std::string_view k = kind(n);
    if (k == "word" || k == "number") {
      std::string_view t = node_text(n);
      std::string out;
      for (std::size_t i = 0; i < t.size(); ++i) {
        if (t[i] == '\\' && i + 1 < t.size()) ++i;
        else if (t[i] == '*' || t[i] == '?' || t[i] == '[' || t[i] == '{') return std::nullopt;  // globs
        out += t[i];
      }
      return out;
    }
    if (k == "raw_string") {
      std::string_view t = node_text(n);
      if (t.size() < 2) return std::nullopt;
      return std::string(t.substr(1, t.size() - 2));
    }
    if (k == "string") {
      std::string out;
      for (TSNode c : all_children(n)) {
        if (!ts_node_is_named(c)) continue;  // the quotes
        if (kind(c) == "string_content") {
          out += node_text(c);
          continue;
        }
        std::optional<std::string> part = value(c, at, depth + 1);
        if (!part) return std::nullopt;
        out += *part;
      }
      if (out.size() > kMaxValue) return std::nullopt;
      return out;
    }
    if (k == "simple_expansion" || k == "expansion") {
      // $X or ${X}; ${X:-d}, $1, $@ and other forms depend on the caller
      if (ts_node_named_child_count(n) != 1 || ts_node_child_count(n) != (k == "simple_expansion" ? 2u : 3u))
        return std::nullopt;
      TSNode v = ts_node_named_child(n, 0);
      if (kind(v) != "variable_name") return std::nullopt;
      return variable(node_text(v), at, depth);
    }
    if (k == "concatenation") {
      std::string out;
      for (TSNode c : all_children(n)) {
        std::optional<std::string> part = value(c, at, depth + 1);
        if (!part) return std::nullopt;
        out += *part;
        if (out.size() > kMaxValue) return std::nullopt;
      }
      return out;
    }
    return std::nullopt;
  }

  ShellWord word(TSNode n) {
    ShellWord w;
    w.start = start_of(n);
    w.end = end_of(n);
    w.value = value(n, w.start);
    return w;
  }

  // --- pass 2 ----------------------------------------------------------------
  void settle() {
    // commands that set variables themselves (read, source, eval) first: they decide values after them
    for (const Command& c : commands) builtin(c);
    for (const Assignment& a : assignments) {
      EnvSetting s;
      s.name = a.name;
      s.scope = a.scope;
      s.start = a.start;
      s.end = a.end;
      s.conditional = a.conditional;
      if (a.unknown) {
        s.value = ShellWord{a.start, a.end, std::nullopt};
      } else if (a.has_value) {
        if (ts_node_is_null(a.value)) {
          s.value = ShellWord{a.end, a.end, std::string()};
        } else {
          s.value = word(a.value);
          if (s.value.value) note_scripts(s.value, *s.value.value);  // `CMD="torchrun train.py"`
        }
      } else {  // `export X`: X's value as a shell variable there
        s.value = ShellWord{a.start, a.end, variable(a.name, a.start, 0)};
      }
      m.env_.push_back(std::move(s));
    }
    for (const Command& c : commands) command(c);
    std::sort(m.env_.begin(), m.env_.end(), [](const EnvSetting& a, const EnvSetting& b) { return a.start < b.start; });
    m.opaque_ = opaque;
  }

  // `read X`, `mapfile X` (X unknown from here), `source f`, `. f`, `eval ...` (anything unknown from here).
  void builtin(const Command& c) {
    NodeList kids = all_children(c.node);
    TSNode name{};
    std::size_t at = 0;
    for (; at < kids.size(); ++at)
      if (kind(kids[at]) == "command_name") {
        name = kids[at];
        break;
      }
    if (ts_node_is_null(name)) return;
    std::string_view n = node_text(name);
    if (n == "source" || n == "." || n == "eval") {
      opaque.push_back(end_of(c.node));
      return;
    }
    if (n != "read" && n != "mapfile" && n != "readarray") return;
    for (std::size_t i = at + 1; i < kids.size(); ++i) {
      if (kind(kids[i]) != "word") continue;
      std::string_view w = node_text(kids[i]);
      if (w.starts_with("-")) continue;
      unset(kids[i], c.conditional);
    }
    by_name.clear();  // (assignments changed: the index is made again on first use)
  }

  // The `.py` words of `value` (split at spaces), as words of `at`'s range.
  void note_scripts(const ShellWord& at, const std::string& value) {
    std::size_t i = 0;
    while (i < value.size()) {
      std::size_t s = value.find_first_not_of(" \t\n;&|()'\"", i);
      if (s == std::string::npos) break;
      std::size_t e = value.find_first_of(" \t\n;&|()'\"", s);
      if (e == std::string::npos) e = value.size();
      std::string_view token = std::string_view(value).substr(s, e - s);
      if (token.size() > 3 && token.ends_with(".py") && m.unread_scripts_.size() < 256)
        m.unread_scripts_.push_back(ShellWord{at.start, at.end, std::string(token)});
      i = e;
    }
  }

  void command(const Command& c) {
    Launch l;
    l.start = start_of(c.node);
    l.end = end_of(c.node);
    l.conditional = c.conditional;
    l.in_function = c.in_function;
    TSNode after = ts_node_next_sibling(c.node);
    l.background = !ts_node_is_null(after) && kind(after) == "&";
    std::vector<TSNode> words;
    for (TSNode ch : all_children(c.node)) {
      std::string_view k = kind(ch);
      if (k == "variable_assignment") {
        TSNode name = ts_node_child_by_field_name(ch, "name", 4);
        if (ts_node_is_null(name)) continue;
        EnvSetting s;
        s.name = std::string(node_text(name));
        TSNode v = ts_node_child_by_field_name(ch, "value", 5);
        s.value = ts_node_is_null(v) ? ShellWord{end_of(ch), end_of(ch), std::string()} : word(v);
        s.scope = EnvSetting::Scope::Command;
        s.start = start_of(ch);
        s.end = end_of(ch);
        s.conditional = c.conditional;
        l.env.push_back(s);
      } else if (k == "command_name") {
        words.push_back(ts_node_named_child_count(ch) == 1 ? ts_node_named_child(ch, 0) : ch);
      } else if (ts_node_is_named(ch) && k != "file_redirect" && k != "herestring_redirect" && k != "comment") {
        words.push_back(ch);
      }
    }
    std::vector<ShellWord> w;
    w.reserve(words.size());
    for (TSNode n : words) {
      ShellWord sw = word(n);
      // an unquoted expansion of an empty value (`EXTRA=""`, then `$EXTRA`) is no word at all
      std::string_view raw = text.substr(sw.start, sw.end - sw.start);
      if (sw.value && sw.value->empty() && raw.starts_with("$")) continue;
      w.push_back(std::move(sw));
    }
    bool launch = interpret(l, w);
    // any other word naming a Python file: a launch of it that is not read here
    for (const ShellWord& sw : w)
      if (sw.value && !(launch && l.script && l.script->start == sw.start)) note_scripts(sw, *sw.value);
    for (const EnvSetting& s : l.env) m.env_.push_back(s);
    if (launch) m.launches_.push_back(std::move(l));
  }

  // A `Command` setting of `launch` made by word `at` (`env X=1`, `mpirun -x
  // X=1`, `env -u X`): `value` unset for a removal.
  static void command_setting(Launch& launch, std::string name, const ShellWord& at, std::optional<std::string> value) {
    EnvSetting st;
    st.name = std::move(name);
    st.value = ShellWord{at.start, at.end, std::move(value)};
    st.scope = EnvSetting::Scope::Command;
    st.start = at.start;
    st.end = at.end;
    st.conditional = launch.conditional;
    launch.env.push_back(std::move(st));
  }

  static const std::string* v(const std::vector<ShellWord>& w, std::size_t i) {
    return i < w.size() && w[i].value ? &*w[i].value : nullptr;
  }

  // The word as written (quotes and `$` included).
  std::string_view raw(const ShellWord& w) const { return text.substr(w.start, w.end - w.start); }

  // An option word whose value the file does not fix (`--nproc_per_node=$1`):
  // its name is still known when written out before `=`. Null otherwise.
  std::optional<LaunchOption> partly_known(const ShellWord& w) const {
    std::string_view r = raw(w);
    if (r.starts_with("\"") || r.starts_with("'")) r.remove_prefix(1);  // "--master_addr=$ADDR"
    std::size_t eq = r.find('=');
    if (!r.starts_with("-") || eq == std::string_view::npos) return std::nullopt;
    for (char c : r.substr(0, eq))
      if (!(c == '-' || c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
        return std::nullopt;
    LaunchOption o;
    o.written = std::string(r.substr(0, eq));
    o.name = normalise(o.written);
    ShellWord val = w;
    val.value.reset();
    o.value = std::move(val);
    o.start = w.start;
    o.end = w.end;
    return o;
  }

  // Reads the options from w[i]: `--x=y`, `--x y` (unless a flag), `-x`.
  // Stops at the first word that is not an option (returned), or after `--`.
  std::size_t options(Launcher launcher, const std::vector<ShellWord>& w, std::size_t i,
                      std::vector<LaunchOption>& out, bool wrapper) {
    while (i < w.size()) {
      const std::string* s = v(w, i);
      if (s == nullptr) {
        std::optional<LaunchOption> o = partly_known(w[i]);
        if (!o) {
          // `$RDZV_ARGS`, `"${LAUNCH[@]}"`: may expand to options, or to the script
          std::string_view r = raw(w[i]);
          if (r.starts_with("$") || r.starts_with("\"$")) {
            opaque_options = true;
            ++i;
            continue;
          }
          return i;
        }
        out.push_back(std::move(*o));
        ++i;
        continue;
      }
      if (*s == "--") return i + 1;
      if (!s->starts_with("-") || *s == "-") return i;
      LaunchOption o;
      o.start = w[i].start;
      o.end = w[i].end;
      std::size_t eq = s->find('=');
      o.written = s->substr(0, eq);
      o.name = s->starts_with("--") || o.written.size() == 2 ? normalise(o.written) : normalise(o.written.substr(0, 2));
      if (eq != std::string::npos) {
        ShellWord val = w[i];
        val.value = s->substr(eq + 1);
        o.value = std::move(val);
        ++i;
      } else if (!s->starts_with("--") && s->size() > 2) {  // -N2
        ShellWord val = w[i];
        val.value = s->substr(2);
        o.value = std::move(val);
        ++i;
      } else {
        ++i;
        const std::string* next = v(w, i);
        bool takes_value = wrapper ? !contains({"exclusive", "overlap", "l", "label", "u", "unbuffered", "K",
                                                "kill-on-bad-exit", "v", "verbose", "Q", "quiet"},
                                               o.name)
                                   : !is_flag(launcher, o.name);
        if (takes_value && i < w.size() && (next == nullptr || !next->starts_with("-")) &&
            !(wrapper && next != nullptr && is_program_word(*next)) &&
            !(!wrapper && next != nullptr && next->ends_with(".py") && o.name != "config-file")) {
          o.value = w[i];
          o.end = w[i].end;
          ++i;
        }
      }
      out.push_back(std::move(o));
    }
    return i;
  }

  // The script's options: `--x=y`, `--x y`, `--flag`; positional words skipped.
  void script_options(Launch& l, const std::vector<ShellWord>& w, std::size_t i) const {
    std::vector<LaunchOption>& out = l.script_options;
    while (i < w.size()) {
      const std::string* s = v(w, i);
      if (s == nullptr) {
        if (std::optional<LaunchOption> o = partly_known(w[i])) out.push_back(std::move(*o));
        else l.opaque_script_options = true;  // `"$@"`, `$EXTRA_ARGS`: any options
        ++i;
        continue;
      }
      if (*s == "--") {  // argparse reads every word after it as positional
        if (i + 1 < w.size()) l.positional_script_arguments = true;
        return;
      }
      if (!s->starts_with("-") || *s == "-") {
        l.positional_script_arguments = true;
        ++i;
        continue;
      }
      LaunchOption o;
      o.start = w[i].start;
      o.end = w[i].end;
      std::size_t eq = s->find('=');
      o.written = s->substr(0, eq);
      o.name = normalise(o.written);
      ++i;
      if (eq != std::string::npos) {
        ShellWord val = w[i - 1];
        val.value = s->substr(eq + 1);
        o.value = std::move(val);
      } else if (i < w.size() && (v(w, i) == nullptr || !v(w, i)->starts_with("-") ||
                                  parse_count(v(w, i)->substr(1)).has_value())) {
        o.value = w[i];
        o.end = w[i].end;
        ++i;
      }
      out.push_back(std::move(o));
    }
  }

  bool interpret(Launch& l, const std::vector<ShellWord>& w) {
    std::size_t i = 0;
    for (int hops = 0; hops < 16 && i < w.size(); ++hops) {
      const std::string* s = v(w, i);
      if (s == nullptr) return false;
      std::string_view b = basename(*s);
      if (b == "env") {
        ++i;
        while (const std::string* e = v(w, i)) {
          if (e->starts_with("-")) {
            // `env -u X` / `--unset=X`: X removed from the command's environment
            std::optional<std::string> removed;
            if ((*e == "-u" || *e == "--unset") && v(w, i + 1) != nullptr) removed = *v(w, i + 1);
            else if (e->starts_with("--unset=")) removed = e->substr(8);
            else if (e->starts_with("-u") && e->size() > 2) removed = e->substr(2);
            if (removed) command_setting(l, *removed, w[i], std::nullopt);
            ++i;
            if (*e == "-u" || *e == "--unset" || *e == "-C" || *e == "-S") ++i;
            continue;
          }
          std::size_t eq = e->find('=');
          if (eq == std::string::npos || eq == 0) break;
          command_setting(l, e->substr(0, eq), w[i], e->substr(eq + 1));
          ++i;
        }
        continue;
      }
      if (is_wrapper(b)) {
        l.wrappers.emplace_back(b);
        if (b == "mpirun" || b == "mpiexec") {
          // Open MPI's options are spelled many ways (`-np 4`, `-npernode 4`,
          // `--mca btl ^openib`): the command is the first program word; of
          // the options only `-x NAME=VALUE` (NAME=VALUE in every rank's
          // environment) is read
          std::size_t j = i + 1;
          for (; j < w.size(); ++j) {
            const std::string* o = v(w, j);
            if (o != nullptr && is_program_word(*o)) break;
            if (o == nullptr || (*o != "-x" && *o != "--x") || j + 1 >= w.size()) continue;
            const std::string* kv = v(w, j + 1);
            std::size_t eq = kv == nullptr ? std::string::npos : kv->find('=');
            if (eq == std::string::npos || eq == 0) continue;
            command_setting(l, kv->substr(0, eq), w[j + 1], kv->substr(eq + 1));
          }
          i = j;
          continue;
        }
        i = options(Launcher::Python, w, i + 1, l.wrapper_options, true);
        if (b == "timeout" && v(w, i) != nullptr && !is_program_word(*v(w, i))) ++i;  // timeout DURATION cmd
        continue;
      }
      if (b == "torchrun") {
        l.launcher = Launcher::Torchrun;
        l.launcher_start = w[i].start;
        l.launcher_end = w[i].end;
        return launcher_rest(l, w, i + 1);
      }
      if (b == "accelerate") {
        const std::string* sub = v(w, i + 1);
        if (sub == nullptr || *sub != "launch") return false;
        l.launcher = Launcher::Accelerate;
        l.launcher_start = w[i].start;
        l.launcher_end = w[i + 1].end;
        return launcher_rest(l, w, i + 2);
      }
      if (b == "deepspeed") {
        l.launcher = Launcher::DeepSpeed;
        l.launcher_start = w[i].start;
        l.launcher_end = w[i].end;
        return launcher_rest(l, w, i + 1);
      }
      if (is_python(b)) return python(l, w, i);
      return false;
    }
    return false;
  }

  bool python(Launch& l, const std::vector<ShellWord>& w, std::size_t i) {
    l.launcher_start = w[i].start;
    l.launcher_end = w[i].end;
    ++i;
    while (const std::string* s = v(w, i)) {
      if (!s->starts_with("-") || *s == "-") break;
      if (*s == "-c") return false;  // inline code
      if (*s == "-m" || s->starts_with("-m")) {
        std::size_t mod_at = *s == "-m" ? i + 1 : i;
        const std::string* mod = v(w, mod_at);
        if (mod == nullptr) return false;
        std::string module = *s == "-m" ? *mod : mod->substr(2);
        if (module == "torch.distributed.launch" || module == "torch.distributed.run") {
          l.launcher = module == "torch.distributed.launch" ? Launcher::TorchDistributedLaunch
                                                            : Launcher::TorchDistributedRun;
          l.launcher_end = w[mod_at].end;
          return launcher_rest(l, w, mod_at + 1);
        }
        if (module == "accelerate.commands.launch") {
          l.launcher = Launcher::Accelerate;
          l.launcher_end = w[mod_at].end;
          return launcher_rest(l, w, mod_at + 1);
        }
        l.script = w[mod_at];
        if (*s != "-m") l.script->value = module;
        l.module = true;
        script_options(l, w, mod_at + 1);
        return true;
      }
      if (*s == "-W" || *s == "-X") ++i;
      ++i;
    }
    if (i >= w.size() || v(w, i) == nullptr) return false;  // a REPL, or a script not known here
    l.script = w[i];
    script_options(l, w, i + 1);
    return true;
  }

  bool opaque_options = false;  // set by options(): a word that may expand to options

  bool launcher_rest(Launch& l, const std::vector<ShellWord>& w, std::size_t i) {
    opaque_options = false;
    i = options(l.launcher, w, i, l.options, false);
    l.opaque_options = opaque_options;
    bool module = l.option("m") != nullptr || l.option("module") != nullptr;
    if (i < w.size()) {
      l.script = w[i];
      l.module = module;
      script_options(l, w, i + 1);
    }
    return true;
  }
};

LaunchModel::LaunchModel(const SourceFile& source, const SyntaxTree& tree, const ProjectFacts* project)
    : source_(source), project_(project) {
  if (!tree) return;
  LaunchBuilder b{*this, source, source.text(), {}, {}, false};
  b.walk(tree.root());
  b.settle();
  std::string_view path = source.path();
  if (has_markdown_extension(path.substr(path.rfind('/') == std::string_view::npos ? 0 : path.rfind('/') + 1))) {
    markdown_ = true;
    (void)markdown_shell_view(source.text(), &blocks_);
    header_end_ = 0;  // a comment atop some block is no file header
  }
}

bool LaunchModel::same_block(std::uint32_t a, std::uint32_t b) const {
  if (!markdown_) return true;
  for (const auto& [start, end] : blocks_)
    if (a >= start && a < end) return b >= start && b < end;
  return false;
}

bool LaunchModel::header_reaches(const Launch& launch) const {
  return !markdown_ || sbatch_.empty() || same_block(sbatch_.back().option.start, launch.start);
}

std::string_view LaunchModel::text(std::uint32_t start, std::uint32_t end) const {
  std::string_view t = source_.text();
  if (start > t.size()) return {};
  return t.substr(start, std::min<std::size_t>(end, t.size()) - start);
}

const SbatchDirective* LaunchModel::sbatch_option(std::initializer_list<std::string_view> names) const {
  const SbatchDirective* found = nullptr;
  for (const SbatchDirective& d : sbatch_)
    for (std::string_view n : names)
      if (d.option.name == n) found = &d;
  return found;
}

std::optional<std::string> LaunchModel::env_value(const Launch& launch, std::string_view name) const {
  for (auto s = launch.env.rbegin(); s != launch.env.rend(); ++s)
    if (s->name == name) return s->value.value;
  // in a function, the environment is the caller's, wherever it calls it
  if (launch.in_function) return std::nullopt;
  std::optional<std::string> value;
  std::uint32_t set_at = 0;
  for (const EnvSetting& s : env_) {
    if (s.start >= launch.start) break;
    if (s.name != name || s.scope == EnvSetting::Scope::Command || !same_block(s.start, launch.start)) continue;
    if (s.conditional) return std::nullopt;  // set on some paths only
    if (s.scope == EnvSetting::Scope::Exported) value = s.value.value, set_at = s.start;
    else if (value) value = s.value.value, set_at = s.start;  // a new value of a variable already exported
  }
  // a sourced file or an eval between the setting and the launch may change it
  for (std::uint32_t o : opaque_)
    if (value && o > set_at && o < launch.start) return std::nullopt;
  return value;
}

std::optional<std::int64_t> parse_node_count(std::string_view text) {
  std::size_t colon = text.find(':');
  return parse_count(colon == std::string_view::npos ? text : text.substr(colon + 1));
}

std::optional<std::int64_t> LaunchModel::tasks_per_node(const Launch& l, const LaunchOption** option) const {
  const LaunchOption* found = nullptr;
  if (option != nullptr) *option = nullptr;
  bool srun = false;
  for (const std::string& w : l.wrappers) {
    if (w == "mpirun" || w == "mpiexec") return std::nullopt;
    if (w == "srun") srun = true;
  }
  if (!srun) return 1;
  if (l.wrapper_option({"ntasks", "n"}) != nullptr) return std::nullopt;
  found = l.wrapper_option({"ntasks-per-node", "tasks-per-node"});  // (Slurm's alias)
  if (found == nullptr && header_reaches(l)) {
    if (sbatch_option({"ntasks", "n"}) != nullptr) return std::nullopt;
    if (const SbatchDirective* d = sbatch_option({"ntasks-per-node", "tasks-per-node"})) found = &d->option;
  }
  if (option != nullptr) *option = found;
  if (found == nullptr) return 1;
  if (!found->value || !found->value->value) return std::nullopt;
  return parse_count(*found->value->value);
}

std::optional<LaunchModel::Gpus> LaunchModel::gpus_per_node(const Launch& launch) const {
  if (std::optional<std::string> cvd = env_value(launch, "CUDA_VISIBLE_DEVICES")) {
    // CUDA enumerates the entries up to the first invalid one (`-1` hides every GPU)
    std::int64_t n = 0;
    std::size_t at = 0;
    while (at <= cvd->size()) {
      std::size_t comma = cvd->find(',', at);
      std::string_view entry = std::string_view(*cvd).substr(at, comma == std::string::npos ? std::string::npos : comma - at);
      bool valid = parse_count(entry).has_value() || entry.starts_with("GPU-") || entry.starts_with("MIG-");
      if (!valid) break;
      ++n;
      if (comma == std::string::npos) break;
      at = comma + 1;
    }
    return Gpus{n, "CUDA_VISIBLE_DEVICES=" + *cvd};
  }
  if (!header_reaches(launch)) return std::nullopt;
  auto last_count = [](std::string_view v) -> std::optional<std::int64_t> {
    std::size_t colon = v.rfind(':');
    return parse_count(colon == std::string_view::npos ? v : v.substr(colon + 1));
  };
  // `[type:]N` entries separated by commas (`volta:3,kepler:1`): their sum
  auto typed_counts = [&](std::string_view v) -> std::optional<std::int64_t> {
    std::int64_t sum = 0;
    std::size_t at = 0;
    while (at <= v.size()) {
      std::size_t comma = v.find(',', at);
      std::optional<std::int64_t> n =
          last_count(v.substr(at, comma == std::string_view::npos ? std::string_view::npos : comma - at));
      if (!n) return std::nullopt;
      sum += *n;
      if (comma == std::string_view::npos) break;
      at = comma + 1;
    }
    return sum;
  };
  if (const SbatchDirective* d = sbatch_option({"gpus-per-node"}); d && d->option.value && d->option.value->value)
    if (std::optional<std::int64_t> n = typed_counts(*d->option.value->value))
      return Gpus{*n, "#SBATCH --gpus-per-node=" + *d->option.value->value};
  if (const SbatchDirective* d = sbatch_option({"gres"}); d && d->option.value && d->option.value->value) {
    std::string_view g = *d->option.value->value;
    // gpu:4, gpu:a100:4, gpu:4,mps:100, gpu:volta:2,gpu:kepler:2 (the gpu entries' sum)
    std::int64_t sum = 0;
    bool any = false, known = true;
    std::size_t at = 0;
    while (at < g.size()) {
      std::size_t comma = g.find(',', at);
      std::string_view entry = g.substr(at, comma == std::string_view::npos ? std::string_view::npos : comma - at);
      if (entry == "gpu" || entry.starts_with("gpu:")) {
        any = true;
        std::optional<std::int64_t> n = entry == "gpu" ? std::optional<std::int64_t>(1) : last_count(entry);
        if (n) sum += *n;
        else known = false;  // gpu:a100 alone: one GPU of that type, but a typo would read the same
      }
      if (comma == std::string_view::npos) break;
      at = comma + 1;
    }
    if (any && known) return Gpus{sum, "#SBATCH --gres=" + std::string(g)};
  }
  if (const SbatchDirective* d = sbatch_option({"gpus", "G"}); d && d->option.value && d->option.value->value) {
    const SbatchDirective* nodes = sbatch_option({"nodes", "N"});
    bool one_node = nodes == nullptr || (nodes->option.value && nodes->option.value->value &&
                                         parse_count(*nodes->option.value->value) == 1);
    if (one_node)
      if (std::optional<std::int64_t> n = last_count(*d->option.value->value))
        return Gpus{*n, "#SBATCH " + d->option.written + "=" + *d->option.value->value};
  }
  return std::nullopt;
}

namespace {
// True when an option of `l`'s launcher abbreviates `full` (torchrun parses
// with argparse, which takes `--nproc 8` for --nproc-per-node).
bool abbreviates(const Launch& l, std::string_view full) {
  for (const LaunchOption& o : l.options)
    if (o.name.size() < full.size() && full.starts_with(o.name)) return true;
  return false;
}
}  // namespace

std::optional<std::int64_t> LaunchModel::processes_per_node(const Launch& l) const {
  if (l.opaque_options) return std::nullopt;  // `$ARGS` may hold another count
  std::optional<std::int64_t> tasks = tasks_per_node(l);
  if (!tasks || *tasks == 0) return std::nullopt;
  // srun may give each task GPUs of its own: then its processes do not share the node's
  if (*tasks > 1 && (l.wrapper_option({"gpus-per-task", "gpu-bind", "gres-flags"}) != nullptr ||
                     (header_reaches(l) && sbatch_option({"gpus-per-task", "gpu-bind"}) != nullptr)))
    return std::nullopt;
  if (l.launcher == Launcher::Python) {
    if (*tasks != 1) return std::nullopt;  // each task may see only its own GPU (srun --gpus-per-task, --gpu-bind)
    // processes started by hand: in the background, in a loop or function, or given a rank
    if (l.background || l.conditional || l.in_function) return std::nullopt;
    for (std::string_view rank : {"RANK", "LOCAL_RANK", "WORLD_SIZE"})
      if (env_value(l, rank)) return std::nullopt;
    for (const LaunchOption& o : l.script_options)
      if (o.name == "local-rank" || o.name == "rank" || o.name == "node-rank" || o.name == "world-size")
        return std::nullopt;
    return 1;
  }
  if (!l.is_torch_launcher()) return std::nullopt;
  if (abbreviates(l, "nproc-per-node") || env_value(l, "PET_NPROC_PER_NODE")) return std::nullopt;  // (and its environment spelling)
  const LaunchOption* procs = l.option("nproc-per-node");
  if (procs == nullptr) return *tasks;  // torch/distributed/run.py: default "1"
  if (!procs->value || !procs->value->value) return std::nullopt;
  std::optional<std::int64_t> n = parse_count(*procs->value->value);
  if (!n && (*procs->value->value == "gpu" || *procs->value->value == "auto"))
    if (std::optional<Gpus> g = gpus_per_node(l); g && g->count > 0) n = g->count;
  if (!n || *n == 0) return std::nullopt;
  return *n * *tasks;
}

std::optional<std::int64_t> LaunchModel::world_size(const Launch& l) const {
  if (!l.is_torch_launcher() || l.opaque_options) return std::nullopt;
  for (const std::string& w : l.wrappers)
    if (w == "srun" || w == "mpirun" || w == "mpiexec" || w == "xargs") return std::nullopt;  // one launcher per task
  std::optional<std::int64_t> per_node = processes_per_node(l);
  if (!per_node) return std::nullopt;
  if (abbreviates(l, "nnodes") || env_value(l, "PET_NNODES")) return std::nullopt;  // `--nnode 2`
  const LaunchOption* nnodes = l.option("nnodes");
  if (nnodes == nullptr) return per_node;
  if (!nnodes->value || !nnodes->value->value) return std::nullopt;
  std::optional<std::int64_t> n = parse_count(*nnodes->value->value);  // not a range: `1:4` is elastic
  if (!n || *n == 0) return std::nullopt;
  return *n * *per_node;
}

}  // namespace ddplint
