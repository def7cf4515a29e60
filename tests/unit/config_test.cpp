// Configuration files: parsing, errors with lines, closest-file discovery,
// and how configuration, command line and per-file ignores combine.
#include <doctest/doctest.h>

#include <fstream>

#include "linter/config.hpp"
#include "linter/selection.hpp"
#include "rules/registry.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ddplint;
namespace fs = std::filesystem;
using ddplint_test::TempDir;

namespace {
ConfigError error_of(const fs::path& p) {
  auto r = load_config(p, rules::all());
  REQUIRE(std::holds_alternative<ConfigError>(r));
  return std::get<ConfigError>(r);
}
Config config_of(const fs::path& p) {
  auto r = load_config(p, rules::all());
  REQUIRE(std::holds_alternative<std::optional<Config>>(r));
  REQUIRE(std::get<std::optional<Config>>(r).has_value());
  return *std::get<std::optional<Config>>(r);
}
}  // namespace

TEST_CASE("config: keys of ddplint.toml and [tool.ddplint]") {
  TempDir s;
  Config c = config_of(s.write("ddplint.toml",
                               "select = [\"DDP1\", \"DDP4\"]\nextend-select = [\"DDP201\"]\nignore = [\"DDP103\"]\n"
                               "[per-file-ignores]\n\"tests/*\" = [\"DDP4\"]\n\"__init__.py\" = [\"DDP101\"]\n"));
  CHECK(c.select == std::vector<std::string>{"DDP1", "DDP4"});
  CHECK(c.extend_select == std::vector<std::string>{"DDP201"});
  CHECK(c.ignore == std::vector<std::string>{"DDP103"});
  REQUIRE(c.per_file_ignores.size() == 2);
  Config p = config_of(s.write("py/pyproject.toml", "[project]\nname = \"x\"\n[tool.ddplint]\nignore = [\"DDP5\"]\n"));
  CHECK(p.ignore == std::vector<std::string>{"DDP5"});
  // a pyproject.toml without [tool.ddplint] is not a ddplint configuration
  auto none = load_config(s.write("other/pyproject.toml", "[tool.ruff]\nline-length = 100\n"), rules::all());
  REQUIRE(std::holds_alternative<std::optional<Config>>(none));
  CHECK_FALSE(std::get<std::optional<Config>>(none).has_value());
}

TEST_CASE("config errors name the file, line and column") {
  TempDir s;
  ConfigError unknown = error_of(s.write("a/ddplint.toml", "select = [\"DDP1\"]\n\ntarget-version = 311\n"));
  CHECK(unknown.line == 3);
  CHECK(unknown.message.find("unknown key `target-version`") != std::string::npos);
  CHECK(unknown.to_string().find("ddplint.toml:3:1: unknown key") != std::string::npos);
  // line-length is a key now (issue 26); [tool.ruff]'s is not the configuration's own (load_ruff_line_length)
  Config g = config_of(s.write("g/ddplint.toml", "line-length = 88\n"));
  CHECK(g.options.line_length == 88);
  CHECK(g.line_length_file == s.path / "g/ddplint.toml");
  CHECK(config_of(s.write("h/pyproject.toml", "[tool.ddplint]\n\n[tool.ruff]\nline-length = 100\n")).options.line_length == 0);
  CHECK(config_of(s.write("i/pyproject.toml", "[tool.ddplint]\nline-length = 79\n\n[tool.ruff]\nline-length = 100\n"))
            .options.line_length == 79);
  ConfigError type = error_of(s.write("b/ddplint.toml", "ignore = \"DDP101\"\n"));
  CHECK(type.line == 1);
  CHECK(type.message.find("must be an array") != std::string::npos);
  ConfigError code = error_of(s.write("c/ddplint.toml", "ignore = [\n  \"DDP101\",\n  \"XYZ1\",\n]\n"));
  CHECK(code.line == 3);
  CHECK(code.message.find("'XYZ1'") != std::string::npos);
  ConfigError toml = error_of(s.write("d/pyproject.toml", "[tool.ddplint\nselect = 1\n"));
  CHECK(toml.line == 1);
  ConfigError pfi = error_of(s.write("e/ddplint.toml", "per-file-ignores = [\"x\"]\n"));
  CHECK(pfi.message.find("per-file-ignores") != std::string::npos);
  ConfigError nested = error_of(s.write("f/pyproject.toml", "[tool]\nddplint = 3\n"));
  CHECK(nested.line == 2);
}

