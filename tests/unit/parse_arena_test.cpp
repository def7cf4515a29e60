// The parse arena (ParseArenaScope, linter/syntax.hpp): a tree parsed in a
// scope is the tree parsed without one, whether the parse fits the arena or
// outgrows it, fresh or incremental, scope after scope.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "linter/lint.hpp"
#include "linter/source.hpp"
#include "linter/syntax.hpp"
#include "rules/registry.hpp"

using namespace ddplint;
namespace fs = std::filesystem;

namespace {

// Every node the cursor visits, with its kind, bytes, start point and flags.
// (Not ts_node_string: its result is freed with free(), which a scope forbids.)
std::string dump(const SyntaxTree& tree) {
  std::string out;
  TSTreeCursor cursor = ts_tree_cursor_new(tree.root());
  for (;;) {
    TSNode n = ts_tree_cursor_current_node(&cursor);
    TSPoint p = ts_node_start_point(n);
    out += ts_node_type(n);
    out += ' ' + std::to_string(ts_node_start_byte(n)) + '-' + std::to_string(ts_node_end_byte(n)) + '@' +
           std::to_string(p.row) + ':' + std::to_string(p.column) + (ts_node_is_missing(n) ? "!" : "") + '\n';
    if (ts_tree_cursor_goto_first_child(&cursor)) continue;
    while (!ts_tree_cursor_goto_next_sibling(&cursor)) {
      if (!ts_tree_cursor_goto_parent(&cursor)) {
        ts_tree_cursor_delete(&cursor);
        return out;
      }
    }
  }
}

std::vector<SourceFile> fixture_sources() {
  std::vector<SourceFile> out;
  for (const char* folder : {"/fixtures", "/examples"}) {
    for (const auto& e : fs::recursive_directory_iterator(std::string(DDPLINT_SOURCE_DIR) + folder)) {
      if (e.path().extension() != ".py") continue;
      std::string error;
      auto bytes = read_file(e.path().string(), error);
      REQUIRE(bytes);
      out.emplace_back(e.path().string(), std::move(*bytes));
    }
  }
  return out;
}

// About `lines` lines of varied code, some with syntax errors.
std::string big_source(int lines) {
  std::string s = "import torch\n";
  for (int i = 0; i < lines; ++i) {
    s += "def f" + std::to_string(i) + "(x, y=" + std::to_string(i) + "):\n";
    s += "    return torch.zeros(x, y).cuda().sum() + [a for a in range(" + std::to_string(i) + ")][0]\n";
    if (i % 997 == 0) s += "    z = (1 +\n";  // an unclosed bracket: ERROR and MISSING nodes
  }
  return s;
}

}  // namespace

TEST_CASE("a tree parsed in a parse arena scope is the tree parsed without one") {
  std::vector<SourceFile> sources = fixture_sources();
  REQUIRE(sources.size() > 100);
  for (int round = 0; round < 2; ++round) {  // the second round reuses the arena's memory
    for (const SourceFile& source : sources) {
      std::string expected = dump(parse_python(source));
      ParseArenaScope scope;
      SyntaxTree tree = parse_python(source);
      REQUIRE(tree);
      CHECK_MESSAGE(dump(tree) == expected, source.path());
    }
  }
}

TEST_CASE("a parse that outgrows the parse arena goes on with malloc, and the next scope starts afresh") {
  // 5,000 nested brackets in 10 KB: the parse stack alone outgrows the region
  std::string nested = "x = " + std::string(5000, '[') + std::string(5000, ']') + "\n";
  SourceFile deep("deep.py", nested + "y = (1 +\n");  // and a syntax error at the end
  SourceFile small("small.py", "import torch\nx = torch.ones(3).cuda()\n");
  REQUIRE(deep.text().size() <= ParseArenaScope::kMaxSourceBytes);
  std::string deep_expected = dump(parse_python(deep));
  std::string small_expected = dump(parse_python(small));
  for (int round = 0; round < 2; ++round) {
    {
      ParseArenaScope scope;
      SyntaxTree tree = parse_python(deep);
      CHECK(ParseArenaScope::high_water() > ParseArenaScope::kBytes - 4096);  // the region filled up
      CHECK(dump(tree) == deep_expected);
    }
    {
      ParseArenaScope scope;
      SyntaxTree tree = parse_python(small);
      CHECK(ParseArenaScope::high_water() > 0);
      CHECK(ParseArenaScope::high_water() < 64 * 1024);
      CHECK(dump(tree) == small_expected);
    }
  }
}

