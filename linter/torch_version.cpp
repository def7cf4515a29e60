#include "linter/torch_version.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <vector>

#include "linter/source.hpp"
#include "linter/syntax.hpp"

namespace ddplint {

namespace fs = std::filesystem;

// pyproject.toml is read with toml++, whose code lives in linter/config.cpp.
std::optional<TorchSupport> pyproject_torch(const fs::path& file, const std::string& shown);

namespace {

constexpr std::size_t kMaxDeclarationBytes = 1 << 20;  // a requirements file of a megabyte is not one
constexpr int kMaxIncludeDepth = 3;                    // `-r` chains followed at most

std::string trim(std::string_view s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

TorchVersion next_patch(TorchVersion v) { return {v.major, v.minor, v.patch + 1}; }
TorchVersion next_minor(TorchVersion v) { return {v.major, v.minor + 1, 0}; }
TorchVersion next_major(TorchVersion v) { return {v.major + 1, 0, 0}; }

// How many release components `text` spells (`2.1` -> 2, `2.1.*` -> 2 and wildcard).
int components(std::string_view text, bool& wildcard) {
  int n = 0;
  wildcard = false;
  std::size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '*') {
      wildcard = true;
      break;
    }
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) break;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    ++n;
    if (i < text.size() && text[i] == '.') ++i;
    else break;
  }
  return n;
}

void raise_lowest(TorchSupport& s, TorchVersion v) {
  if (!s.lowest || *s.lowest < v) s.lowest = v;
}
void lower_below(TorchSupport& s, TorchVersion v) {
  if (!s.below || v < *s.below) s.below = v;
}

// One clause: `>=1.8`, `==2.1.*`, `~=2.1.0`, `<2`. False when it cannot be read.
bool apply_clause(TorchSupport& s, std::string_view clause) {
  std::string c = trim(clause);
  if (c.empty()) return true;
  static constexpr std::string_view kOps[] = {"===", "~=", "==", "!=", ">=", "<=", ">", "<", "="};
  std::string_view op;
  for (std::string_view o : kOps)
    if (c.starts_with(o)) {
      op = o;
      break;
    }
  std::string version = trim(std::string_view(c).substr(op.size()));
  if (op == "!=") return true;  // excludes releases; the range stays
  bool wildcard = false;
  int n = components(version, wildcard);
  if (version == "*") return true;  // any release
  std::optional<TorchVersion> v = TorchVersion::parse(version);
  if (!v) return false;
  if (op == ">=") raise_lowest(s, *v);
  else if (op == ">") raise_lowest(s, next_patch(*v));
  else if (op == "<") lower_below(s, *v);
  else if (op == "<=") lower_below(s, next_patch(*v));
  else if (op == "~=") {
    raise_lowest(s, *v);
    lower_below(s, n >= 3 ? next_minor(*v) : next_major(*v));
  } else if (op == "==" || op == "===" || op == "=" || op.empty()) {
    // `==2.1.*` and conda's `=2.1` / bare `2.1` match a prefix; `==2.1` one release
    bool prefix = wildcard || op == "=" || op.empty();
    raise_lowest(s, *v);
    if (!prefix) lower_below(s, next_patch(*v));
    else if (n <= 1) lower_below(s, next_major(*v));
    else if (n == 2) lower_below(s, next_minor(*v));
    else lower_below(s, next_patch(*v));
  }
  return true;
}

// A wheel's file name in a URL: `torch-1.8.0%2Bcu111-cp38-...whl` -> 1.8.0.
std::optional<TorchVersion> version_in_url(std::string_view url) {
  std::size_t slash = url.rfind('/');
  std::string_view file = slash == std::string_view::npos ? url : url.substr(slash + 1);
  if (!file.starts_with("torch-")) return std::nullopt;
  return TorchVersion::parse(file.substr(6));
}

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
}

// The range of a list of clauses (`>=1.8,<2`); std::nullopt when one cannot be read.
std::optional<TorchSupport> clauses(std::string_view spec) {
  TorchSupport s;
  std::size_t start = 0;
  while (start <= spec.size()) {
    std::size_t comma = spec.find(',', start);
    std::string_view one = spec.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (!apply_clause(s, one)) return std::nullopt;
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return s;
}

std::string shown_path(const fs::path& file, const fs::path& from) {
  if (from.empty()) return file.generic_string();
  fs::path rel = file.lexically_relative(from);
  if (rel.empty() || rel.native().starts_with("..")) return file.generic_string();
  return rel.generic_string();
}

std::optional<std::string> read_small(const fs::path& file) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return std::nullopt;
  auto size = fs::file_size(file, ec);
  if (ec || size > kMaxDeclarationBytes) return std::nullopt;
  std::string error;
  return read_file(file.string(), error);
}

