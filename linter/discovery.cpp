#include "linter/discovery.hpp"

#include <fcntl.h>
#include <unistd.h>

#include "linter/notebook.hpp"
#include "linter/syntax.hpp"

#include "linter/config.hpp"

#include <algorithm>
#include <array>
#include <filesystem>
#include <iterator>
#include <string_view>
#include <system_error>
#include <utility>

namespace ddplint {

namespace fs = std::filesystem;

namespace {
bool default_excluded(const fs::path& path, bool /*is_dir*/) {
  std::string name = path.filename().string();
  return std::find(kDefaultExclude.begin(), kDefaultExclude.end(), name) != kDefaultExclude.end();
}

// A file a folder walk lints: `*.py`, a Jupyter notebook (`*.ipynb`: Ruff lints
// notebooks by default since 0.6.0,
// https://docs.astral.sh/ruff/configuration/#jupyter-notebook-discovery), a shell or SLURM script by extension
// (`*.sh`, `*.bash`, `*.slurm`, `*.sbatch`), or a file without an extension
// whose first line is a sh/bash shebang (only its first 128 bytes are read).
// Only a regular file is opened (a FIFO or device would block), without
// blocking, and after the exclusions (the caller checks them first).
bool lintable_name(const fs::directory_entry& entry) {
  std::string name = entry.path().filename().string();
  if (entry.path().extension() == ".py" || has_shell_extension(name) || has_notebook_extension(name)) return true;
  if (name.find('.') != std::string::npos) return false;
  std::error_code ec;
  if (!fs::is_regular_file(entry.path(), ec)) return false;  // (follows a symbolic link)
  int fd = ::open(entry.path().c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  char head[128];
  ssize_t n = ::read(fd, head, sizeof head);
  ::close(fd);
  return n > 0 && has_shell_shebang(std::string_view(head, static_cast<std::size_t>(n)));
}

}  // namespace

PathWalk::PathWalk(std::vector<std::string> arguments, ExcludeFn excluded, bool force_exclude, IncludeFn included)
    : arguments_(std::move(arguments)),
      excluded_(excluded ? std::move(excluded) : ExcludeFn(default_excluded)),
      force_exclude_(force_exclude),
      included_(std::move(included)) {}

bool PathWalk::takes(const fs::directory_entry& entry) const {
  std::optional<bool> decided = included_ ? included_(entry.path()) : std::nullopt;
  if (!decided) return lintable_name(entry);
  std::error_code ec;
  return *decided && fs::is_regular_file(entry.path(), ec);  // (follows a symbolic link; no FIFO or device)
}

void PathWalk::open(const fs::path& dir, const std::string& shown, std::string prefix) {
  std::error_code ec;
  fs::directory_iterator di(dir, ec);
  if (ec) {
    ready_.push_back({shown, ec.message()});
    return;
  }
  Folder folder{dir, std::move(prefix), {}, 0};
  for (fs::directory_iterator end; di != end;) {
    const fs::directory_entry& entry = *di;
    std::error_code e2;
    bool is_link = entry.is_symlink(e2);
    if (entry.is_directory(e2)) {
      // symbolic links to folders are not followed: no loops, no escapes
      if (!is_link && !excluded_(entry.path(), true)) folder.items.push_back({entry.path().filename().string(), true});
    } else if ((entry.is_regular_file(e2) || is_link) && !excluded_(entry.path(), false) && takes(entry)) {
      folder.items.push_back({entry.path().filename().string(), false});
    }
    di.increment(e2);
    if (e2) {  // the folder's path sorts before its entries: its error comes first
      ready_.push_back({shown, e2.message()});
      break;
    }
  }
  std::sort(folder.items.begin(), folder.items.end(), [](const Item& a, const Item& b) { return a.name < b.name; });
  stack_.push_back(std::move(folder));
}

std::optional<DiscoveredPath> PathWalk::next() {
  for (;;) {
    if (!ready_.empty()) {
      DiscoveredPath out = std::move(ready_.front());
      ready_.pop_front();
      return out;
    }
    if (!stack_.empty()) {
      Folder& folder = stack_.back();
      if (folder.at == folder.items.size()) {
        stack_.pop_back();
        continue;
      }
      const Item& item = folder.items[folder.at++];
      std::string shown = folder.prefix + item.name;
      if (!item.is_dir) return DiscoveredPath{std::move(shown), ""};
      fs::path dir = folder.path / item.name;  // (`folder` is invalidated by the push in open)
      std::string prefix = shown + '/';
      open(dir, shown, std::move(prefix));
      continue;
    }
    if (next_argument_ == arguments_.size()) return std::nullopt;
    const std::string& arg = arguments_[next_argument_++];
    std::error_code ec;
    fs::file_status st = fs::status(arg, ec);
    if (ec || !fs::exists(st)) {
      return DiscoveredPath{arg, ec && ec != std::errc::no_such_file_or_directory ? ec.message()
                                                                                  : "No such file or directory"};
    }
    if (force_exclude_ && excluded_(fs::path(arg), fs::is_directory(st))) continue;
    if (!fs::is_directory(st)) return DiscoveredPath{arg, ""};
    // entries of the argument folder: `arg/name` (`name` for `.` or an empty argument)
    std::string prefix = arg.empty() || arg == "." ? std::string() : arg.back() == '/' ? arg : arg + '/';
    open(fs::path(arg), arg, std::move(prefix));
  }
}

std::vector<DiscoveredPath> discover(const std::vector<std::string>& arguments, const ExcludeFn& excluded,
                                     bool force_exclude) {
  std::vector<DiscoveredPath> out;
  PathWalk walk(arguments, excluded, force_exclude);
  while (auto entry = walk.next()) out.push_back(std::move(*entry));
  return out;
}

}  // namespace ddplint
