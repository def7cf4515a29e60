// The fast walk (linter/tree_walk.c, written against tree-sitter's internal
// layout) must visit exactly what the public TSTreeCursor visits.
#include <doctest/doctest.h>

#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "linter/source.hpp"
#include "linter/syntax.hpp"
#include "linter/node_access.hpp"
#include "linter/tree_walk.h"

using namespace ddplint;

namespace {

// (symbol, named, start byte, end byte, start row, start column, depth, is_missing)
using Step = std::tuple<TSSymbol, bool, std::uint32_t, std::uint32_t, std::uint32_t, std::uint32_t, std::uint32_t, bool>;

Step step(TSNode n, std::uint32_t depth) {
  TSPoint p = ts_node_start_point(n);
  return {ts_node_symbol(n), ts_node_is_named(n), ts_node_start_byte(n), ts_node_end_byte(n), p.row, p.column, depth,
          ts_node_is_missing(n)};
}

// The reference walk: every node the cursor visits. With skip_anonymous_leaves,
// not anonymous leaves (unless MISSING). With `inner_only` (a test of a
// parent's symbol), not the named leaves (unless MISSING) of such parents
// whose symbol `marked` does not accept (DDPLINT_VISIT_INNER_CHILDREN), nor ERROR ones.
template <typename InnerOnly, typename Marked>
std::vector<Step> cursor_walk_filtered(TSNode root, bool skip_anonymous_leaves, InnerOnly inner_only, Marked marked) {
  std::vector<Step> out;
  TSTreeCursor cursor = ts_tree_cursor_new(root);
  std::uint32_t depth = 0;
  for (;;) {
    TSNode n = ts_tree_cursor_current_node(&cursor);
    bool dropped = depth > 0 && ts_node_is_named(n) && ts_node_child_count(n) == 0 && !ts_node_is_missing(n) &&
                   !ts_node_is_error(n) && inner_only(ts_node_symbol(ts_node_parent(n))) && !marked(ts_node_symbol(n));
    if ((!skip_anonymous_leaves || ts_node_is_named(n) || ts_node_child_count(n) > 0 || ts_node_is_missing(n) ||
         depth == 0) && !dropped)
      out.push_back(step(n, depth));
    if (ts_tree_cursor_goto_first_child(&cursor)) {
      ++depth;
      continue;
    }
    for (;;) {
      if (ts_tree_cursor_goto_next_sibling(&cursor)) break;
      if (!ts_tree_cursor_goto_parent(&cursor)) {
        ts_tree_cursor_delete(&cursor);
        return out;
      }
      --depth;
    }
  }
}

std::vector<Step> cursor_walk(TSNode root, bool skip_anonymous_leaves = false) {
  return cursor_walk_filtered(root, skip_anonymous_leaves, [](TSSymbol) { return false; }, [](TSSymbol) { return true; });
}

struct Recorder {
  std::vector<Step> steps;
  std::vector<std::uint32_t> open;  // depths entered and not yet left
  bool balanced = true;
  bool inner_by_symbol = false;     // enter answers DDPLINT_VISIT_INNER_CHILDREN where inner_only(symbol)
};

// The test's choice of parents whose named leaves are not wanted, and of leaf symbols wanted anyway.
bool test_inner_only(TSSymbol s) { return s % 3 != 1; }
bool test_marked(TSSymbol s) { return s % 5 == 0; }

std::vector<Step> fast_walk(TSNode root, bool* balanced, bool skip_anonymous_leaves = false, bool inner = false) {
  Recorder r;
  r.inner_by_symbol = inner;
  std::vector<bool> marked_vector(ts_language_symbol_count(tree_sitter_python()));
  std::unique_ptr<bool[]> marked(new bool[marked_vector.size()]);
  for (std::size_t i = 0; i < marked_vector.size(); ++i) marked[i] = test_marked(static_cast<TSSymbol>(i));
  auto enter = [](void* ctx, const DdplintVisit* v) {
    auto* rec = static_cast<Recorder*>(ctx);
    Step s = step(v->node, v->depth);
    // the visit's cached symbol and named flag equal the public accessors
    if (std::get<0>(s) != v->symbol || std::get<1>(s) != v->named) rec->balanced = false;
    rec->steps.push_back(s);
    rec->open.push_back(v->depth);
    return static_cast<int>(rec->inner_by_symbol && test_inner_only(v->symbol) ? DDPLINT_VISIT_INNER_CHILDREN
                                                                                : DDPLINT_VISIT_CHILDREN);
  };
  auto leave = [](void* ctx, std::uint32_t depth) {
    auto* rec = static_cast<Recorder*>(ctx);
    if (rec->open.empty() || rec->open.back() != depth) rec->balanced = false;
    if (!rec->open.empty()) rec->open.pop_back();
  };
  ddplint_walk(root, enter, leave, &r, skip_anonymous_leaves, inner ? marked.get() : nullptr);
  *balanced = r.balanced && r.open.empty();
  return r.steps;
}

// ddplint_field gives ts_node_child_by_field_id's answer for every node and
// every field id of the grammar (including ids the node has no field for).
void check_fields(TSNode root) {
  const std::uint32_t field_count = ts_language_field_count(tree_sitter_python());
  TSTreeCursor cursor = ts_tree_cursor_new(root);
  std::size_t compared = 0;
  for (;;) {
    TSNode n = ts_tree_cursor_current_node(&cursor);
    for (TSFieldId id = 0; id <= field_count + 1; ++id) {
      TSNode expected = ts_node_child_by_field_id(n, id);
      TSNode got = ddplint_field(n, id);
      ++compared;
      if (ts_node_is_null(expected) != ts_node_is_null(got) ||
          (!ts_node_is_null(expected) && (!ts_node_eq(expected, got) || ts_node_start_byte(expected) != ts_node_start_byte(got) ||
                                          ts_node_symbol(expected) != ts_node_symbol(got)))) {
        const char* name = ts_language_field_name_for_id(tree_sitter_python(), id);
        FAIL_CHECK("ddplint_field differs at byte " << ts_node_start_byte(n) << " (" << std::string(ts_node_type(n))
                                                    << "), field " << std::string(name ? name : "?"));
        ts_tree_cursor_delete(&cursor);
        return;
      }
    }
    if (ts_tree_cursor_goto_first_child(&cursor)) continue;
    while (!ts_tree_cursor_goto_next_sibling(&cursor)) {
      if (!ts_tree_cursor_goto_parent(&cursor)) {
        ts_tree_cursor_delete(&cursor);
        CHECK(compared > 0);
        return;
      }
    }
  }
}

// linter/node_access.hpp's inline accessors give the public accessors' answers on every node.
void check_accessors(TSNode root) {
  TSTreeCursor cursor = ts_tree_cursor_new(root);
  std::size_t compared = 0;
  TSNode previous{};
  for (;;) {
    TSNode n = ts_tree_cursor_current_node(&cursor);
    ++compared;
    if (node_symbol(n) != ts_node_symbol(n) || node_start_byte(n) != ts_node_start_byte(n) ||
        node_end_byte(n) != ts_node_end_byte(n) || node_is_null(n) || !node_eq(n, n) ||
        node_eq(n, previous) != ts_node_eq(n, previous)) {
      FAIL_CHECK("inline accessors differ at byte " << ts_node_start_byte(n) << " (" << std::string(ts_node_type(n)) << ")");
      break;
    }
    previous = n;
    if (ts_tree_cursor_goto_first_child(&cursor)) continue;
    while (!ts_tree_cursor_goto_next_sibling(&cursor)) {
      if (!ts_tree_cursor_goto_parent(&cursor)) {
        ts_tree_cursor_delete(&cursor);
        CHECK(compared > 0);
        CHECK(node_is_null(TSNode{}));
        CHECK(node_symbol(TSNode{}) == 0);
        CHECK(node_end_byte(TSNode{}) == 0);
        return;
      }
    }
  }
  ts_tree_cursor_delete(&cursor);
}

void check_same(const std::string& text) {
  SourceFile src("<walk>", text);
  SyntaxTree tree = parse_python(src);
  REQUIRE(tree);
  check_fields(tree.root());
  check_accessors(tree.root());
  // the fast walk (balanced enter/leave calls) visits what the cursor walk does, in order
  auto same_steps = [&](bool skip, bool inner) {
    CAPTURE(skip);
    CAPTURE(inner);
    bool balanced = false;
    std::vector<Step> fast = fast_walk(tree.root(), &balanced, skip, inner);
    std::vector<Step> slow = inner ? cursor_walk_filtered(tree.root(), skip, test_inner_only, test_marked)
                                   : cursor_walk(tree.root(), skip);
    CHECK(balanced);
    REQUIRE(fast.size() == slow.size());
    for (std::size_t i = 0; i < fast.size(); ++i) {
      if (fast[i] != slow[i]) {
        FAIL_CHECK("walks differ at node " << i);
        return;
      }
    }
  };
  for (bool skip : {false, true}) {
    same_steps(skip, false);
    same_steps(skip, true);  // leaves filtered by their parent's answer (DDPLINT_VISIT_INNER_CHILDREN)
  }
}

std::string read(const std::filesystem::path& p) {
  std::string err;
  auto data = read_file(p.string(), err);
  REQUIRE(data);
  return *data;
}

}  // namespace