// Narrows `into` (a declaration of torch) by a pip constraint on it: the
// releases both allow. The constraint names the result where it narrows it.
// Nothing to narrow when torch is not required (a constraint installs nothing).
void constrain(std::optional<TorchSupport>& into, const std::optional<TorchSupport>& c) {
  if (!into || !c) return;
  bool narrowed = false;
  if (c->lowest && (!into->lowest || *into->lowest < *c->lowest)) into->lowest = c->lowest, narrowed = true;
  if (c->below && (!into->below || *c->below < *into->below)) into->below = c->below, narrowed = true;
  if (narrowed) {
    into->written = c->written;
    into->origin = c->origin;
  }
}

void requirements_file(const fs::path& file, const fs::path& shown_from, int depth, std::optional<TorchSupport>& out) {
  std::optional<std::string> text = read_small(file);
  if (!text) return;
  std::string_view t = *text;
  std::uint32_t line_no = 0;
  std::string joined;
  std::uint32_t joined_line = 0;
  std::size_t pos = 0;
  std::optional<TorchSupport> constraints;  // `-c constraints.txt` lines: pins that narrow what is required
  std::set<std::string, std::less<>> included;  // each file a line names is read once (a file may name itself)
  while (pos <= t.size()) {
    std::size_t nl = t.find('\n', pos);
    std::string_view line = t.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? t.size() + 1 : nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (joined.empty()) joined_line = line_no;
    if (!line.empty() && line.back() == '\\') {  // a continued line
      joined += line.substr(0, line.size() - 1);
      continue;
    }
    joined += line;
    std::string l = trim(joined);
    joined.clear();
    // a comment starts at `#` at the line's start or after whitespace
    for (std::size_t h = l.find('#'); h != std::string::npos; h = l.find('#', h + 1))
      if (h == 0 || std::isspace(static_cast<unsigned char>(l[h - 1]))) {
        l = trim(std::string_view(l).substr(0, h));
        break;
      }
    if (l.empty()) continue;
    if (l[0] == '-') {
      for (std::string_view opt : {"--requirement", "--constraint", "-r", "-c"}) {
        if (!l.starts_with(opt)) continue;
        std::string rest = trim(std::string_view(l).substr(opt.size()));
        if (!rest.empty() && rest[0] == '=') rest = trim(std::string_view(rest).substr(1));
        if (rest.empty() || depth >= kMaxIncludeDepth) break;
        bool constraint = opt == "-c" || opt == "--constraint";
        if (!included.insert(std::string(constraint ? "c:" : "r:") + rest).second) break;
        requirements_file(file.parent_path() / rest, shown_from, depth + 1, constraint ? constraints : out);
        break;
      }
      continue;
    }
    if (auto s = torch_requirement(l)) {
      s->origin = shown_path(file, shown_from) + ":" + std::to_string(joined_line);
      unite(out, std::move(*s));
    }
  }
  constrain(out, constraints);
}

// setup.py: the string literals of the file (comments are not strings) that
// are requirements on torch, wherever they sit (install_requires, a list
// assigned first, extras_require).
void setup_py(const fs::path& file, const fs::path& shown_from, std::optional<TorchSupport>& out) {
  std::optional<std::string> text = read_small(file);
  if (!text || text->find("torch") == std::string::npos) return;
  SourceFile source(file.string(), std::move(*text));
  SyntaxTree tree = parse_python(source);
  if (!tree) return;
  const Kinds& k = kinds();
  // (node, whether it is a dictionary's key: `extras_require={"torch": [...]}`
  // names an extra, not a requirement)
  std::vector<std::pair<TSNode, bool>> stack{{tree.root(), false}};
  while (!stack.empty()) {
    auto [n, key] = stack.back();
    stack.pop_back();
    if (ts_node_symbol(n) == k.string) {
      if (key) continue;
      // one string_content child, no interpolation: a plain literal
      std::string content;
      bool plain = true;
      std::uint32_t count = ts_node_named_child_count(n);
      for (std::uint32_t i = 0; i < count; ++i) {
        TSNode c = ts_node_named_child(n, i);
        if (ts_node_symbol(c) == k.string_content) content += node_text(c, source.text());
        else if (ts_node_symbol(c) == k.interpolation) plain = false;
      }
      if (plain && content.size() < 200) {
        if (auto s = torch_requirement(content)) {
          s->origin = shown_path(file, shown_from) + ":" + std::to_string(ts_node_start_point(n).row + 1);
          unite(out, std::move(*s));
        }
      }
      continue;
    }
    std::uint32_t count = ts_node_named_child_count(n);
    const bool pair = ts_node_symbol(n) == k.pair;
    for (std::uint32_t i = count; i > 0; --i) stack.emplace_back(ts_node_named_child(n, i - 1), pair && i == 1);
  }
}

