#include "linter/config.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <cstdio>

#include <toml++/toml.h>

#include "linter/source.hpp"

namespace ddplint {

namespace fs = std::filesystem;

namespace {

// A key or rule code from the file, as an error message shows it: control
// characters escaped (the message stays on one line) and at most 60 bytes,
// cut between characters, then "…" (a key of a megabyte is not echoed whole).
std::string shown(std::string_view text) {
  constexpr std::size_t kMaxBytes = 60;
  std::size_t n = std::min(text.size(), kMaxBytes);
  while (n > 0 && n < text.size() && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;  // a continuation byte
  std::string out;
  for (char c : text.substr(0, n)) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", u);
      out += escaped;
    } else {
      out.push_back(c);
    }
  }
  if (n < text.size()) out += "…";
  return out;
}

ConfigError error_at(const fs::path& file, const toml::source_region& where, std::string message) {
  return ConfigError{file.string(), static_cast<std::uint32_t>(where.begin.line),
                     static_cast<std::uint32_t>(where.begin.column), std::move(message)};
}

// A list of codes: an array of strings. Each must match a rule.
std::optional<ConfigError> read_codes(const fs::path& file, std::string_view key, const toml::node& node,
                                      std::span<const Rule> rules, std::vector<std::string>& out) {
  const toml::array* array = node.as_array();
  if (array == nullptr) return error_at(file, node.source(), "`" + std::string(key) + "` must be an array of rule codes");
  for (const toml::node& item : *array) {
    const auto* s = item.as_string();
    if (s == nullptr) return error_at(file, item.source(), "`" + std::string(key) + "` must hold strings (rule codes)");
    std::string code = canonical_selector(s->get(), rules);  // a code in any case, a prefix or a rule name
    if (unknown_code({code}, rules))
      return error_at(file, item.source(), unknown_rule_message(shown(s->get()), rules) + " in `" + std::string(key) + "`");
    out.push_back(std::move(code));
  }
  return std::nullopt;
}

std::optional<ConfigError> read_table(const fs::path& file, const toml::table& table, std::span<const Rule> rules,
                                      Config& config) {
  bool per_file_ignores_read = false;
  for (const auto& [key, node] : table) {
    std::string_view k = key.str();
    std::optional<ConfigError> err;
    if (k == "extend") {
      continue;  // read first, by load_config
    } else if (k == "output-format") {
      const auto* f = node.as_string();
      static const std::vector<std::string> kFormats = {"text", "concise", "full", "grouped", "json", "json-lines", "github", "sarif"};
      if (f == nullptr || std::find(kFormats.begin(), kFormats.end(), f->get()) == kFormats.end())
        return error_at(file, node.source(), "`output-format` must be one of text, concise, full, grouped, json, json-lines, github, sarif");
      config.output_format = f->get();
    } else if (k == "fixable") {
      config.fixable.clear();
      err = read_codes(file, k, node, rules, config.fixable);
    } else if (k == "unfixable") {
      err = read_codes(file, k, node, rules, config.unfixable);  // added to those of an extended configuration
    } else if (k == "select") {
      config.select_given = true;
      err = read_codes(file, k, node, rules, config.select);
    } else if (k == "extend-select") {
      err = read_codes(file, k, node, rules, config.extend_select);
    } else if (k == "ignore") {
      err = read_codes(file, k, node, rules, config.ignore);
    } else if (k == "per-file-ignores") {
      const toml::table* globs = node.as_table();
      if (globs == nullptr) return error_at(file, node.source(), "`per-file-ignores` must be a table of pattern = [codes]");
      if (!per_file_ignores_read) config.per_file_ignores.clear();  // this file's replace an extended one's
      per_file_ignores_read = true;
      for (const auto& [pattern, codes] : *globs) {
        std::vector<std::string> list;
        if (auto e = read_codes(file, "per-file-ignores", codes, rules, list)) return e;
        config.per_file_ignores.emplace_back(std::string(pattern.str()), std::move(list));
      }
    } else if (k == "exclude" || k == "extend-exclude" || k == "include" || k == "extend-include") {
      const toml::array* array = node.as_array();
      if (array == nullptr) return error_at(file, node.source(), "`" + std::string(k) + "` must be an array of glob patterns");
      std::vector<std::string> patterns;
      for (const toml::node& item : *array) {
        const auto* s = item.as_string();
        if (s == nullptr) return error_at(file, item.source(), "`" + std::string(k) + "` must hold strings (glob patterns)");
        patterns.push_back(s->get());
      }
      // exclude and include replace an extended configuration's, extend-* add to them (as Ruff's)
      if (k == "exclude") config.exclude = std::move(patterns);
      else if (k == "extend-exclude") config.extend_exclude.insert(config.extend_exclude.end(), patterns.begin(), patterns.end());
      else if (k == "include") config.include = std::move(patterns);
      else config.extend_include.insert(config.extend_include.end(), patterns.begin(), patterns.end());
    } else if (k == "respect-gitignore") {
      const auto* b = node.as_boolean();
      if (b == nullptr) return error_at(file, node.source(), "`respect-gitignore` must be true or false");
      config.respect_gitignore = b->get();
    } else if (k == "line-length") {
      const auto* i = node.as_integer();
      if (i == nullptr || i->get() < 1 || i->get() > 1000)
        return error_at(file, node.source(), "`line-length` must be an integer from 1 to 1000");
      config.options.line_length = static_cast<std::uint32_t>(i->get());
    } else if (k == "tiny-batch-threshold") {
      const auto* i = node.as_integer();
      if (i == nullptr || i->get() < 1 || i->get() > 1'000'000)
        return error_at(file, node.source(), "`tiny-batch-threshold` must be an integer from 1 to 1000000");
      config.options.tiny_batch_threshold = i->get();
    } else {
      return error_at(file, key.source(),
                      "unknown key `" + shown(k) +
                          "` (known: extend, select, extend-select, ignore, per-file-ignores, exclude, extend-exclude, "
                          "include, extend-include, respect-gitignore, tiny-batch-threshold, line-length, output-format, fixable, "
                          "unfixable)");
    }
    if (err) return err;
  }
  return std::nullopt;
}

// toml++ parses dotted keys and table headers recursively: a key of tens of
// thousands of parts exhausts the stack. Configuration keys are never more
// than a few parts deep, so lines with more than kMaxKeyParts dots outside
// strings are refused before parsing (the line is returned, 1-based; 0: fine).
constexpr int kMaxKeyParts = 64;
std::uint32_t too_deep_line(std::string_view text) {
  std::uint32_t line = 1;
  int dots = 0;
  char quote = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\n') {
      ++line;
      dots = 0;
      quote = 0;  // multi-line strings may hide dots; counting fewer is the safe side
      continue;
    }
    if (quote != 0) {
      if (c == '\\' && quote == '"') ++i;
      else if (c == quote) quote = 0;
      continue;
    }
    if (c == '"' || c == '\'') quote = c;
    else if (c == '#') {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
    } else if (c == '.' && ++dots > kMaxKeyParts) {
      return line;
    }
  }
  return 0;
}

