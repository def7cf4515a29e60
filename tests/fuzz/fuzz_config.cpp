// libFuzzer harness 3: bytes -> configuration file parsing (toml++ and the
// checks of linter/config.cpp), as ddplint.toml and as pyproject.toml, then the
// selection, options and exclude patterns a parsed configuration gives for a
// few paths. Properties: no crash; an error names a line inside the file (or
// none); ConfigError::to_string never throws.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "linter/config.hpp"
#include "rules/registry.hpp"
#include "tests/fuzz/fuzz_limits.hpp"

using namespace ddplint;
namespace fs = std::filesystem;

namespace {
// a private folder per fuzzing process (libFuzzer's -jobs/-workers run several)
const fs::path& work_dir() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("ddplint-fuzz-config-" + std::to_string(::getpid()));
    fs::create_directories(d / "pkg");
    return d;
  }();
  return dir;
}

std::size_t line_count(const std::string& text) {
  std::size_t n = 1;
  for (char c : text) n += c == '\n';
  return n;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > fuzz::kMaxInputBytes) return -1;
  std::string text(reinterpret_cast<const char*>(data), size);
  for (const char* name : {"ddplint.toml", "pyproject.toml"}) {
    fs::path file = work_dir() / name;
    {
      std::ofstream out(file, std::ios::binary | std::ios::trunc);
      out.write(text.data(), static_cast<std::streamsize>(text.size()));
    }
    auto loaded = load_config(file, rules::all());
    if (const auto* err = std::get_if<ConfigError>(&loaded)) {
      if (err->line > line_count(text) + 1) {
        std::fprintf(stderr, "fuzz_config: error line %u beyond the file's %zu lines\n", err->line, line_count(text));
        std::abort();
      }
      (void)err->to_string();
      continue;
    }
    const auto& config = std::get<std::optional<Config>>(loaded);
    const Config* c = config ? &*config : nullptr;
    for (const char* rel : {"train.py", "pkg/model.py", "tests/test_x.py", ".venv/lib/x.py"}) {
      fs::path p = work_dir() / rel;
      (void)settings_for(c, p, {}, {});
      (void)settings_for(c, p, {"DDP1"}, {"DDP101"});
      (void)matches_exclude(exclude_patterns(c), p, work_dir());
    }
  }
  return 0;
}
