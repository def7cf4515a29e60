// Finding the Python files behind the paths given on the command line.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace ddplint {

/// One path to lint, or one that could not be read.
struct DiscoveredPath {
  std::string path;   ///< as reached from the argument (argument + relative part)
  std::string error;  ///< non-empty: why the path could not be listed or does not exist
};

/// Says whether folder discovery leaves out a file or folder (`is_dir`),
/// given as reached from the argument.
using ExcludeFn = std::function<bool(const std::filesystem::path& path, bool is_dir)>;

/// Expands files and folders: a file is taken as given (whatever its
/// extension); a folder is searched recursively for `*.py`, leaving out what
/// `excluded` says (by default the names in kDefaultExclude: `.git`, `.venv`,
/// `venv`, `__pycache__`, `build`, `node_modules`, `site-packages`) and not
/// following symbolic links to folders (no loops). Paths named as arguments
/// are linted even if excluded, unless `force_exclude`. Results are sorted by
/// path. A missing or unreadable path yields an entry with `error` set.
std::vector<DiscoveredPath> discover(const std::vector<std::string>& arguments, const ExcludeFn& excluded = {},
                                     bool force_exclude = false);

}  // namespace ddplint