TEST_CASE("selection layers: configuration, then command line, then per-file ignores") {
  Config c;
  c.directory = "/proj";
  c.select = {"DDP1"};
  c.extend_select = {"DDP401"};
  c.ignore = {"DDP103"};
  c.per_file_ignores = {{"tests/*", {"DDP101"}}, {"conftest.py", {"DDP401"}}};
  RuleSelection s = selection_for(&c, "/proj/train.py", {}, {});
  CHECK(s.enabled("DDP101"));
  CHECK(s.enabled("DDP401"));
  CHECK_FALSE(s.enabled("DDP103"));
  CHECK_FALSE(s.enabled("DDP201"));
  // the command line's select replaces the configuration's; its ignore adds
  RuleSelection cli = selection_for(&c, "/proj/train.py", {"DDP2"}, {});
  CHECK(cli.enabled("DDP201"));
  CHECK_FALSE(cli.enabled("DDP101"));
  CHECK_FALSE(selection_for(&c, "/proj/train.py", {}, {"DDP401"}).enabled("DDP401"));
  CHECK_FALSE(selection_for(&c, "/proj/train.py", {}, {"DDP401"}).enabled("DDP103"));
  // per-file ignores: relative path, or the file name alone
  CHECK_FALSE(selection_for(&c, "/proj/tests/unit/test_x.py", {}, {}).enabled("DDP101"));
  CHECK(selection_for(&c, "/proj/tests/unit/test_x.py", {}, {}).enabled("DDP102"));
  CHECK_FALSE(selection_for(&c, "/proj/sub/conftest.py", {}, {}).enabled("DDP401"));
  CHECK(selection_for(&c, "/elsewhere/tests/x.py", {}, {}).enabled("DDP101"));
  // no configuration: every rule, minus the command line's ignore
  CHECK(selection_for(nullptr, "x.py", {}, {}).enabled("DDP603"));
  CHECK_FALSE(selection_for(nullptr, "x.py", {}, {"DDP6"}).enabled("DDP603"));
}

TEST_CASE("the closest configuration wins; pyproject.toml without [tool.ddplint] is skipped") {
  TempDir s;
  s.write("pyproject.toml", "[tool.ddplint]\nignore = [\"DDP101\"]\n");
  s.write("pkg/pyproject.toml", "[project]\nname = \"pkg\"\n");
  s.write("pkg/inner/.ddplint.toml", "ignore = [\"DDP102\"]\n");
  s.write("pkg/inner/ddplint.toml", "ignore = [\"DDP103\"]\n");
  s.write("bad/ddplint.toml", "nonsense = 1\n");
  ConfigResolver resolver(rules::all());
  auto top = resolver.for_file(s.path / "pkg/train.py");
  REQUIRE(std::holds_alternative<std::shared_ptr<const Config>>(top));
  CHECK(std::get<std::shared_ptr<const Config>>(top)->file == s.path / "pyproject.toml");
  auto inner = resolver.for_file(s.path / "pkg/inner/deep/train.py");
  CHECK(std::get<std::shared_ptr<const Config>>(inner)->file == s.path / "pkg/inner/.ddplint.toml");
  auto bad = resolver.for_file(s.path / "bad/train.py");
  REQUIRE(std::holds_alternative<ConfigError>(bad));
  CHECK(std::get<ConfigError>(bad).line == 1);
  // a change is seen after clear()
  s.write("pkg/inner/.ddplint.toml", "ignore = [\"DDP104\"]\n");
  CHECK(std::get<std::shared_ptr<const Config>>(resolver.for_file(s.path / "pkg/inner/x.py"))->ignore ==
        std::vector<std::string>{"DDP102"});
  resolver.clear();
  CHECK(std::get<std::shared_ptr<const Config>>(resolver.for_file(s.path / "pkg/inner/x.py"))->ignore ==
        std::vector<std::string>{"DDP104"});
}