bool glob_matches(const std::string& pattern, const std::string& path) {
  return ::fnmatch(pattern.c_str(), path.c_str(), 0) == 0;
}

// A pattern of an extended configuration, for the configuration that extends
// it: one with a `/` is relative to the extended file's folder, so it becomes
// absolute (matched against absolute paths); a bare name matches anywhere.
std::string anchored(const std::string& pattern, const fs::path& directory) {
  if (pattern.find('/') == std::string::npos || pattern.front() == '/') return pattern;
  return (directory / pattern).lexically_normal().generic_string();
}

// How many `extend` links a chain may have (a cycle is refused before this).
constexpr int kMaxExtendDepth = 16;

std::variant<std::optional<Config>, ConfigError> load_config_at(const fs::path& file, std::span<const Rule> rules,
                                                                std::vector<fs::path>& chain);

}  // namespace

std::vector<std::string> exclude_patterns(const Config* config) {
  std::vector<std::string> out = config != nullptr && config->exclude ? *config->exclude : kDefaultExclude;
  if (config != nullptr) out.insert(out.end(), config->extend_exclude.begin(), config->extend_exclude.end());
  return out;
}

bool matches_exclude(const std::vector<std::string>& patterns, const fs::path& path, const fs::path& base) {
  std::string name = path.filename().string();
  std::string relative = base.empty() ? std::string() : path.lexically_relative(base).generic_string();
  bool inside = !relative.empty() && relative.rfind("..", 0) != 0;
  for (const std::string& p : patterns) {
    if (!p.empty() && p.front() == '/') {  // anchored by an extended configuration
      if (glob_matches(p, path.generic_string())) return true;
      continue;
    }
    if (glob_matches(p, name)) return true;
    if (inside && glob_matches(p, relative)) return true;
  }
  return false;
}