// setup.cfg: `install_requires` of `[options]` and the lists of
// `[options.extras_require]`, one requirement a line (setuptools' format).
void setup_cfg(const fs::path& file, const fs::path& shown_from, std::optional<TorchSupport>& out) {
  std::optional<std::string> text = read_small(file);
  if (!text) return;
  std::string_view t = *text;
  std::string section;
  bool in_list = false;  // inside a value that lists requirements
  std::uint32_t line_no = 0;
  std::size_t pos = 0;
  while (pos < t.size()) {
    std::size_t nl = t.find('\n', pos);
    std::string_view line = t.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? t.size() : nl + 1;
    ++line_no;
    std::string l = trim(line);
    if (l.empty() || l[0] == '#' || l[0] == ';') continue;
    bool indented = !line.empty() && std::isspace(static_cast<unsigned char>(line[0]));
    std::string value;
    if (!indented) {
      in_list = false;
      if (l[0] == '[') {
        section = lower(trim(std::string_view(l).substr(1, l.find(']') == std::string::npos ? l.size() - 1 : l.find(']') - 1)));
        continue;
      }
      std::size_t eq = l.find_first_of("=:");
      if (eq == std::string::npos) continue;
      std::string key = lower(trim(std::string_view(l).substr(0, eq)));
      in_list = (section == "options" && key == "install_requires") || section == "options.extras_require";
      value = trim(std::string_view(l).substr(eq + 1));
    } else if (in_list) {
      value = l;
    }
    if (!in_list || value.empty()) continue;
    if (auto s = torch_requirement(value)) {
      s->origin = shown_path(file, shown_from) + ":" + std::to_string(line_no);
      unite(out, std::move(*s));
    }
  }
}

// One item of a YAML list of requirements (conda match specs when `conda`,
// else pip's): united into `out` when it names torch, with its line.
void yaml_requirement(const YAML::Node& item, bool conda, const fs::path& file, const fs::path& shown_from,
                      std::optional<TorchSupport>& out) {
  if (!item.IsScalar()) return;
  if (auto s = torch_requirement(item.Scalar(), conda)) {
    s->origin = shown_path(file, shown_from) + ":" + std::to_string(item.Mark().line + 1);
    unite(out, std::move(*s));
  }
}

// environment.yml: conda match specs in `dependencies`, and pip
// requirements in its `pip:` list.
void environment_yml(const fs::path& file, const fs::path& shown_from, std::optional<TorchSupport>& out) {
  std::optional<std::string> text = read_small(file);
  if (!text) return;
  YAML::Node doc;
  try {
    doc = YAML::Load(*text);
  } catch (const std::exception&) {
    return;
  }
  try {
    if (!doc.IsMap()) return;
    YAML::Node deps = doc["dependencies"];
    if (!deps || !deps.IsSequence()) return;
    for (const YAML::Node& item : deps) {
      if (item.IsScalar()) {
        yaml_requirement(item, true, file, shown_from, out);
      } else if (item.IsMap()) {
        YAML::Node pip = item["pip"];
        if (pip && pip.IsSequence())
          for (const YAML::Node& p : pip) yaml_requirement(p, false, file, shown_from, out);
      }
    }
  } catch (const std::exception&) {
    return;
  }
}

// cog.yaml (Replicate's Cog): `build.python_packages`, pip requirements one
// an item, and `build.python_requirements`, a requirements file beside it.
void cog_yaml(const fs::path& file, const fs::path& shown_from, std::optional<TorchSupport>& out) {
  std::optional<std::string> text = read_small(file);
  if (!text) return;
  try {
    YAML::Node doc = YAML::Load(*text);
    if (!doc.IsMap()) return;
    YAML::Node build = doc["build"];
    if (!build || !build.IsMap()) return;
    YAML::Node packages = build["python_packages"];
    if (packages && packages.IsSequence())
      for (const YAML::Node& item : packages) yaml_requirement(item, false, file, shown_from, out);
    YAML::Node listed = build["python_requirements"];
    if (listed && listed.IsScalar() && listed.Scalar().find("..") == std::string::npos &&
        !fs::path(listed.Scalar()).is_absolute())
      requirements_file(file.parent_path() / listed.Scalar(), shown_from, 0, out);
  } catch (const std::exception&) {
    return;
  }
}