TEST_CASE("the fast walk visits the cursor's nodes in the cursor's order on every fixture and example") {
  std::size_t files = 0;
  for (const char* dir : {"fixtures", "examples"}) {
    for (const auto& e : std::filesystem::recursive_directory_iterator(std::filesystem::path(DDPLINT_SOURCE_DIR) / dir)) {
      if (e.path().extension() != ".py") continue;
      CAPTURE(e.path().string());
      check_same(read(e.path()));
      ++files;
    }
  }
  CHECK(files > 50);
}

TEST_CASE("the fast walk agrees with the cursor on broken, aliased and extra-laden input") {
  check_same("");
  check_same("x");
  check_same("def f(:\n  return (1,\n");                      // ERROR and MISSING nodes
  check_same("print 'x'\nexec 'y'\n");                         // Python 2 statements
  check_same("x = [  # comment\n 1, # two\n 2]\n");            // extras (comments) between children
  check_same("from . import (a as b, c)\nimport x.y as z\n");   // aliases in the grammar
  check_same("s = f'{a!r:>{w}} {b}' 'c' \"d\"\n");              // interpolation, concatenation
  check_same("match x:\n  case [1, *rest]: pass\n  case {'k': v}: pass\n");
  check_same("\xef\xbb\xbfx = 1\n");                            // BOM
  check_same(std::string(2000, '(') + std::string(2000, ')'));  // deep nesting
}

