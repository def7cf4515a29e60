// Stage 2 of a run: which configuration, rule selection and rule options govern each file.
#pragma once

#include <map>
#include <tuple>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "cli/options.hpp"
#include "linter/config.hpp"

namespace ddplint::cli {

/// The configurations of a run: none with --isolated, the one file of
/// --config for every path, else the closest configuration file to each path
/// (linter/config.hpp). Each configuration error is printed to stderr once.
class Configurations {
 public:
  Configurations(const CheckOptions& options, std::span<const Rule> rules);

  /// Checks --select and --ignore against the rules and loads --config.
  /// False when one is wrong (reported on stderr): the run stops.
  bool resolve_arguments();

  /// The configuration of `path` into `out` (nullptr: none applies). False
  /// on a configuration error, printed the first time it is met.
  bool config_of(const std::string& path, std::shared_ptr<const Config>& out);

  /// True once some configuration error has been reported.
  bool had_errors() const { return !errors_.empty(); }

  /// The rules and options for `path` under `config` (nullable), with the
  /// command line's --select/--ignore on top. Without a `line-length` in
  /// `config`, the line length of Ruff's configuration closest to `path`
  /// (none with --isolated).
  FileSettings settings_of(const Config* config, const std::string& path);

  /// settings_of(), shared by every file of a configuration without
  /// per-file-ignores under one Ruff configuration (one caller at a time).
  std::shared_ptr<const FileSettings> shared_settings_of(const std::shared_ptr<const Config>& config,
                                                         const std::string& path);

 private:
  using Answer = std::variant<std::shared_ptr<const Config>, ConfigError>;
  const CheckOptions& options_;
  std::span<const Rule> rules_;
  std::vector<std::string> select_, extend_select_, ignore_;  // the codes of --select/--extend-select/--ignore, split
  std::shared_ptr<const Config> fixed_config_;  // --config
  ConfigResolver resolver_;
  std::vector<std::string> errors_;  // each reported once
  std::optional<std::pair<std::string, Answer>> last_folder_;  // the last folder's answer
  // the last folder's Ruff configuration (as last_folder_)
  std::optional<std::pair<std::string, std::shared_ptr<const RuffLineLength>>> last_ruff_folder_;
  // the last folder's torch declaration (as last_folder_)
  std::optional<std::pair<std::string, std::shared_ptr<const TorchSupport>>> last_torch_folder_;
  std::map<std::tuple<const Config*, const RuffLineLength*, const TorchSupport*>, std::shared_ptr<const FileSettings>>
      shared_settings_;

  /// Ruff's configuration closest to `path` (nullptr: none, or --isolated),
  /// when `config` (nullable) sets no line-length.
  std::shared_ptr<const RuffLineLength> ruff_of(const Config* config, const std::string& path);
  /// What the project of `path` declares about torch (ConfigResolver::torch_declared_for; nullptr: nothing).
  std::shared_ptr<const TorchSupport> torch_of(const std::string& path);
};

}  // namespace ddplint::cli