// Calls `f(line, line_no)` for each line of `t` (1-based numbers, the line
// without its newline) until `f` returns true.
template <class F>
void each_line(std::string_view t, F&& f) {
  std::uint32_t line_no = 0;
  for (std::size_t pos = 0; pos <= t.size();) {
    std::size_t nl = t.find('\n', pos);
    std::string_view line = t.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? t.size() + 1 : nl + 1;
    if (f(line, ++line_no)) return;
  }
}

// The words of a shell command line, quotes around a word taken off.
std::vector<std::string> shell_words(std::string_view l) {
  std::vector<std::string> words;
  for (std::size_t at = 0; at < l.size();) {
    while (at < l.size() && std::isspace(static_cast<unsigned char>(l[at]))) ++at;
    std::size_t end = at;
    while (end < l.size() && !std::isspace(static_cast<unsigned char>(l[end]))) ++end;
    std::string word(l.substr(at, end - at));
    if (word.size() > 2 && (word.front() == '"' || word.front() == '\'') && word.back() == word.front())
      word = word.substr(1, word.size() - 2);
    if (!word.empty()) words.push_back(std::move(word));
    at = end;
  }
  return words;
}

bool is_word(const std::string& w, std::initializer_list<std::string_view> names) {
  std::string_view base = w;
  if (std::size_t slash = base.find_last_of('/'); slash != std::string_view::npos) base = base.substr(slash + 1);
  return std::any_of(names.begin(), names.end(), [&](std::string_view n) { return base == n; });
}

std::optional<TorchSupport> install_command(const std::vector<std::string>& words, const fs::path& dir,
                                            const std::optional<fs::path>& folder, const fs::path& shown_from,
                                            const std::string& origin, int depth);

// True when `named`, relative to `folder` (itself relative to the README's),
// stays inside the README's folder: no variable, no absolute path, no `..`
// that climbs out. Files outside the project are not its declaration.
bool inside(const fs::path& folder, std::string_view named) {
  if (named.empty() || named.find('$') != std::string_view::npos || named.find('~') != std::string_view::npos) return false;
  fs::path p(named);
  if (p.is_absolute()) return false;
  fs::path joined = (folder / p).lexically_normal();
  return !joined.empty() && *joined.begin() != "..";
}

// A shell script of the project that an install recipe runs (`./install.sh`,
// `bash scripts/setup_env.sh`): its install commands, read as the recipe's
// own (run from the recipe's folder; the script's own `cd` lines are not
// followed). Only from the README itself, not from a script it runs.
std::optional<TorchSupport> install_script(const fs::path& script, const fs::path& dir, const std::optional<fs::path>& folder,
                                           const fs::path& shown_from) {
  std::optional<std::string> text = read_small(script);
  if (!text) return std::nullopt;
  std::optional<TorchSupport> found;
  each_line(*text, [&](std::string_view line, std::uint32_t line_no) {
    std::string l = trim(line);
    if (l.empty() || l[0] == '#') return false;
    found = install_command(shell_words(l), dir, folder, shown_from,
                            shown_path(script, shown_from) + ":" + std::to_string(line_no), 1);
    return found.has_value();
  });
  return found;
}

