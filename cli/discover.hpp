// Stage 3 of a run: the files to lint, from the paths named on the command line.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "cli/configure.hpp"
#include "cli/options.hpp"
#include "linter/discovery.hpp"
#include "linter/gitignore.hpp"

namespace ddplint::cli {

/// The paths of a run (`.` when none is named) and the walk over them:
/// folders are searched for `*.py`, leaving out each configuration's
/// `exclude` patterns and, unless told otherwise, what git ignores; a path
/// named on the command line is linted even so, unless --force-exclude.
class Discovery {
 public:
  /// Applies --force-exclude to the named paths (which reads their
  /// configurations: an error is reported through `configs`).
  Discovery(const CheckOptions& options, Configurations& configs);

  /// Resolves the configuration of every file the walk will find, and of
  /// standard input, before anything is linted: a first walk that keeps no
  /// paths. False when one has an error (reported): the run stops.
  bool check_configurations();

  /// A new walk over the files to lint, in output order.
  PathWalk walk();

  /// The paths named (`.` when none was), `-` included.
  const std::vector<std::string>& paths() const { return paths_; }

  /// --force-exclude with --stdin-filename naming a path that `exclude` or
  /// .gitignore leaves out: standard input is not linted (as Ruff's).
  bool stdin_excluded() const { return stdin_excluded_; }

 private:
  // True when folder discovery leaves `path` out (configuration excludes, .gitignore).
  bool excluded(const std::filesystem::path& path, bool is_dir);
  // --force-exclude: a named path under an excluded folder is left out.
  void force_exclude();

  const CheckOptions& options_;
  Configurations& configs_;
  std::vector<std::string> paths_;      // as named, `.` when none
  std::vector<std::string> file_args_;  // the paths to walk: `-` left out, each once
  // --force-exclude: whether `arg` (a named path) is inside an excluded or git-ignored folder
  bool force_excluded(const std::string& arg);
  GitIgnore gitignore_;
  std::filesystem::path cwd_;
  bool stdin_excluded_ = false;
  std::map<const Config*, std::vector<std::string>> patterns_of_;  // exclude patterns, per configuration
};

}  // namespace ddplint::cli
