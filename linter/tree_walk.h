/* Fast pre-order walks over a tree-sitter tree, for the semantic model's one
 * pass. Written in C against tree-sitter's internal subtree layout (version
 * 0.25.0, pinned in package-lock.json), because the public TSTreeCursor costs
 * about 19% of the parse time for a walk of every node, more than the whole
 * budget of issue 7 (measured with bench/ddplint_bench, bench/README.md).
 * The walk's body is in tree_walk_impl.h, for callers in the core that compile
 * it with their own callbacks inlined (the semantic model).
 *
 * The walks visit exactly the nodes, in exactly the order, that
 * ts_tree_cursor_goto_first_child / goto_next_sibling visit (visible nodes,
 * hidden ones descended transparently); tests/unit/test_tree_walk.cpp checks
 * this against the cursor on every fixture and on random edits. Depth is
 * bounded only by memory: the walk keeps an explicit heap stack, no recursion.
 */
#ifndef DDPLINT_TREE_WALK_H_
#define DDPLINT_TREE_WALK_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <tree_sitter/api.h>

#ifdef __cplusplus
extern "C" {
#endif

/** One visible node reached by a walk. */
typedef struct {
  TSNode node;      /**< the node (valid while the tree lives) */
  TSSymbol symbol;  /**< ts_node_symbol(node) */
  bool named;       /**< ts_node_is_named(node) */
  uint32_t depth;   /**< 0 for the walk's root, +1 per visible level */
} DdplintVisit;

/** What a walk visits below a node, as its DdplintEnterFn answers. */
typedef enum {
  DDPLINT_SKIP_CHILDREN = 0,  /**< none of the node's descendants */
  DDPLINT_VISIT_CHILDREN = 1, /**< all of them */
  /** all of them except named leaves (nodes without visible children) among
   * the node's children (hidden nodes looked through) whose symbol is not
   * marked in the walk's `leaf_symbols`:
   * for a node whose leaf children (names, numbers) the caller does not need.
   * MISSING and ERROR leaves are visited (`leaf_symbols` is not read for ERROR). Deeper levels follow their own parent's answer. */
  DDPLINT_VISIT_INNER_CHILDREN = 2
} DdplintDescend;

/** Called on entering a node; returns a DdplintDescend. */
typedef int (*DdplintEnterFn)(void *context, const DdplintVisit *visit);
/** Called after a node's descendants (or right after enter for a leaf or a skipped node). */
typedef void (*DdplintLeaveFn)(void *context, uint32_t depth);

/** Walks `root` and its descendants in pre-order. With `skip_anonymous_leaves`,
 * anonymous nodes without children (punctuation, keywords: about half of all
 * nodes) are passed over without calls, except MISSING ones (a syntax error).
 * `leaf_symbols` (indexed by public symbol, ts_language_symbol_count entries;
 * may be NULL for none) marks the named leaves visited below a node whose
 * enter answered DDPLINT_VISIT_INNER_CHILDREN. Returns false only if memory
 * for the walk's stack could not be allocated (the walk then stops early). */
bool ddplint_walk(TSNode root, DdplintEnterFn enter, DdplintLeaveFn leave, void *context, bool skip_anonymous_leaves,
                  const bool *leaf_symbols);

/** Writes the children of `node` (only named ones if `named_only`), in order,
 * to out[0 .. capacity); returns how many there are (which may exceed
 * `capacity`: call again with a larger buffer). O(children + hidden nodes). */
size_t ddplint_children(TSNode node, bool named_only, TSNode *out, size_t capacity);

/** The child of `node` in field `field_id`, or a null node: the same result
 * as ts_node_child_by_field_id (tests/unit/tree_walk_test.cpp compares the
 * two on every node and field of the fixtures), about 3x cheaper because the
 * child iteration is inline. */
TSNode ddplint_field(TSNode node, TSFieldId field_id);

#ifdef __cplusplus
}
#endif

#endif /* DDPLINT_TREE_WALK_H_ */