// What one command of an install recipe (a README's shell block or inline
// code, or a script the README runs) states about torch, when it bounds the
// release: `pip install torch==2.1.0 torchvision` (`pip3`, `python -m pip`,
// options before `install` too), `conda install pytorch=1.13.1 -c pytorch`
// (`conda create ... pytorch==1.10.1` installs into the new environment, as
// `conda install` does; mamba alike), `pip install -r requirements.txt`
// (that file's declaration, narrowed by `-c constraints.txt`), `conda env
// create -f env/environment.yml` (that file's `dependencies`), and a project
// script the recipe runs (install_script). `folder`: where the command runs,
// relative to `dir` (nullopt when not known: files named relative to it are
// not read). `origin`: `README.md:12`, where the command is written.
std::optional<TorchSupport> install_command(const std::vector<std::string>& words, const fs::path& dir,
                                            const std::optional<fs::path>& folder, const fs::path& shown_from,
                                            const std::string& origin, int depth) {
  if (words.empty()) return std::nullopt;
  auto found = [&](TorchSupport s) {
    s.origin = origin;
    return std::optional<TorchSupport>(std::move(s));
  };
  // a script of the project: `./setup.sh`, `bash setup.sh`, `sh x.sh`, `source x.sh`, `. x.sh`
  {
    std::size_t at = is_word(words[0], {"bash", "sh", "source", "."}) && words.size() >= 2 ? 1 : 0;
    const std::string& w = words[at];
    if (w.ends_with(".sh") && (at == 1 || w.find('/') != std::string::npos)) {
      if (depth > 0 || !folder || !inside(*folder, w)) return std::nullopt;
      return install_script((dir / *folder / w).lexically_normal(), dir, folder, shown_from);
    }
  }
  // the tool, and its `install`/`create`/`env create` subcommand
  bool pip = false, conda = false, conda_env = false;
  std::size_t sub = 0;
  // the tool is the command: its first word, after `sudo` or `!` (a
  // notebook's shell escape), or `python -m pip` (not `echo pip install ...`)
  std::size_t first = words[0] == "sudo" || words[0] == "!" ? 1 : 0;
  auto tool_at = [&](std::size_t w) {
    if (w == first) return true;
    return w == first + 2 && is_word(words[first], {"python", "python3"}) && words[first + 1] == "-m";
  };
  for (std::size_t w = first; w < words.size() && w < first + 3 && !pip && !conda; ++w) {
    if (!tool_at(w)) continue;
    if (is_word(words[w], {"pip", "pip3", "!pip", "!pip3"})) {
      for (std::size_t v = w + 1; v < words.size(); ++v)
        if (words[v] == "install") {
          pip = true, sub = v;
          break;
        } else if (words[v][0] != '-') {
          break;
        }
    } else if (is_word(words[w], {"conda", "mamba", "micromamba", "!conda"}) && w + 1 < words.size()) {
      if (words[w + 1] == "install" || words[w + 1] == "create") conda = true, sub = w + 1;
      else if (words[w + 1] == "env" && w + 2 < words.size() && (words[w + 2] == "create" || words[w + 2] == "update"))
        conda = conda_env = true, sub = w + 2;
    }
  }
  if (!pip && !conda) return std::nullopt;
  std::optional<TorchSupport> required, constraints;
  for (std::size_t w = sub + 1; w < words.size(); ++w) {
    bool listed_file = pip && (words[w] == "-r" || words[w] == "--requirement");
    bool constraint_file = pip && (words[w] == "-c" || words[w] == "--constraint");
    bool env_file = conda_env && (words[w] == "-f" || words[w] == "--file");
    if ((listed_file || constraint_file || env_file) && w + 1 < words.size()) {
      if (folder && inside(*folder, words[w + 1])) {
        fs::path named = (dir / *folder / words[w + 1]).lexically_normal();
        std::optional<TorchSupport> r;
        if (env_file) environment_yml(named, shown_from, r);
        else requirements_file(named, shown_from, 0, r);
        if (r) {
          if (constraint_file) constraints = std::move(r);
          else unite(required, std::move(*r));
        }
      }
      ++w;
      continue;
    }
    if (conda_env) continue;
    std::optional<TorchSupport> r = torch_requirement(words[w], conda);
    if (r && r->bounded()) return found(std::move(*r));
  }
  constrain(required, constraints);
  if (required && required->bounded()) return required;  // (its origin: a requirements, constraints or environment file's line)
  return std::nullopt;
}