TEST_CASE("a text over kMaxSourceBytes is parsed with malloc, even in a scope") {
  SourceFile big("big.py", big_source(20000));  // about 2 MB
  REQUIRE(big.text().size() > ParseArenaScope::kMaxSourceBytes);
  std::string expected = dump(parse_python(big));
  ParseArenaScope scope;
  SyntaxTree tree = parse_python(big);
  CHECK(ParseArenaScope::high_water() == 0);
  CHECK(dump(tree) == expected);
  SyntaxTree small = parse_python(SourceFile("small.py", "import torch\n"));  // the arena is back on
  CHECK(ParseArenaScope::high_water() > 0);
}

TEST_CASE("two trees in one scope, an inner scope is inert") {
  SourceFile a("a.py", "import torch\nfor x in loader:\n    loss.backward()\n");
  SourceFile b("b.py", "def f(:\n  pass\n");
  std::string a_expected = dump(parse_python(a)), b_expected = dump(parse_python(b));
  ParseArenaScope outer;
  SyntaxTree ta = parse_python(a);
  {
    ParseArenaScope inner;  // inert: does not reset the arena under `ta`
    SyntaxTree tb = parse_python(b);
    CHECK(dump(tb) == b_expected);
  }
  SyntaxTree tb = parse_python(b);
  CHECK(dump(ta) == a_expected);
  CHECK(dump(tb) == b_expected);
}

TEST_CASE("an incremental parse in a scope shares subtrees with a tree from outside it") {
  std::string text = "import torch\nmodel = torch.nn.Linear(2, 2)\nfor x in data:\n    model(x).sum().backward()\n";
  SourceFile before("a.py", text);
  SyntaxTree previous = parse_python(before);  // outside any scope: ordinary memory
  // insert `.cuda()` after `Linear(2, 2)`
  std::uint32_t at = static_cast<std::uint32_t>(text.find(")\nfor")) + 1;
  std::string edited = text.substr(0, at) + ".cuda()" + text.substr(at);
  TSInputEdit e{};
  e.start_byte = at;
  e.old_end_byte = at;
  e.new_end_byte = at + 7;
  e.start_point = {1, at - static_cast<std::uint32_t>(text.find('\n')) - 1};
  e.old_end_point = e.start_point;
  e.new_end_point = {1, e.start_point.column + 7};
  previous.edit(e);
  SourceFile after("a.py", edited);
  std::string expected = dump(parse_python(after));
  for (int round = 0; round < 3; ++round) {
    ParseArenaScope scope;
    SyntaxTree tree = parse_python(after, &previous);
    CHECK(dump(tree) == expected);
  }
  CHECK(dump(previous).size() > 0);  // still whole after the scopes ended
}

TEST_CASE("lint() parses in the arena and finds what a lint of a tree parsed outside finds") {
  RuleSelection all;
  for (const SourceFile& source : fixture_sources()) {
    SyntaxTree outside = parse_python(source);
    LintResult a = lint(source, outside, rules::all(), all);
    LintResult b = lint(source, rules::all(), all, RuleOptions{}, /*prefilter=*/false);
    REQUIRE(a.diagnostics.size() == b.diagnostics.size());
    for (std::size_t i = 0; i < a.diagnostics.size(); ++i) {
      CHECK(a.diagnostics[i].start == b.diagnostics[i].start);
      CHECK(a.diagnostics[i].rule == b.diagnostics[i].rule);
      CHECK(a.diagnostics[i].message == b.diagnostics[i].message);
    }
  }
}
