// Stage 3 of a run: the paths named, exclusion, and the walk over folders.
#include "cli/discover.hpp"

#include <algorithm>
#include <cstdio>

namespace ddplint::cli {

Discovery::Discovery(const CheckOptions& options, Configurations& configs)
    : options_(options), configs_(configs), paths_(options.paths) {
  if (!options.stdin_filename.empty()) {
    // --stdin-filename reads standard input, whatever else is named (as Ruff's
    // is_stdin in crates/ruff/src/lib.rs: "Ignoring file X in favor of standard input.")
    for (const auto& p : paths_)
      if (p != "-") std::fprintf(stderr, "ddplint: warning: ignoring %s in favor of standard input (--stdin-filename)\n", p.c_str());
    paths_ = {"-"};
  }
  if (paths_.empty()) paths_.push_back(".");
  for (const auto& p : paths_) {
    // a path given twice is linted once
    if (p != "-" && std::find(file_args_.begin(), file_args_.end(), p) == file_args_.end()) file_args_.push_back(p);
  }
  std::error_code cwd_error;
  cwd_ = std::filesystem::current_path(cwd_error);
  if (options_.force_exclude) force_exclude();
  if (options_.force_exclude && !options.stdin_filename.empty()) {
    // Ruff's --force-exclude holds for --stdin-filename too (astral-sh/ruff#1343):
    // the text is not linted, and --fix prints it back unchanged
    const std::string& name = options.stdin_filename;
    std::filesystem::path absolute = (std::filesystem::path(name).is_absolute() ? std::filesystem::path(name) : cwd_ / name).lexically_normal();
    stdin_excluded_ = force_excluded(name) || excluded(absolute, false);
    if (stdin_excluded_ && !options_.quiet)
      std::fprintf(stderr, "ddplint: note: standard input (%s) is left out: --force-exclude applies `exclude` and .gitignore to it\n",
                   name.c_str());
  }
}

bool Discovery::excluded(const std::filesystem::path& path, bool is_dir) {
  std::shared_ptr<const Config> config;
  if (!configs_.config_of(path.string(), config)) return false;  // reported; the run stops before linting
  std::filesystem::path absolute = (path.is_absolute() ? path : cwd_ / path).lexically_normal();
  const std::filesystem::path& base = config ? config->directory : cwd_;
  auto patterns = patterns_of_.find(config.get());
  if (patterns == patterns_of_.end()) patterns = patterns_of_.emplace(config.get(), exclude_patterns(config.get())).first;
  if (matches_exclude(patterns->second, absolute, base)) return true;
  bool respect = options_.respect_gitignore.value_or(config ? config->respect_gitignore : true);
  return respect && gitignore_.ignored(absolute, is_dir);
}

void Discovery::force_exclude() {
  // a path named on the command line under an excluded folder (`generated/c.py`
  // with `exclude = ["generated"]`; a pre-commit hook names files) is left out
  // as the folder walk would leave it out: its folders between the
  // configuration's folder (or the working directory) and the file are checked
  std::erase_if(file_args_, [&](const std::string& arg) {
    bool out = force_excluded(arg);
    // a path named but left out gets a word on stderr (quietly, pre-commit hooks name every staged file)
    if (out && !options_.quiet)
      std::fprintf(stderr, "ddplint: note: %s is left out: --force-exclude applies `exclude` and .gitignore to it\n", arg.c_str());
    return out;
  });
}

bool Discovery::force_excluded(const std::string& arg) {
  std::filesystem::path absolute =
      (std::filesystem::path(arg).is_absolute() ? std::filesystem::path(arg) : cwd_ / arg).lexically_normal();
  std::shared_ptr<const Config> config;
  if (!configs_.config_of(absolute.string(), config)) return false;  // reported; the run stops before linting
  const std::filesystem::path base = config ? config->directory : cwd_;
  for (std::filesystem::path dir = absolute.parent_path(); dir != dir.parent_path(); dir = dir.parent_path()) {
    std::string relative = dir.lexically_relative(base).generic_string();
    if (relative.empty() || relative == "." || relative.rfind("..", 0) == 0) break;  // the project's folders only
    if (excluded(dir, true)) return true;
  }
  return false;
}

bool Discovery::check_configurations() {
  // Every file's configuration is resolved before any is linted: a bad
  // configuration stops the run. This first walk keeps no paths: the lint walks
  // again, so memory holds the folders being walked, not every path of the run.
  {
    // the folders the lint will walk, and the configuration of each file found
    // in them (as the lint's walk resolves it); the files' own exclusion is
    // left to the lint's walk: it cannot change which configuration governs them
    auto folders_only = [&](const std::filesystem::path& path, bool is_dir) {
      if (is_dir) return excluded(path, true);
      std::shared_ptr<const Config> config;
      configs_.config_of(path.string(), config);  // errors are collected by configs_
      return true;
    };
    PathWalk check(file_args_, folders_only, options_.force_exclude);
    while (auto entry = check.next()) {
      std::shared_ptr<const Config> config;
      if (entry->error.empty()) configs_.config_of(entry->path, config);  // files named as arguments
    }
  }
  if (configs_.had_errors()) return false;
  // a folder named on the command line that git ignores holds nothing the
  // walk lints: say so, and how to lint it (Ruff is silent here; a "0 files" run
  // was the trap)
  for (const std::string& arg : file_args_) {
    std::error_code ec;
    if (!std::filesystem::is_directory(arg, ec)) continue;
    std::filesystem::path absolute =
        (std::filesystem::path(arg).is_absolute() ? std::filesystem::path(arg) : cwd_ / arg).lexically_normal();
    std::shared_ptr<const Config> config;
    if (!configs_.config_of((absolute / "-").string(), config)) continue;
    bool respect = options_.respect_gitignore.value_or(config ? config->respect_gitignore : true);
    if (respect && gitignore_.ignored(absolute, true))
      std::fprintf(stderr,
                   "ddplint: note: %s is ignored by git (.gitignore), so nothing in it is linted; "
                   "lint it with --no-respect-gitignore\n",
                   arg.c_str());
  }
  if (std::find(paths_.begin(), paths_.end(), "-") != paths_.end()) {
    std::shared_ptr<const Config> config;  // standard input's, from --stdin-filename's folder
    if (!configs_.config_of(options_.stdin_filename.empty() ? "stdin.py" : options_.stdin_filename, config)) return false;
  }
  return true;
}

PathWalk Discovery::walk() {
  return PathWalk(
      file_args_, [this](const std::filesystem::path& path, bool is_dir) { return excluded(path, is_dir); },
      options_.force_exclude, [this](const std::filesystem::path& path) -> std::optional<bool> {
        std::shared_ptr<const Config> config;
        if (!configs_.config_of(path.string(), config)) return false;  // reported; the run stops before linting
        return included_by(config.get(), (path.is_absolute() ? path : cwd_ / path).lexically_normal());
      });
}

}  // namespace ddplint::cli