// The release a README states, where nothing else bounds it: in a section
// whose heading names installation (install, requirements, setup,
// environment, dependencies, prerequisites, getting started), either an
// install command (install_command) in a shell block or in inline code
// (`` `./images/init_venv.sh` ``), or a line of prose or a list item that
// names PyTorch with a version (a README with no heading at all is one such
// section) ("* PyTorch 1.11.0 (older versions may work too)", "- PyTorch >= 1.8", "1. Install `torch>=2.0.0`", "The code has been
// tested with CUDA 11.3, PyTorch 1.10.0 and timm 0.5.0."). A version in prose
// is the release the maintainers run, so it is the oldest supported one
// (lowest), with no upper bound. A shell block's commands run in the
// README's folder, after the block's `cd DIR` lines. The first install
// command of the file that bounds the release, else its first line of
// prose that names one: an install command states the release exactly
// where prose beside it only names one ("- developed with PyTorch 1.13"
// above `conda install pytorch==1.13.0`).
std::optional<TorchSupport> readme_torch(const fs::path& file, const fs::path& shown_from) {
  std::optional<std::string> text = read_small(file);
  if (!text) return std::nullopt;
  static constexpr std::string_view kSectionWords[] = {"install",  "requirement", "setup",        "set-up",
                                                       "environment", "dependenc", "prerequisite", "getting started"};
  std::string_view t = *text;
  // a README with no heading is one section: what it says is its set-up
  bool headed = t.starts_with("#") || t.find("\n#") != std::string_view::npos;
  bool in_section = !headed, fenced = false;
  std::optional<fs::path> block_folder = fs::path();  // a shell block's folder, relative to `dir`
  std::string cloned;  // the folder the block's last `git clone` made
  std::optional<TorchSupport> prose;  // the first line of prose that names a release
  const fs::path dir = file.parent_path();
  std::optional<TorchSupport> installed;  // the first install command that bounds the release
  each_line(t, [&](std::string_view line, std::uint32_t line_no) {
    std::string l = trim(line);
    if (l.starts_with("```") || l.starts_with("~~~")) {
      fenced = !fenced;
      block_folder = fs::path();  // each block starts in the README's folder
      cloned.clear();
      return false;
    }
    std::string low = lower(l);
    const std::string origin = shown_path(file, shown_from) + ":" + std::to_string(line_no);
    if (fenced) {
      if (!in_section) return false;
      std::string command = l;
      if (command.starts_with("$ ")) command = command.substr(2);  // a prompt
      std::vector<std::string> words = shell_words(command);
      // `cd ImageBind` before a `pip install -r requirements.txt`: the block's
      // folder, relative to the README's (left unknown for anything else)
      // `git clone URL [DIR]` then `cd DIR`: into the clone, this repository's
      // own folder (the README's)
      if (words.size() >= 3 && words[0] == "git" && words[1] == "clone") {
        std::string url = words.size() >= 4 && words[3][0] != '-' ? words[3] : words[2];
        while (!url.empty() && url.back() == '/') url.pop_back();
        std::size_t slash = url.find_last_of("/:");
        cloned = slash == std::string::npos ? url : url.substr(slash + 1);
        if (cloned.ends_with(".git")) cloned.resize(cloned.size() - 4);
        return false;
      }
      if (words.size() == 2 && words[0] == "cd" && !cloned.empty() && (words[1] == cloned || words[1] == cloned + "/")) {
        block_folder = fs::path();
        return false;
      }
      if (words.size() == 2 && words[0] == "cd") {
        fs::path to = fs::path(words[1]);
        if (to.is_absolute() || words[1].find('$') != std::string::npos || words[1].find('~') != std::string::npos)
          block_folder.reset();
        else if (block_folder)
          block_folder = (*block_folder / to).lexically_normal();
        return false;
      }
      if (auto r = install_command(words, dir, block_folder, shown_from, origin, 0)) {
        installed = std::move(r);
        return true;
      }
      return false;
    }
    if (l.starts_with("#")) {
      in_section = std::any_of(std::begin(kSectionWords), std::end(kSectionWords),
                               [&](std::string_view w) { return low.find(w) != std::string::npos; });
      return false;
    }
    if (!in_section) return false;
    // inline code that runs an install command (`` `./images/init_venv.sh` ``,
    // `` `pip install torch==2.1` ``), from the README's folder
    for (std::size_t open = l.find('`'); open != std::string::npos;) {
      std::size_t close = l.find('`', open + 1);
      if (close == std::string::npos) break;
      if (auto r = install_command(shell_words(std::string_view(l).substr(open + 1, close - open - 1)), dir, fs::path(),
                                   shown_from, origin, 0)) {
        installed = std::move(r);
        return true;
      }
      open = l.find('`', close + 1);
    }
    if (prose) return false;
    // "torch" or "pytorch" as a word, then at most three marks (` >= : * [ `), an
    // optional "version"/"install", and a version with a dot
    for (std::size_t w = low.find("torch"); w != std::string::npos; w = low.find("torch", w + 1)) {
      std::size_t start = w >= 2 && low.compare(w - 2, 2, "py") == 0 ? w - 2 : w;
      auto word_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == '/'; };
      if (start > 0 && word_char(low[start - 1])) continue;
      std::size_t i = w + 5;
      if (i < low.size() && (std::isalnum(static_cast<unsigned char>(low[i])) || low[i] == '_' || low[i] == '-' ||
                             (low[i] == '.' && i + 1 < low.size() && std::isalpha(static_cast<unsigned char>(low[i + 1])))))
        continue;  // `torchvision`, `pytorch-lightning`, `pytorch.org`
      for (int marks = 0; i < low.size() && marks < 4 && !std::isalnum(static_cast<unsigned char>(low[i])); ++marks) ++i;
      for (std::string_view filler : {"version ", "install "})
        if (low.compare(i, filler.size(), filler) == 0) i += filler.size();
      if (i < low.size() && low[i] == 'v') ++i;
      std::size_t end = i;
      while (end < low.size() && (std::isdigit(static_cast<unsigned char>(low[end])) || low[end] == '.')) ++end;
      while (end > i && low[end - 1] == '.') --end;
      std::string_view version = std::string_view(low).substr(i, end - i);
      if (version.find('.') == std::string_view::npos || version.size() > 16 ||
          std::count(version.begin(), version.end(), '.') > 2)
        continue;
      std::optional<TorchVersion> v = TorchVersion::parse(version);
      if (!v) continue;
      // "PyTorch 1.6 is not supported", "doesn't work with PyTorch 2.0": no
      // statement of the release used (the sentence that names it, not the next one)
      std::size_t from = low.rfind(". ", start);
      from = from == std::string::npos ? 0 : from;
      std::size_t to = low.find(". ", end);
      std::string_view sentence = std::string_view(low).substr(from, to == std::string::npos ? std::string::npos : to - from);
      if (sentence.find(" not ") != std::string_view::npos || sentence.find("n't") != std::string_view::npos ||
          sentence.find("unsupported") != std::string_view::npos || sentence.find("no longer") != std::string_view::npos)
        break;
      TorchSupport s;
      s.lowest = *v;
      s.written = l.substr(start, end - start);
      s.origin = origin;
      prose = std::move(s);
      break;
    }
    return false;
  });
  return installed ? installed : prose;
}

}  // namespace

