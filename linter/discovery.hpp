// Finding the Python files behind the paths given on the command line.
#pragma once

#include <filesystem>
#include <deque>
#include <functional>
#include <optional>
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

/// Says whether a folder walk takes a file the exclusions leave in (given as
/// reached from the argument): true or false as a configuration's `include`
/// and `extend-include` patterns decide, or std::nullopt for the default
/// (Python files and launch scripts).
using IncludeFn = std::function<std::optional<bool>(const std::filesystem::path& path)>;

/// Expands files and folders, one path at a time: a file is taken as given
/// (whatever its extension); a folder is searched recursively for `*.py`, `*.ipynb` and
/// launch scripts (`*.sh`, `*.bash`, `*.slurm`, `*.sbatch`, and files without
/// an extension that start with a sh/bash shebang; or what `included` says), leaving out what `excluded` says (by default the names in kDefaultExclude:
/// `.git`, `.venv`, `venv`, `__pycache__`, `build`, `node_modules`,
/// `site-packages`, `.ipynb_checkpoints`) and not following symbolic links to folders (no loops).
/// Paths named as arguments are linted even if excluded, unless
/// `force_exclude`. Arguments come in the order given; the paths found under a
/// folder come sorted by path, one component at a time (`a/b.py` before
/// `a.py`: each folder's entries in byte order of their names, a folder's
/// contents where its name sorts). A missing or unreadable path yields an
/// entry with `error` set, where its path sorts.
/// Memory holds the sorted listings of the folders being walked (their
/// depth times their width), not every path found: a run over a million
/// files does not hold a million paths.
class PathWalk {
 public:
  PathWalk(std::vector<std::string> arguments, ExcludeFn excluded = {}, bool force_exclude = false,
           IncludeFn included = {});
  /// The next path, or std::nullopt when every argument is walked.
  std::optional<DiscoveredPath> next();

 private:
  struct Item {
    std::string name;
    bool is_dir = false;
  };
  struct Folder {
    std::filesystem::path path;  // as reached from the argument (for listing and `excluded`)
    std::string prefix;          // the shown path of its entries before their names
    std::vector<Item> items;     // sorted by name
    std::size_t at = 0;          // next item to hand out
  };
  // Lists `dir` (shown as `shown`, its entries as `prefix` + name): pushes its
  // folder, or queues an error entry.
  void open(const std::filesystem::path& dir, const std::string& shown, std::string prefix);
  // Whether a file of a listed folder is one to lint (included_, else the default).
  bool takes(const std::filesystem::directory_entry& entry) const;
  std::vector<std::string> arguments_;
  std::size_t next_argument_ = 0;
  std::vector<Folder> stack_;
  std::deque<DiscoveredPath> ready_;  // error entries met while listing, handed out first
  ExcludeFn excluded_;
  bool force_exclude_ = false;
  IncludeFn included_;
};

/// Every path PathWalk gives, in its order (for tools and tests; the CLI walks
/// one path at a time).
std::vector<DiscoveredPath> discover(const std::vector<std::string>& arguments, const ExcludeFn& excluded = {},
                                     bool force_exclude = false);

}  // namespace ddplint