TEST_CASE("config: exclude, extend-exclude, respect-gitignore, tiny-batch-threshold") {
  TempDir s;
  Config c = config_of(s.write("ddplint.toml", "exclude = [\"gen\"]\nextend-exclude = [\"*_pb2.py\", \"tools/*\"]\n"
                                               "respect-gitignore = false\ntiny-batch-threshold = 16\n"));
  CHECK(exclude_patterns(&c) == std::vector<std::string>{"gen", "*_pb2.py", "tools/*"});
  CHECK_FALSE(c.respect_gitignore);
  CHECK(c.options.tiny_batch_threshold == 16);
  CHECK(exclude_patterns(nullptr) == kDefaultExclude);
  CHECK(matches_exclude(exclude_patterns(&c), c.directory / "a/gen", c.directory));
  CHECK(matches_exclude(exclude_patterns(&c), c.directory / "x/y_pb2.py", c.directory));
  CHECK(matches_exclude(exclude_patterns(&c), c.directory / "tools/deep/z.py", c.directory));
  CHECK_FALSE(matches_exclude(exclude_patterns(&c), c.directory / "src/tools/z.py", c.directory));
  CHECK_FALSE(matches_exclude(exclude_patterns(&c), c.directory / "src/train.py", c.directory));
  CHECK(error_of(s.write("a/ddplint.toml", "respect-gitignore = 1\n")).message.find("true or false") != std::string::npos);
  CHECK(error_of(s.write("b/ddplint.toml", "tiny-batch-threshold = 0\n")).line == 1);
  CHECK(error_of(s.write("c/ddplint.toml", "exclude = [1]\n")).message.find("glob patterns") != std::string::npos);
}

TEST_CASE("hostile configuration: deep dotted keys are refused, not a stack overflow; very deep paths stay bounded") {
  TempDir s;
  std::string header = "[x";
  for (int i = 0; i < 50000; ++i) header += ".x";
  ConfigError deep = error_of(s.write("a/pyproject.toml", "[project]\nname = \"p\"\n" + header + "]\n"));
  CHECK(deep.line == 3);
  CHECK(deep.message.find("too deeply nested") != std::string::npos);
  std::string key = "a";
  for (int i = 0; i < 50000; ++i) key += ".a";
  CHECK(error_of(s.write("b/ddplint.toml", key + " = 1\n")).line == 1);
  // dots inside strings and comments do not count
  Config ok = config_of(s.write("c/ddplint.toml", "# " + std::string(500, '.') + "\nexclude = [\"" + std::string(500, '.') + "\"]\n"));
  CHECK(ok.exclude->size() == 1);
  CHECK(error_of(s.write("d/ddplint.toml", "select = [\"\"]\n")).message.find("unknown rule code") != std::string::npos);
  // a path 10,000 folders deep (an editor may send any URI): answered, bounded
  std::string deep_path;
  for (int i = 0; i < 10000; ++i) deep_path += "/a";
  ConfigResolver resolver(rules::all());
  auto r = resolver.for_file(deep_path + "/x.py");
  CHECK(std::holds_alternative<std::shared_ptr<const Config>>(r));
}

TEST_CASE("config errors show a long or multi-line key or code shortened, on one line") {
  TempDir s;
  std::string long_key(10000, 'k');
  ConfigError key = error_of(s.write("a/ddplint.toml", long_key + " = 1\n"));
  CHECK(key.message.size() < 300);
  CHECK(key.message.find("unknown key `" + std::string(60, 'k') + "…`") != std::string::npos);
  ConfigError code = error_of(s.write("b/ddplint.toml", "ignore = [\"" + std::string(5000, 'X') + "\"]\n"));
  CHECK(code.message.size() < 300);
  CHECK(code.message.find("'" + std::string(60, 'X') + "…'") != std::string::npos);
  ConfigError quoted = error_of(s.write("c/ddplint.toml", "\"line\\nbreak\" = 1\n"));
  CHECK(quoted.message.find('\n') == std::string::npos);
  CHECK(quoted.message.find("unknown key `line\\x0abreak`") != std::string::npos);
  // cut between characters: 59 ASCII bytes, then a 2-byte character that would straddle byte 60
  ConfigError wide = error_of(s.write("d/ddplint.toml", "\"" + std::string(59, 'a') + "\xC3\xA9" + "tail\" = 1\n"));
  CHECK(wide.message.find("`" + std::string(59, 'a') + "…`") != std::string::npos);
  ConfigError plain = error_of(s.write("e/ddplint.toml", "target-version = 311\n"));
  CHECK(plain.message.find("unknown key `target-version` (known:") != std::string::npos);
}

