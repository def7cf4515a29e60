// What git ignores, asked of libgit2 (Debian's libgit2-dev): .gitignore files
// at every level, .git/info/exclude and the user's core.excludesFile.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>
#include <mutex>

struct git_repository;

namespace ddplint {

/// Answers "would git ignore this path?" for paths in any repository, opening
/// each repository once. Paths outside a repository are never ignored.
/// Thread-safe (one lock around libgit2 calls).
class GitIgnore {
 public:
  GitIgnore();
  ~GitIgnore();
  GitIgnore(const GitIgnore&) = delete;
  GitIgnore& operator=(const GitIgnore&) = delete;

  /// True if git ignores `path` (a file, or a folder when `is_dir`), as
  /// `git check-ignore --no-index` would say. Errors (an unreadable
  /// repository) count as not ignored.
  bool ignored(const std::filesystem::path& path, bool is_dir);

 private:
  git_repository* repository_for(const std::filesystem::path& dir);

  std::mutex mutex_;
  /// GIT_CEILING_DIRECTORIES as given (for libgit2), or empty; and its absolute
  /// entries with symbolic links resolved: discovery never walks up into one
  std::string ceiling_dirs_;
  std::vector<std::filesystem::path> ceilings_;
  std::map<std::filesystem::path, git_repository*> by_directory_;  ///< nullptr: not in a repository
  /// folder as reached -> the same folder with symbolic links resolved (libgit2's
  /// working directories are real paths; a path through a link must match them)
  std::map<std::filesystem::path, std::filesystem::path> real_directory_;
  // `dir` (absolute, normal) with symbolic links resolved, cached per folder; mutex_ held
  std::filesystem::path real_directory(const std::filesystem::path& dir);
};

}  // namespace ddplint
