// Configuration files: `[tool.ddplint]` in pyproject.toml, or ddplint.toml /
// .ddplint.toml with the same keys at the top level (Ruff's conventions).
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "linter/diagnostic.hpp"
#include "linter/selection.hpp"

namespace ddplint {

/// One configuration file's settings.
struct Config {
  std::filesystem::path file;       ///< where it was read from
  std::filesystem::path directory;  ///< its folder: per-file-ignores patterns are relative to it
  std::vector<std::string> select;         ///< `select`: replaces the default (every rule)
  bool select_given = false;               ///< `select` is present (`select = []` selects nothing)
  std::vector<std::string> extend_select;  ///< `extend-select`: added to `select`
  std::vector<std::string> ignore;         ///< `ignore`
  /// `per-file-ignores`: glob pattern → codes, in file order.
  std::vector<std::pair<std::string, std::vector<std::string>>> per_file_ignores;
  /// `exclude`: glob patterns of files and folders folder discovery skips
  /// (replaces the defaults, kDefaultExclude); std::nullopt: the defaults.
  std::optional<std::vector<std::string>> exclude;
  std::vector<std::string> extend_exclude;  ///< `extend-exclude`: added to `exclude`
  /// `include`: glob patterns of the files folder discovery lints (replaces
  /// the default: Python files and launch scripts); std::nullopt: the default.
  std::optional<std::vector<std::string>> include;
  /// `extend-include`: patterns of files linted besides `include`'s
  /// (`["*.md"]`: the shell blocks of Markdown files).
  std::vector<std::string> extend_include;
  bool respect_gitignore = true;            ///< `respect-gitignore`: skip what git ignores
  RuleOptions options;                      ///< rule options: `tiny-batch-threshold`, `line-length` (0: not set)
  /// The file whose `line-length` options.line_length is (this one or one it
  /// extends); empty when no ddplint configuration sets it.
  std::filesystem::path line_length_file;
  /// `target-torch`: the oldest PyTorch release the project supports
  /// (options.torch, lowest set, no upper bound); it wins over what the
  /// project declares. Unset: the declaration.
  std::optional<TorchSupport> target_torch;
  /// `output-format`: the report's format when the command line gives none
  /// (read from the configuration of the working folder, or --config).
  std::optional<std::string> output_format;
  /// `fixable`: rules whose fixes --fix applies (default every rule, `["ALL"]`);
  /// `unfixable`: rules whose fixes it never applies (Ruff's keys).
  std::vector<std::string> fixable{"ALL"}, unfixable;
  /// The rule selections of the configurations this one extends (`extend`),
  /// outermost first: each a layer under this one's (Ruff's `extend`).
  struct SelectionLayer {
    std::vector<std::string> select, extend_select, ignore;
    bool select_given = false;
  };
  std::vector<SelectionLayer> base_layers;
  /// The configuration files read through `extend`, outermost first.
  std::vector<std::filesystem::path> extends;
};

/// Folders and files skipped by folder discovery unless `exclude` says otherwise.
/// (`.ipynb_checkpoints`: Jupyter's autosaved copies of notebooks, as Ruff's defaults.)
inline const std::vector<std::string> kDefaultExclude = {".git", ".venv", "venv", "__pycache__",
                                                         "build", "node_modules", "site-packages",
                                                         ".ipynb_checkpoints"};

/// The exclude patterns in force under `config` (nullable: the defaults).
std::vector<std::string> exclude_patterns(const Config* config);

/// Whether folder discovery lints file `path` (absolute) under `config`
/// (nullable): true when it matches `extend-include`, or `include` where
/// given; false when `include` is given and does not match; std::nullopt
/// when neither says (the default: Python files and launch scripts).
/// Patterns match as in matches_exclude.
std::optional<bool> included_by(const Config* config, const std::filesystem::path& path);

/// True if `path` (absolute) matches one of `patterns` (fnmatch globs where
/// `*` also crosses `/`): against its file or folder name, or against its
/// path relative to `base` (the configuration's folder).
bool matches_exclude(const std::vector<std::string>& patterns, const std::filesystem::path& path,
                     const std::filesystem::path& base);

/// A line length set by Ruff's configuration, and where.
struct RuffLineLength {
  std::uint32_t length = 0;     ///< `line-length`; 0 when the file sets none (or an unusable one)
  std::filesystem::path file;   ///< the pyproject.toml, ruff.toml or .ruff.toml it was read from
  /// `FILE [tool.ruff]` for a pyproject.toml, `FILE` for a ruff.toml.
  std::string describe() const;
};

/// Reads Ruff's `line-length` from one file: `[tool.ruff]` of a
/// pyproject.toml, the top level of a ruff.toml or .ruff.toml. std::nullopt
/// when the file is not a Ruff configuration (missing, unreadable, not TOML, a
/// pyproject.toml without `[tool.ruff]`); a Ruff configuration without a usable
/// `line-length` (an integer from 1 to 1000) gives length 0. Ruff's own
/// `extend` is not followed. Never an error: Ruff's files are Ruff's to check.
std::optional<RuffLineLength> load_ruff_line_length(const std::filesystem::path& file);

/// A configuration file that cannot be used: where and why.
struct ConfigError {
  std::string file;
  std::uint32_t line = 0;    ///< 1-based; 0 when the problem has no line (unreadable file)
  std::uint32_t column = 0;  ///< 1-based
  std::string message;
  /// `file:line:column: message` (or `file: message`).
  std::string to_string() const;
};

/// Reads one configuration file and checks it against `rules`: unknown keys,
/// wrong types, unknown codes and malformed TOML are errors naming the line.
/// A pyproject.toml without a `[tool.ddplint]` table gives std::nullopt (it is
/// not a ddplint configuration); so does a missing file. Its `[tool.ruff]` is
/// not read here (load_ruff_line_length).
std::variant<std::optional<Config>, ConfigError> load_config(const std::filesystem::path& file,
                                                             std::span<const Rule> rules);

/// The rule selection for `file` under `config` (nullable), with the command
/// line's or the editor's `select`/`extend_select`/`ignore` on top, and the per-file ignores
/// matching `file` last. Patterns match the path relative to the
/// configuration's folder, or the file name alone (`*` also crosses `/`).
RuleSelection selection_for(const Config* config, const std::filesystem::path& file,
                            const std::vector<std::string>& select, const std::vector<std::string>& ignore,
                            const std::vector<std::string>& extend_select = {});

/// What one file is linted with: the rules selected for it and the rule options.
struct FileSettings {
  RuleSelection selection;
  RuleOptions options;
  RuleSelection fixable;  ///< the rules whose fixes apply (`fixable` minus `unfixable`); every rule by default
  /// Where options.line_length came from (`/p/ddplint.toml`,
  /// `/p/pyproject.toml [tool.ruff]`); empty when it is 0 (not set).
  std::string line_length_origin;
  /// What the project declares about torch (ConfigResolver::torch_declared_for),
  /// shown by --show-settings beside `target-torch`; empty when nothing is declared.
  TorchSupport declared_torch;
};

/// selection_for() and the configuration's rule options (defaults without
/// one). The line length is the configuration's `line-length`, else that of
/// `ruff` (nullable: Ruff's configuration closest to the file,
/// ConfigResolver::ruff_line_length_for), else none (0).
///
/// options.torch is the configuration's `target-torch`, else `declared`
/// (nullable: nothing declared; ConfigResolver::torch_declared_for).
FileSettings settings_for(const Config* config, const std::filesystem::path& file,
                          const std::vector<std::string>& select, const std::vector<std::string>& ignore,
                          const std::vector<std::string>& extend_select = {}, const RuffLineLength* ruff = nullptr,
                          const TorchSupport* declared = nullptr);

/// Finds and caches the configuration closest to each linted file: the first
/// folder, from the file's own upwards, holding `.ddplint.toml`,
/// `ddplint.toml` or a `pyproject.toml` with `[tool.ddplint]` (checked in that
/// order). Thread-safe; each file is read once.
class ConfigResolver {
 public:
  explicit ConfigResolver(std::span<const Rule> rules) : rules_(rules) {}
  /// The configuration governing `file` (nullptr when there is none), or the
  /// error of the closest configuration file.
  std::variant<std::shared_ptr<const Config>, ConfigError> for_file(const std::filesystem::path& file);
  /// Ruff's configuration closest to `file`, as Ruff finds it: the first
  /// folder, from the file's own upwards, holding `.ruff.toml`, `ruff.toml` or
  /// a `pyproject.toml` with `[tool.ruff]` (in that order), whether or not a
  /// ddplint configuration exists. nullptr when there is none; its length is 0
  /// when the closest one sets no `line-length`. The same pointer for every
  /// file under one Ruff configuration, until clear().
  std::shared_ptr<const RuffLineLength> ruff_line_length_for(const std::filesystem::path& file);
  /// What the project of `file` declares about torch: the first folder, from
  /// the file's own upwards, whose files declare it (declared_torch_in),
  /// stopping after the project's root (a folder holding pyproject.toml,
  /// .git, setup.py or setup.cfg). nullptr when nothing on the way does. The
  /// same pointer for every file under one declaration, until clear().
  std::shared_ptr<const TorchSupport> torch_declared_for(const std::filesystem::path& file);
  /// Forgets everything read (a configuration file changed).
  void clear();

 private:
  std::variant<std::shared_ptr<const Config>, ConfigError> for_directory(const std::filesystem::path& dir);
  std::shared_ptr<const RuffLineLength> ruff_for_directory(const std::filesystem::path& dir);
  std::shared_ptr<const TorchSupport> torch_for_directory(const std::filesystem::path& dir);

  /// Folders looked at above a file, at most (a path from a file system is
  /// far shorter; an editor may send any URI).
  static constexpr std::size_t kMaxAncestors = 256;

  std::span<const Rule> rules_;
  std::mutex mutex_;
  std::map<std::filesystem::path, std::variant<std::shared_ptr<const Config>, ConfigError>> by_directory_;
  std::map<std::filesystem::path, std::shared_ptr<const RuffLineLength>> ruff_by_directory_;
  std::map<std::filesystem::path, std::shared_ptr<const TorchSupport>> torch_by_directory_;
};

}  // namespace ddplint