void unite(std::optional<TorchSupport>& into, TorchSupport more) {
  if (!into) {
    into = std::move(more);
    return;
  }
  if (!into->lowest || !more.lowest) into->lowest.reset();
  else into->lowest = std::min(*into->lowest, *more.lowest);
  if (!into->below || !more.below) into->below.reset();
  else into->below = std::max(*into->below, *more.below);
  // the first declaration found names the union
}

std::string TorchVersion::to_string() const {
  std::string s = std::to_string(major) + "." + std::to_string(minor);
  if (patch != 0) s += "." + std::to_string(patch);
  return s;
}

std::optional<TorchVersion> TorchVersion::parse(std::string_view text) {
  int parts[3] = {0, 0, 0};
  int n = 0;
  std::size_t i = 0;
  if (i < text.size() && (text[i] == 'v' || text[i] == 'V')) ++i;
  while (n < 3 && i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    int value = 0;
    std::size_t digits = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      if (++digits > 4) return std::nullopt;
      value = value * 10 + (text[i] - '0');
      ++i;
    }
    parts[n++] = value;
    if (i < text.size() && text[i] == '.' && i + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[i + 1])))
      ++i;
    else
      break;
  }
  if (n == 0) return std::nullopt;
  return TorchVersion{parts[0], parts[1], parts[2]};
}

std::optional<TorchSupport> torch_requirement(std::string_view requirement, bool conda) {
  std::string r = trim(requirement);
  if (std::size_t semi = r.find(';'); semi != std::string::npos) r = trim(std::string_view(r).substr(0, semi));
  if (conda) {
    if (std::size_t colons = r.rfind("::"); colons != std::string::npos) r = r.substr(colons + 2);
  }
  std::size_t end = 0;
  while (end < r.size() && is_name_char(r[end])) ++end;
  std::string name = lower(std::string_view(r).substr(0, end));
  std::replace(name.begin(), name.end(), '_', '-');
  if (!(name == "torch" || (conda && name == "pytorch"))) return std::nullopt;
  std::string rest = trim(std::string_view(r).substr(end));
  if (!rest.empty() && rest[0] == '[') {  // extras
    std::size_t close = rest.find(']');
    if (close == std::string::npos) return std::nullopt;
    rest = trim(std::string_view(rest).substr(close + 1));
  }
  TorchSupport s;
  s.written = r;
  if (!rest.empty() && rest[0] == '@') {
    if (auto v = version_in_url(trim(std::string_view(rest).substr(1)))) {
      s.lowest = *v;
      s.below = next_patch(*v);
    }
    return s;
  }
  if (!rest.empty() && rest[0] == '(' && rest.back() == ')') rest = trim(std::string_view(rest).substr(1, rest.size() - 2));
  if (conda) {
    // `=1.13.1=build`: the build string after the version's `=` is not a version
    if (rest.starts_with("=") && !rest.starts_with("==")) {
      std::size_t second = rest.find('=', 1);
      if (second != std::string::npos) rest = rest.substr(0, second);
    } else if (!rest.empty() && rest[0] != '<' && rest[0] != '>' && rest[0] != '!' && rest[0] != '~' && rest[0] != '=') {
      std::size_t space = rest.find(' ');  // `pytorch 1.13.* build`
      if (space != std::string::npos) rest = rest.substr(0, space);
    }
  } else if (!rest.empty() && std::isdigit(static_cast<unsigned char>(rest[0]))) {
    return std::nullopt;  // not PEP 508
  }
  std::optional<TorchSupport> range = clauses(rest);
  if (!range) return std::nullopt;
  range->written = std::move(s.written);
  return range;
}