TEST_CASE("DDPLINT_VISIT_INNER_CHILDREN passes over the named leaves of the nodes that answer it") {
  SourceFile src("<w>", "x = a + f(b, 1)  # c\n");
  SyntaxTree tree = parse_python(src);
  bool balanced = false;
  std::vector<Step> all = fast_walk(tree.root(), &balanced, true);
  std::vector<Step> inner = fast_walk(tree.root(), &balanced, true, /*inner=*/true);
  CHECK(balanced);
  CHECK(inner.size() < all.size());
  CHECK(inner == cursor_walk_filtered(tree.root(), true, test_inner_only, test_marked));
}

TEST_CASE("the fast walk agrees with the cursor on random mutations of an example") {
  std::string base = read(std::filesystem::path(DDPLINT_SOURCE_DIR) / "examples" / "image_classifier_ddp.py");
  std::mt19937 rng(7);
  for (int i = 0; i < 40; ++i) {
    std::string text = base;
    for (int k = 0; k < 5; ++k) {
      std::size_t at = rng() % (text.size() + 1);
      static const char* pieces[] = {"(", ")", ":", "\n    ", "if x", "'", "#", "[", ",", "lambda:"};
      if (rng() % 2) text.insert(at, pieces[rng() % 10]);
      else if (at < text.size()) text.erase(at, 1 + rng() % 20);
    }
    CAPTURE(i);
    check_same(text);
  }
}

TEST_CASE("children() lists the same nodes as the cursor, named or all") {
  SourceFile src("<c>", "f(a, *b, c=1, **d)  # x\nclass K(B, metaclass=M): pass\n");
  SyntaxTree tree = parse_python(src);
  TSTreeCursor cursor = ts_tree_cursor_new(tree.root());
  std::vector<TSNode> stack{tree.root()};
  while (!stack.empty()) {
    TSNode n = stack.back();
    stack.pop_back();
    for (bool named_only : {true, false}) {
      std::vector<TSNode> expected;
      ts_tree_cursor_reset(&cursor, n);
      if (ts_tree_cursor_goto_first_child(&cursor)) {
        do {
          TSNode c = ts_tree_cursor_current_node(&cursor);
          if (!named_only || ts_node_is_named(c)) expected.push_back(c);
        } while (ts_tree_cursor_goto_next_sibling(&cursor));
      }
      NodeList got = children(n, named_only);
      REQUIRE(got.size() == expected.size());
      for (std::size_t i = 0; i < got.size(); ++i) CHECK(ts_node_eq(got[i], expected[i]));
    }
    for (TSNode c : children(n, false)) stack.push_back(c);
  }
  ts_tree_cursor_delete(&cursor);
  // more children than children()'s inline buffer
  std::string many = "f(" ;
  for (int i = 0; i < 100; ++i) many += "a" + std::to_string(i) + ", ";
  many += ")\n";
  SourceFile big("<many>", many);
  SyntaxTree t2 = parse_python(big);
  TSNode call = ts_node_named_child(ts_node_named_child(t2.root(), 0), 0);
  CHECK(children(ts_node_child_by_field_name(call, "arguments", 9)).size() == 100);
}