std::optional<bool> included_by(const Config* config, const fs::path& path) {
  if (config == nullptr) return std::nullopt;
  if (matches_exclude(config->extend_include, path, config->directory)) return true;
  if (config->include) return matches_exclude(*config->include, path, config->directory);
  return std::nullopt;
}

std::string ConfigError::to_string() const {
  if (line == 0) return file + ": " + message;
  return file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + message;
}

std::variant<std::optional<Config>, ConfigError> load_config(const fs::path& file, std::span<const Rule> rules) {
  std::vector<fs::path> chain;
  return load_config_at(file, rules, chain);
}

namespace {
std::variant<std::optional<Config>, ConfigError> load_config_at(const fs::path& file, std::span<const Rule> rules,
                                                                std::vector<fs::path>& chain) {
  std::error_code ec;
  if (!fs::exists(file, ec)) return std::optional<Config>{};
  if (!fs::is_regular_file(file, ec)) return ConfigError{file.string(), 0, 0, "not a regular file"};
  std::string error;
  std::optional<std::string> text = read_file(file.string(), error);
  if (!text) return ConfigError{file.string(), 0, 0, "cannot read: " + error};
  if (std::uint32_t line = too_deep_line(*text))
    return ConfigError{file.string(), line, 1,
                       "a key with more than " + std::to_string(kMaxKeyParts) + " dotted parts (too deeply nested)"};
  toml::table doc;
  try {
    doc = toml::parse(*text, file.string());
  } catch (const toml::parse_error& e) {
    return ConfigError{file.string(), static_cast<std::uint32_t>(e.source().begin.line),
                       static_cast<std::uint32_t>(e.source().begin.column), std::string(e.description())};
  }
  Config config;
  config.file = file;
  // absolute, so per-file-ignores patterns match however the file was named (`--config alt.toml`)
  config.directory = fs::absolute(file, ec).lexically_normal().parent_path();
  const toml::table* table = &doc;
  if (file.filename() == "pyproject.toml") {
    const toml::node* tool = doc.get("tool");
    const toml::node* own = tool != nullptr && tool->is_table() ? tool->as_table()->get("ddplint") : nullptr;
    if (own == nullptr) return std::optional<Config>{};
    if (!own->is_table()) return error_at(file, own->source(), "`tool.ddplint` must be a table");
    table = own->as_table();
    // Ruff's line length in the same file, for fixes that wrap (a ddplint `line-length` wins)
    const toml::node* ruff = tool->as_table()->get("ruff");
    if (ruff != nullptr && ruff->is_table())
      if (const toml::node* n = ruff->as_table()->get("line-length"); n != nullptr && n->is_integer()) {
        std::int64_t v = n->as_integer()->get();
        if (v >= 1 && v <= 1000) config.options.line_length = static_cast<std::uint32_t>(v);
      }
  }
  if (const toml::node* extend = table->get("extend")) {
    // `extend = "../pyproject.toml"`: that configuration first, this one's keys on top (Ruff's `extend`)
    const auto* target = extend->as_string();
    if (target == nullptr) return error_at(file, extend->source(), "`extend` must be a path (a string)");
    fs::path base_file = fs::path(target->get());
    if (base_file.is_relative()) base_file = config.directory / base_file;
    base_file = fs::weakly_canonical(base_file, ec);
    chain.push_back(fs::weakly_canonical(file, ec));
    if (std::find(chain.begin(), chain.end(), base_file) != chain.end())
      return error_at(file, extend->source(), "`extend` makes a cycle: " + shown(base_file.string()) + " extends this file again");
    if (static_cast<int>(chain.size()) > kMaxExtendDepth)
      return error_at(file, extend->source(), "`extend` chain longer than " + std::to_string(kMaxExtendDepth) + " files");
    if (!fs::exists(base_file, ec)) return error_at(file, extend->source(), "`extend`: " + shown(base_file.string()) + " does not exist");
    auto loaded = load_config_at(base_file, rules, chain);
    if (auto* err = std::get_if<ConfigError>(&loaded)) return *err;
    auto& base = std::get<std::optional<Config>>(loaded);
    if (!base) return error_at(file, extend->source(), "`extend`: " + shown(base_file.string()) + " has no ddplint configuration");
    // this file starts from the extended one: its settings, its rule selection as a layer below
    fs::path here = config.directory;
    config = std::move(*base);
    config.base_layers.push_back({config.select, config.extend_select, config.ignore, config.select_given});
    config.select.clear();
    config.extend_select.clear();
    config.ignore.clear();
    config.select_given = false;
    for (auto* list : {&config.extend_exclude, &config.extend_include})
      for (std::string& p : *list) p = anchored(p, config.directory);
    for (auto* list : {&config.exclude, &config.include})
      if (*list)
        for (std::string& p : **list) p = anchored(p, config.directory);
    for (auto& [pattern, codes] : config.per_file_ignores) pattern = anchored(pattern, config.directory);
    config.extends.push_back(config.file);
    config.file = file;
    config.directory = here;
  }
  if (auto err = read_table(file, *table, rules, config)) return *err;
  return std::optional<Config>{std::move(config)};
}
}  // namespace