std::optional<TorchSupport> poetry_constraint(std::string_view constraint) {
  std::string c = trim(constraint);
  TorchSupport s;
  s.written = c;
  if (c.empty() || c == "*") return s;
  if (c[0] == '^' || (c[0] == '~' && (c.size() < 2 || c[1] != '='))) {
    std::string version = trim(std::string_view(c).substr(1));
    bool wildcard = false;
    int n = components(version, wildcard);
    std::optional<TorchVersion> v = TorchVersion::parse(version);
    if (!v) return std::nullopt;
    s.lowest = *v;
    if (c[0] == '^') s.below = v->major != 0 ? next_major(*v) : next_minor(*v);
    else s.below = n >= 2 ? next_minor(*v) : next_major(*v);
    return s;
  }
  // a bare version is an exact pin in Poetry
  if (std::isdigit(static_cast<unsigned char>(c[0])) && c.find_first_of(",<>=!") == std::string::npos) c = "==" + c;
  std::optional<TorchSupport> range = clauses(c);
  if (!range) return std::nullopt;
  range->written = std::move(s.written);
  return range;
}

std::optional<TorchSupport> declared_torch_in(const fs::path& dir, const fs::path& shown_from) {
  std::optional<TorchSupport> out;
  if (auto s = pyproject_torch(dir / "pyproject.toml", shown_path(dir / "pyproject.toml", shown_from))) unite(out, std::move(*s));
  std::error_code exists_error;
  if (!fs::exists(dir / "__init__.py", exists_error)) setup_py(dir / "setup.py", shown_from, out);  // else a module
  setup_cfg(dir / "setup.cfg", shown_from, out);
  // requirements*.txt and environment*.y(a)ml, in name order
  std::vector<fs::path> requirements, environments, readmes;
  std::error_code ec;
  fs::directory_iterator it(dir, ec), last;
  for (std::size_t seen = 0; !ec && it != last && seen < 4096; it.increment(ec), ++seen) {
    std::string name = it->path().filename().string();
    std::string l = lower(name);
    if (l.starts_with("requirements") && l.ends_with(".txt")) requirements.push_back(it->path());
    else if ((l.find("environment") != std::string::npos || l.starts_with("conda")) &&
             (l.ends_with(".yml") || l.ends_with(".yaml")))
      environments.push_back(it->path());  // `environment.yml`, `tft2v_environment.yaml`, `conda_env.yml`
    else if (l == "readme.md" || l == "install.md")
      readmes.push_back(it->path());  // `README.MD`, `Readme.md`: the name as the folder writes it
  }
  // requirements.txt first, then the others in name order
  std::sort(requirements.begin(), requirements.end(), [](const fs::path& a, const fs::path& b) {
    bool a_main = a.filename() == "requirements.txt", b_main = b.filename() == "requirements.txt";
    return a_main != b_main ? a_main : a < b;
  });
  std::sort(environments.begin(), environments.end());
  for (const fs::path& r : requirements) requirements_file(r, shown_from, 0, out);
  for (const fs::path& e : environments) environment_yml(e, shown_from, out);
  cog_yaml(dir / "cog.yaml", shown_from, out);
  // nothing bounds it: the release the README states, if it states one
  // (README.md before INSTALL.md, whatever their case)
  if (!out || !out->bounded()) {
    std::sort(readmes.begin(), readmes.end(), [](const fs::path& a, const fs::path& b) {
      bool a_readme = lower(a.filename().string()) == "readme.md", b_readme = lower(b.filename().string()) == "readme.md";
      return a_readme != b_readme ? a_readme : a < b;
    });
    for (const fs::path& readme : readmes)
      if (std::optional<TorchSupport> r = readme_torch(readme, shown_from)) {
        out = std::move(r);
        break;
      }
  }
  // still nothing bounds it: the environments a folder of them keeps
  // (`env/environment_cu118.yml`, `requirements/runtime.txt`), where the
  // project's set-up is written down beside the code rather than at its root
  if (!out || !out->bounded()) {
    std::optional<TorchSupport> kept;
    for (const char* folder : {"env", "envs", "environment", "environments", "conda", "requirements"}) {
      std::vector<fs::path> files;
      std::error_code sub_ec;
      fs::directory_iterator sub(dir / folder, sub_ec), sub_last;
      for (std::size_t seen = 0; !sub_ec && sub != sub_last && seen < 256; sub.increment(sub_ec), ++seen) {
        std::string l = lower(sub->path().filename().string());
        if (l.ends_with(".txt") || l.ends_with(".yml") || l.ends_with(".yaml")) files.push_back(sub->path());
      }
      std::sort(files.begin(), files.end());
      for (const fs::path& f : files) {
        std::string l = lower(f.filename().string());
        if (l.ends_with(".txt")) requirements_file(f, shown_from, 0, kept);
        else environment_yml(f, shown_from, kept);
      }
    }
    if (kept && kept->bounded()) out = std::move(kept);
  }
  return out;
}

}  // namespace ddplint