TEST_CASE("non-ASCII code points where toml++ 3.3.0 asks for whitespace are answered, not undefined behaviour") {
  // marzer/tomlplusplus #190: U+00A7 first on the line after a line-ending backslash
  // in a multi-line string; #295 and fuzz_config: U+032A and U+FEBF where a key starts.
  // The sanitizer build stops at the undefined behaviour these reached before.
  TempDir s;
  Config ok = config_of(s.write("a/ddplint.toml", "exclude = [\"\"\"\\\n\xC2\xA7x\"\"\"]\n"));
  REQUIRE(ok.exclude);
  REQUIRE(ok.exclude->size() == 1);
  CHECK(ok.exclude->front() == "\xC2\xA7x");
  CHECK(error_of(s.write("b/ddplint.toml", "\xCC\xAA")).line == 1);
  CHECK(error_of(s.write("c/ddplint.toml", "\xEF\xBA\xBF=e")).line == 1);
}

TEST_CASE("config: Ruff's line-length, from the closest Ruff configuration, under a ddplint one's") {
  TempDir s;
  // one file: [tool.ruff] of a pyproject.toml, the top level of a ruff.toml; anything else is no Ruff configuration
  auto one = [&](const std::string& rel, const std::string& text) { return load_ruff_line_length(s.write(rel, text)); };
  REQUIRE(one("p/pyproject.toml", "[tool.ruff]\nline-length = 100\n"));
  CHECK(one("p/pyproject.toml", "[tool.ruff]\nline-length = 100\n")->length == 100);
  CHECK(one("p/pyproject.toml", "[tool.ruff]\nline-length = 100\n")->describe() == (s.path / "p/pyproject.toml").string() + " [tool.ruff]");
  CHECK_FALSE(one("q/pyproject.toml", "[tool.ddplint]\nline-length = 100\n"));
  CHECK_FALSE(one("r/pyproject.toml", "[tool.ruff\n"));  // not TOML: Ruff's to report, not ddplint's
  CHECK(one("s/ruff.toml", "line-length = 72\n")->length == 72);
  CHECK(one("s/ruff.toml", "line-length = 72\n")->describe() == (s.path / "s/ruff.toml").string());
  CHECK(one("t/ruff.toml", "line-length = 0\n")->length == 0);  // out of range: none
  CHECK(one("t/ruff.toml", "[lint]\nselect = [\"E\"]\n")->length == 0);
  CHECK_FALSE(load_ruff_line_length(s.path / "u/ruff.toml"));  // missing

  // the closest, going up: .ruff.toml, ruff.toml, then a pyproject.toml with [tool.ruff], in each folder
  s.write("w/pyproject.toml", "[tool.ruff]\nline-length = 90\n");
  s.write("w/a/pyproject.toml", "[project]\nname = \"a\"\n");  // no [tool.ruff]: passed over
  s.write("w/b/pyproject.toml", "[tool.ruff]\nline-length = 91\n");
  s.write("w/b/ruff.toml", "line-length = 92\n");
  s.write("w/c/ruff.toml", "line-length = 93\n");
  s.write("w/c/.ruff.toml", "line-length = 94\n");
  ConfigResolver resolver(rules::all());
  auto length = [&](const std::string& rel) {
    auto found = resolver.ruff_line_length_for(s.path / rel);
    return found ? found->length : 0u;
  };
  CHECK(length("w/x.py") == 90);
  CHECK(length("w/a/deep/x.py") == 90);
  CHECK(length("w/b/x.py") == 92);
  CHECK(length("w/c/x.py") == 94);
  CHECK(resolver.ruff_line_length_for(s.path / "w/a/x.py") == resolver.ruff_line_length_for(s.path / "w/y.py"));  // shared

  // settings_for: the ddplint configuration's line-length wins, else Ruff's, else none
  RuffLineLength ruff{88, s.path / "w/pyproject.toml"};
  Config own = config_of(s.write("v/ddplint.toml", "line-length = 120\n"));
  Config plain = config_of(s.write("v2/ddplint.toml", "ignore = [\"DDP101\"]\n"));
  FileSettings a = settings_for(&own, "x.py", {}, {}, {}, &ruff);
  CHECK(a.options.line_length == 120);
  CHECK(a.line_length_origin == (s.path / "v/ddplint.toml").string());
  FileSettings b = settings_for(&plain, "x.py", {}, {}, {}, &ruff);
  CHECK(b.options.line_length == 88);
  CHECK(b.line_length_origin == (s.path / "w/pyproject.toml").string() + " [tool.ruff]");
  FileSettings c = settings_for(nullptr, "x.py", {}, {}, {}, &ruff);
  CHECK(c.options.line_length == 88);
  FileSettings none = settings_for(&plain, "x.py", {}, {});
  CHECK(none.options.line_length == 0);
  CHECK(none.line_length_origin.empty());
}