RuleSelection selection_for(const Config* config, const fs::path& file, const std::vector<std::string>& select,
                            const std::vector<std::string>& ignore, const std::vector<std::string>& extend_select) {
  RuleSelection selection;
  if (config != nullptr) {
    for (const Config::SelectionLayer& base : config->base_layers)
      selection.add_layer(base.select, base.extend_select, base.ignore, base.select_given);
    selection.add_layer(config->select, config->extend_select, config->ignore, config->select_given);
  }
  if (!select.empty() || !ignore.empty() || !extend_select.empty()) selection.add_layer(select, extend_select, ignore);
  if (config != nullptr && !config->per_file_ignores.empty()) {
    std::error_code ec;
    fs::path absolute = fs::absolute(file, ec).lexically_normal();
    std::string relative = absolute.lexically_relative(config->directory).generic_string();
    std::string name = file.filename().string();
    std::vector<std::string> codes;
    for (const auto& [pattern, list] : config->per_file_ignores) {
      if (glob_matches(pattern, relative) || glob_matches(pattern, name) || glob_matches(pattern, absolute.string()))
        codes.insert(codes.end(), list.begin(), list.end());
    }
    if (!codes.empty()) selection.add_layer({}, {}, std::move(codes));
  }
  return selection;
}

FileSettings settings_for(const Config* config, const fs::path& file, const std::vector<std::string>& select,
                          const std::vector<std::string>& ignore, const std::vector<std::string>& extend_select) {
  RuleSelection fixable;  // every rule's fixes by default
  if (config != nullptr) fixable.add_layer(config->fixable, {}, config->unfixable, true);
  return FileSettings{selection_for(config, file, select, ignore, extend_select), config ? config->options : RuleOptions{},
                      std::move(fixable)};
}

std::variant<std::shared_ptr<const Config>, ConfigError> ConfigResolver::for_directory(const fs::path& start) {
  using Result = std::variant<std::shared_ptr<const Config>, ConfigError>;
  // walk up (iteratively, at most kMaxAncestors folders: an absurdly deep path
  // from an editor URI costs bounded time and memory), stopping at a folder
  // already resolved or holding a configuration file
  std::vector<fs::path> visited;
  Result result = std::shared_ptr<const Config>{};
  fs::path dir = start;
  for (std::size_t level = 0; level < kMaxAncestors; ++level) {
    {
      std::lock_guard lock(mutex_);
      auto it = by_directory_.find(dir);
      if (it != by_directory_.end()) {
        result = it->second;
        break;
      }
    }
    visited.push_back(dir);
    bool found = false;
    for (const char* name : {".ddplint.toml", "ddplint.toml", "pyproject.toml"}) {
      auto loaded = load_config(dir / name, rules_);
      if (auto* err = std::get_if<ConfigError>(&loaded)) {
        result = *err;
        found = true;
        break;
      }
      if (auto& config = std::get<std::optional<Config>>(loaded)) {
        result = std::make_shared<const Config>(std::move(*config));
        found = true;
        break;
      }
    }
    if (found || !dir.has_parent_path() || dir.parent_path() == dir) break;
    dir = dir.parent_path();
  }
  std::lock_guard lock(mutex_);
  // the deepest folders of a very long walk are not cached: their paths are the long ones
  for (std::size_t i = 0; i < visited.size(); ++i)
    if (visited[i].native().size() <= 4096) by_directory_.emplace(visited[i], result);
  return result;
}

std::variant<std::shared_ptr<const Config>, ConfigError> ConfigResolver::for_file(const fs::path& file) {
  std::error_code ec;
  fs::path absolute = fs::absolute(file, ec).lexically_normal();
  if (ec) return std::shared_ptr<const Config>{};
  return for_directory(absolute.parent_path());
}

void ConfigResolver::clear() {
  std::lock_guard lock(mutex_);
  by_directory_.clear();
}

}  // namespace ddplint
