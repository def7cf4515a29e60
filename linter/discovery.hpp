// Finding the Python files behind the paths given on the command line.
#pragma once

#include <string>
#include <vector>

namespace ddplint {

/// One path to lint, or one that could not be read.
struct DiscoveredPath {
  std::string path;   ///< as reached from the argument (argument + relative part)
  std::string error;  ///< non-empty: why the path could not be listed or does not exist
};

/// Expands files and folders: a file is taken as given (whatever its
/// extension); a folder is searched recursively for `*.py`, skipping `.git`,
/// `.venv`, `venv`, `__pycache__`, `build`, `node_modules` and `site-packages`
/// and not following symbolic links to folders (no loops). Results are sorted
/// by path. A missing or unreadable path yields an entry with `error` set.
std::vector<DiscoveredPath> discover(const std::vector<std::string>& arguments);

}  // namespace ddplint
