#include "linter/gitignore.hpp"

#include <git2.h>

#include <set>

namespace ddplint {

namespace fs = std::filesystem;

GitIgnore::GitIgnore() { git_libgit2_init(); }

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
  git_repository* repo = nullptr;
  if (git_repository_open_ext(&repo, dir.c_str(), 0, nullptr) != 0) repo = nullptr;
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

bool GitIgnore::ignored(const fs::path& path, bool is_dir) {
  std::error_code ec;
  fs::path absolute = fs::absolute(path, ec).lexically_normal();
  if (ec) return false;
  std::lock_guard lock(mutex_);
  auto [real_dir, inserted] = real_directory_.try_emplace(absolute.parent_path());
  if (inserted) {
    std::error_code canonical_error;
    real_dir->second = fs::canonical(absolute.parent_path(), canonical_error);
    if (canonical_error) real_dir->second = absolute.parent_path();
  }
  absolute = real_dir->second / absolute.filename();
  git_repository* repo = repository_for(real_dir->second);
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
