// Stage 2 of a run: --select/--ignore, --config, and the configuration closest to each file.
#include "cli/configure.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>

namespace ddplint::cli {

namespace {
// The answer for the folder of `path`: the files of one folder come together,
// so the last folder's answer is kept in `last`. Keyed by the path up to its
// last '/', for a last component that is a plain name: such paths resolve to
// the same folder (the resolver takes the normalised path's parent), and the
// folder lookup (absolute path, normalisation, a map of paths compared
// component by component) was 5% of a run over many small files. Any other
// path is asked afresh, its answer left in `other`.
template <typename T, typename Ask>
const T& folder_answer(const std::string& path, std::optional<std::pair<std::string, T>>& last, T& other, Ask ask) {
  std::size_t slash = path.rfind('/');
  std::string_view folder = std::string_view(path).substr(0, slash == std::string::npos ? 0 : slash + 1);
  std::string_view name = std::string_view(path).substr(folder.size());
  if (name.empty() || name == "." || name == "..") return other = ask();
  if (!last || folder != last->first) last.emplace(std::string(folder), ask());
  return last->second;
}
}  // namespace

Configurations::Configurations(const CheckOptions& options, std::span<const Rule> rules)
    : options_(options), rules_(rules), resolver_(rules) {}

bool Configurations::resolve_arguments() {
  // codes in any case, prefixes, or rule names (canonical_selector), each checked against the rules
  auto read = [&](const std::vector<std::string>& args, std::vector<std::string>& out, const char* flag) {
    for (const auto& s : args)
      for (const auto& item : split_codes(s)) {
        std::string code = canonical_selector(item, rules_);
        if (unknown_code({code}, rules_)) {
          std::fprintf(stderr, "ddplint: %s: %s\n", flag, unknown_rule_message(item, rules_).c_str());
          return false;
        }
        out.push_back(std::move(code));
      }
    return true;
  };
  if (!read(options_.select_args, select_, "--select") || !read(options_.extend_select_args, extend_select_, "--extend-select") ||
      !read(options_.ignore_args, ignore_, "--ignore"))
    return false;
  if (options_.add_noqa && (options_.fixing() || !options_.stdin_filename.empty() ||
                            std::find(options_.paths.begin(), options_.paths.end(), "-") != options_.paths.end())) {
    std::fprintf(stderr, "ddplint: --add-noqa edits files in place: it cannot be used with --fix, --diff or standard input\n");
    return false;
  }
  if (options_.isolated && !options_.config_path.empty()) {
    std::fprintf(stderr, "ddplint: --config and --isolated cannot be used together\n");
    return false;
  }
  // Configuration: --config for every file, else the closest file to each one.
  if (!options_.config_path.empty()) {
    const std::string& config_path = options_.config_path;
    auto loaded = load_config(config_path, rules_);
    if (auto* err = std::get_if<ConfigError>(&loaded)) {
      std::fprintf(stderr, "ddplint: %s\n", err->to_string().c_str());
      return false;
    }
    auto& config = std::get<std::optional<Config>>(loaded);
    if (!config) {
      std::error_code ec;
      std::fprintf(stderr, "ddplint: %s: %s\n", config_path.c_str(),
                   std::filesystem::exists(config_path, ec) ? "no [tool.ddplint] table" : "no such file");
      return false;
    }
    fixed_config_ = std::make_shared<const Config>(std::move(*config));
  }
  return true;
}

bool Configurations::config_of(const std::string& path, std::shared_ptr<const Config>& out) {
  out.reset();
  if (options_.isolated) return true;
  if (fixed_config_) {
    out = fixed_config_;
    return true;
  }
  Answer other;
  const Answer& found = folder_answer(path, last_folder_, other, [&] { return resolver_.for_file(path); });
  if (auto* err = std::get_if<ConfigError>(&found)) {
    std::string line = err->to_string();
    if (std::find(errors_.begin(), errors_.end(), line) == errors_.end()) {
      errors_.push_back(line);
      std::fprintf(stderr, "ddplint: %s\n", line.c_str());
    }
    return false;
  }
  out = std::get<std::shared_ptr<const Config>>(found);
  return true;
}

std::shared_ptr<const RuffLineLength> Configurations::ruff_of(const Config* config, const std::string& path) {
  if (options_.isolated || (config != nullptr && config->options.line_length != 0)) return nullptr;
  std::shared_ptr<const RuffLineLength> other;
  return folder_answer(path, last_ruff_folder_, other, [&] { return resolver_.ruff_line_length_for(path); });
}

std::shared_ptr<const TorchSupport> Configurations::torch_of(const std::string& path) {
  std::shared_ptr<const TorchSupport> other;
  return folder_answer(path, last_torch_folder_, other, [&] { return resolver_.torch_declared_for(path); });
}

FileSettings Configurations::settings_of(const Config* config, const std::string& path) {
  std::shared_ptr<const RuffLineLength> ruff = ruff_of(config, path);
  std::shared_ptr<const TorchSupport> torch = torch_of(path);
  FileSettings settings = settings_for(config, path, select_, ignore_, extend_select_, ruff.get(), torch.get());
  const std::string& least = options_.min_severity;
  if (!least.empty())
    settings.selection.require_severity(least == "error" ? Severity::Error : least == "warning" ? Severity::Warning : Severity::Info);
  return settings;
}

std::shared_ptr<const FileSettings> Configurations::shared_settings_of(const std::shared_ptr<const Config>& config,
                                                                       const std::string& path) {
  if (config && !config->per_file_ignores.empty()) return std::make_shared<const FileSettings>(settings_of(config.get(), path));
  // the resolver keeps each Ruff configuration it found: its address names it for the run
  std::shared_ptr<const RuffLineLength> ruff = ruff_of(config.get(), path);
  // so does the torch declaration
  std::shared_ptr<const TorchSupport> torch = torch_of(path);
  auto& shared = shared_settings_[{config.get(), ruff.get(), torch.get()}];
  if (!shared) shared = std::make_shared<const FileSettings>(settings_of(config.get(), path));
  return shared;
}

}  // namespace ddplint::cli
