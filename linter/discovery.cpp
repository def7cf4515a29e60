#include "linter/discovery.hpp"

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

std::string join(const std::string& base, const fs::path& rel) {
  if (base.empty() || base == ".") return rel.generic_string();
  std::string out = base;
  if (out.back() != '/') out += '/';
  return out + rel.generic_string();
}
}  // namespace

std::vector<DiscoveredPath> discover(const std::vector<std::string>& arguments, const ExcludeFn& excluded_fn,
                                     bool force_exclude) {
  const ExcludeFn& excluded = excluded_fn ? excluded_fn : ExcludeFn(default_excluded);
  std::vector<DiscoveredPath> out;
  for (const std::string& arg : arguments) {
    std::error_code ec;
    fs::file_status st = fs::status(arg, ec);
    if (ec || !fs::exists(st)) {
      out.push_back({arg, ec && ec != std::errc::no_such_file_or_directory ? ec.message()
                                                                             : "No such file or directory"});
      continue;
    }
    if (force_exclude && excluded(fs::path(arg), fs::is_directory(st))) continue;
    if (!fs::is_directory(st)) {
      out.push_back({arg, ""});
      continue;
    }
    std::vector<DiscoveredPath> found;
    std::vector<fs::path> pending{fs::path(arg)};
    while (!pending.empty()) {
      fs::path dir = std::move(pending.back());
      pending.pop_back();
      std::string shown = join(arg, dir.lexically_relative(arg));
      if (dir == fs::path(arg)) shown = arg;
      fs::directory_iterator di(dir, ec);
      if (ec) {
        found.push_back({shown, ec.message()});
        continue;
      }
      for (fs::directory_iterator end; di != end;) {
        const fs::directory_entry& entry = *di;
        std::error_code e2;
        bool is_link = entry.is_symlink(e2);
        std::string name = entry.path().filename().string();
        if (entry.is_directory(e2)) {
          // symbolic links to folders are not followed: no loops, no escapes
          if (!is_link && !excluded(entry.path(), true)) pending.push_back(entry.path());
        } else if (entry.path().extension() == ".py" && (entry.is_regular_file(e2) || is_link) &&
                   !excluded(entry.path(), false)) {
          found.push_back({join(arg, entry.path().lexically_relative(arg)), ""});
        }
        di.increment(e2);
        if (e2) {
          found.push_back({shown, e2.message()});
          break;
        }
      }
    }
    std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
    out.insert(out.end(), std::make_move_iterator(found.begin()), std::make_move_iterator(found.end()));
  }
  return out;
}

}  // namespace ddplint
