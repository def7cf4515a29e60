#include "linter/gitignore.hpp"

#include <vector>
#include <git2.h>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <set>
#include <string_view>

namespace ddplint {

namespace fs = std::filesystem;

GitIgnore::GitIgnore() {
  git_libgit2_init();
  // As git: a colon-separated list of absolute paths that repository
  // discovery does not walk up into (the folder discovery starts from may be one).
  if (const char* env = std::getenv("GIT_CEILING_DIRECTORIES")) {
    ceiling_dirs_ = env;
    std::string_view rest = ceiling_dirs_;
    while (!rest.empty()) {
      std::size_t colon = std::min(rest.find(':'), rest.size());
      fs::path entry(rest.substr(0, colon));
      rest.remove_prefix(std::min(colon + 1, rest.size()));
      if (!entry.is_absolute()) continue;  // git ignores the others (and an empty entry's meaning: links are resolved here)
      std::error_code ec;
      fs::path real = fs::canonical(entry, ec);
      ceilings_.push_back((ec ? entry : real).lexically_normal());
    }
  }
}

GitIgnore::~GitIgnore() {
  std::set<git_repository*> repos;
  for (auto& [dir, repo] : by_directory_)
    if (repo != nullptr) repos.insert(repo);
  for (git_repository* repo : repos) git_repository_free(repo);
  git_libgit2_shutdown();
}

git_repository* GitIgnore::repository_for(const fs::path& dir) {
  auto it = by_directory_.find(dir);
  if (it != by_directory_.end()) return it->second;
  // A folder without a `.git` entry, on its parent's file system, is in its
  // parent's repository (or in none): git's own discovery walks up the same
  // way. Asking libgit2 for every folder walked up the whole path each time,
  // quadratic in the depth (found by hostile testing). Iterative: no
  // recursion however deep the folders.
  std::vector<fs::path> inheriting;  // folders that take their parent's answer, deepest first
  fs::path at = dir;
  for (;;) {
    fs::path parent = at.parent_path();
    if (parent.empty() || parent == at) break;
    if (std::find(ceilings_.begin(), ceilings_.end(), parent) != ceilings_.end()) break;  // libgit2 decides, below the ceiling
    struct stat here {}, up {}, git {};
    if (::stat(at.c_str(), &here) != 0 || ::stat(parent.c_str(), &up) != 0 || here.st_dev != up.st_dev ||
        ::lstat((at / ".git").c_str(), &git) == 0 || errno != ENOENT)
      break;
    inheriting.push_back(at);
    at = std::move(parent);
    if (by_directory_.count(at) > 0) break;
  }
  if (!inheriting.empty()) {
    git_repository* inherited = repository_for(at);  // cached, or a folder that needs libgit2: no further descent
    for (const fs::path& folder : inheriting) by_directory_.emplace(folder, inherited);
    return inherited;
  }
  git_repository* repo = nullptr;
  if (git_repository_open_ext(&repo, dir.c_str(), 0, ceiling_dirs_.empty() ? nullptr : ceiling_dirs_.c_str()) != 0)
    repo = nullptr;
  if (repo != nullptr && git_repository_is_bare(repo)) {
    git_repository_free(repo);
    repo = nullptr;
  }
  if (repo != nullptr) {
    // one handle per repository: folders of a repository already open share it
    const char* workdir = git_repository_workdir(repo);
    for (auto& [other_dir, other] : by_directory_) {
      if (other != nullptr && workdir != nullptr && git_repository_workdir(other) != nullptr &&
          std::string_view(git_repository_workdir(other)) == workdir) {
        git_repository_free(repo);
        repo = other;
        break;
      }
    }
  }
  by_directory_.emplace(dir, repo);
  return repo;
}

fs::path GitIgnore::real_directory(const fs::path& dir) {
  // A folder's real path is its parent's real path and its own name, unless
  // the folder itself is a symbolic link: one lstat per new folder, where
  // fs::canonical per folder resolved every ancestor again (quadratic in the
  // depth: 800 nested folders took 13 s; found by hostile testing).
  std::vector<fs::path> chain;  // uncached folders, deepest first
  fs::path at = dir;
  fs::path base;
  for (;;) {
    auto it = real_directory_.find(at);
    if (it != real_directory_.end()) {
      base = it->second;
      break;
    }
    chain.push_back(at);
    fs::path parent = at.parent_path();
    if (parent.empty() || parent == at) break;  // the root: resolved below
    at = std::move(parent);
  }
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const fs::path& folder = *it;
    std::error_code ec;
    fs::path real;
    if (base.empty() || fs::is_symlink(folder, ec) || ec) {
      real = fs::canonical(folder, ec);
      if (ec) real = folder;
    } else {
      real = base / folder.filename();
    }
    real_directory_.emplace(folder, real);
    base = std::move(real);
  }
  return base;
}

bool GitIgnore::ignored(const fs::path& path, bool is_dir) {
  std::error_code ec;
  fs::path absolute = fs::absolute(path, ec).lexically_normal();
  if (ec) return false;
  std::lock_guard lock(mutex_);
  const fs::path real_dir = real_directory(absolute.parent_path());
  absolute = real_dir / absolute.filename();
  git_repository* repo = repository_for(real_dir);
  if (repo == nullptr || git_repository_workdir(repo) == nullptr) return false;
  fs::path workdir = fs::path(git_repository_workdir(repo)).lexically_normal();
  std::string relative = absolute.lexically_relative(workdir).generic_string();
  if (relative.empty() || relative == "." || relative.rfind("..", 0) == 0) return false;
  if (is_dir) relative += '/';
  int ignored = 0;
  if (git_ignore_path_is_ignored(&ignored, repo, relative.c_str()) != 0) return false;
  return ignored == 1;
}

}  // namespace ddplint
