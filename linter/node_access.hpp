// Inline equivalents of tree-sitter's node accessors (ts_node_symbol,
// ts_node_start_byte, ts_node_end_byte, ts_node_is_null, ts_node_eq), for the
// semantic model and the rules, which call them millions of times a run: the
// public ones are out-of-line calls into the library. Written against
// tree-sitter's internal subtree layout (version 0.25.0, pinned in
// package-lock.json), like linter/tree_walk.c; tests/unit/tree_walk_test.cpp
// compares each with the public accessor on every node of the fixtures.
//
// Internal to the project's core and rules (the targets that include it see
// tree-sitter's private headers); other code uses the public accessors.
#pragma once

#include <tree_sitter/api.h>

#include <cstdint>

extern "C" {
#include "language.h"
#include "subtree.h"
#include "tree.h"
}

namespace ddplint {

/// ts_node_is_null(node).
inline bool node_is_null(TSNode node) { return node.id == nullptr; }

/// ts_node_eq(a, b): the same node of the same tree.
inline bool node_eq(TSNode a, TSNode b) { return a.tree == b.tree && a.id == b.id; }

/// ts_node_start_byte(node), in bytes from the start of the text.
inline std::uint32_t node_start_byte(TSNode node) { return node.context[0]; }

/// ts_node_end_byte(node), in bytes from the start of the text (0 for a null node).
inline std::uint32_t node_end_byte(TSNode node) {
  if (node.id == nullptr) return 0;
  return node.context[0] + ts_subtree_size(*static_cast<const Subtree*>(node.id)).bytes;
}

/// ts_node_symbol(node): the public symbol, the alias where the node has one (0 for a null node).
inline TSSymbol node_symbol(TSNode node) {
  if (node.id == nullptr) return 0;
  TSSymbol symbol = static_cast<TSSymbol>(node.context[3]);
  if (symbol == 0) symbol = ts_subtree_symbol(*static_cast<const Subtree*>(node.id));
  return symbol == ts_builtin_sym_error ? symbol : node.tree->language->public_symbol_map[symbol];
}

/// True if every visible node below `node` is one of its visible children
/// (hidden nodes looked through) and has no visible children itself: names,
/// numbers, punctuation, as in `a.b` or `x + 1`. Those children may still have
/// hidden ones (a string's content).
inline bool node_has_leaf_children_only(TSNode node) {
  if (node.id == nullptr) return true;
  Subtree s = *static_cast<const Subtree*>(node.id);
  return ts_subtree_visible_descendant_count(s) == ts_subtree_visible_child_count(s);
}

/// True if the text of `node` (without its leading whitespace) lies on one line.
inline bool node_on_one_line(TSNode node) {
  if (node.id == nullptr) return true;
  return ts_subtree_size(*static_cast<const Subtree*>(node.id)).extent.row == 0;
}

}  // namespace ddplint
