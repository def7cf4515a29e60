// The layers of ARCHITECTURE.md, checked on the sources: each folder includes
// only its own headers and those of the layers below it. The core (linter/)
// depends on nothing of ddplint's above it; only the program (cli/) knows
// every folder.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {
// The folders each layer may include from (by the first component of a quoted include).
const std::map<std::string, std::set<std::string>>& allowed() {
  static const std::map<std::string, std::set<std::string>> layers = {
      {"linter", {"linter"}},
      {"rules", {"linter", "rules"}},
      {"lsp", {"linter", "lsp"}},
      {"verify", {"linter", "verify"}},
      {"cli", {"linter", "rules", "lsp", "verify", "cli"}},
  };
  return layers;
}

// The folder named by each `#include "folder/..."` line of `file`.
std::vector<std::string> included_folders(const fs::path& file) {
  std::vector<std::string> folders;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    std::size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line.compare(start, 8, "#include") != 0) continue;
    std::size_t open = line.find('"', start);
    if (open == std::string::npos) continue;  // <system> headers
    std::size_t close = line.find('"', open + 1);
    std::size_t slash = line.find('/', open + 1);
    if (close == std::string::npos || slash == std::string::npos || slash > close) continue;  // generated, same folder
    folders.push_back(line.substr(open + 1, slash - open - 1));
  }
  return folders;
}
}  // namespace

TEST_CASE("each folder includes only the layers below it") {
  std::size_t files = 0, includes = 0;
  for (const auto& [layer, may_include] : allowed()) {
    fs::path dir = fs::path(DDPLINT_SOURCE_DIR) / layer;
    REQUIRE(fs::is_directory(dir));
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
      std::string ext = entry.path().extension().string();
      if (!entry.is_regular_file() || (ext != ".cpp" && ext != ".hpp" && ext != ".h" && ext != ".c")) continue;
      ++files;
      for (const std::string& folder : included_folders(entry.path())) {
        ++includes;
        CAPTURE(entry.path().string());
        CAPTURE(folder);
        CHECK(may_include.count(folder) == 1);
      }
    }
  }
  // the scan saw the sources (a wrong root would pass vacuously)
  CHECK(files > 80);
  CHECK(includes > 200);
}

TEST_CASE("the include scan reads quoted includes only") {
  fs::path tmp = fs::temp_directory_path() / "ddplint_layering_probe.cpp";
  {
    std::ofstream out(tmp);
    out << "#include <vector>\n  #include \"lsp/server.hpp\"\n#include \"rule_list.inc\"\n// #include comment\n"
           "#include \"cli/options.hpp\"  // the program\n";
  }
  std::vector<std::string> folders = included_folders(tmp);
  fs::remove(tmp);
  REQUIRE(folders.size() == 2);
  CHECK(folders[0] == "lsp");
  CHECK(folders[1] == "cli");
}
