/* The body of ddplint_walk (tree_walk.h) as an always-inline function, for a
 * caller in the core that passes its own enter/leave functions: compiled into
 * that caller, the calls to them are direct and may be inlined (the semantic
 * model's walk; measured in bench/README.md). Internal to the core: it reads
 * tree-sitter's private headers (lib/src), like linter/node_access.hpp.
 *
 * The child iteration mirrors tree-sitter 0.25.0's
 * ts_tree_cursor_child_iterator_next (lib/src/tree_cursor.c): a child's
 * position is its parent's for the first child, then the previous child's
 * position plus its size plus the next child's padding; a non-extra child
 * takes the alias at its structural index in the parent's production. */
#ifndef DDPLINT_TREE_WALK_IMPL_H_
#define DDPLINT_TREE_WALK_IMPL_H_

#include <stdlib.h>
#include <string.h>

#include "linter/tree_walk.h"

#ifdef __cplusplus
extern "C" {
#endif
#include "language.h"
#include "length.h"
#include "subtree.h"
#include "tree.h"
#ifdef __cplusplus
}
#endif

#define DW_ALWAYS_INLINE static inline __attribute__((always_inline))

typedef struct {
  const Subtree *children;
  uint32_t count;
  uint32_t index;
  uint32_t structural_index;
  Length position;                /* position of children[index] */
  const TSSymbol *alias_sequence; /* of the frame's production, or NULL */
  uint32_t child_depth;           /* depth of the frame's visible children */
  bool visible;                   /* the frame's own subtree is a visible node */
  bool inner_only;                /* named leaf children only if marked in leaf_symbols */
} DwFrame;

/* A frame for the children of `subtree` (which has children: it is not inline) at `position`. */
DW_ALWAYS_INLINE DwFrame dw_frame_of(const TSLanguage *language, const Subtree *subtree, Length position,
                                     uint32_t child_depth, bool visible, bool inner_only) {
  DwFrame f;
  f.children = ts_subtree_children(*subtree);
  f.count = subtree->ptr->child_count;
  f.index = 0;
  f.structural_index = 0;
  f.position = position;
  f.alias_sequence = ts_language_alias_sequence(language, subtree->ptr->production_id);
  f.child_depth = child_depth;
  f.visible = visible;
  f.inner_only = inner_only;
  return f;
}

/* ts_language_symbol_metadata(language, symbol).named, inline (language.c). */
DW_ALWAYS_INLINE bool dw_symbol_named(const TSLanguage *language, TSSymbol symbol) {
  if (symbol == ts_builtin_sym_error) return true;
  if (symbol == ts_builtin_sym_error_repeat) return false;
  return language->symbol_metadata[symbol].named;
}

DW_ALWAYS_INLINE bool dw_is_named(const TSLanguage *language, Subtree subtree, TSSymbol alias) {
  return alias ? dw_symbol_named(language, alias) : ts_subtree_named(subtree);
}

/* ts_node_new (node.c), inline. */
DW_ALWAYS_INLINE TSNode dw_make_node(const TSTree *tree, const Subtree *subtree, Length position, TSSymbol alias) {
  TSNode node = {{position.bytes, position.extent.row, position.extent.column, alias}, subtree, tree};
  return node;
}

/* ts_language_public_symbol (language.c), inline. */
DW_ALWAYS_INLINE TSSymbol dw_public_symbol(const TSLanguage *language, TSSymbol symbol) {
  return symbol == ts_builtin_sym_error ? symbol : language->public_symbol_map[symbol];
}



DW_ALWAYS_INLINE void dw_describe(const TSTree *tree, const Subtree *subtree, Length position, TSSymbol alias,
                                  bool named, uint32_t depth, DdplintVisit *visit) {
  visit->node = dw_make_node(tree, subtree, position, alias);
  visit->symbol = dw_public_symbol(tree->language, alias ? alias : ts_subtree_symbol(*subtree));
  visit->named = named;
  visit->depth = depth;
}

/* Makes room for one more suspended frame; returns the (maybe moved) array, or NULL without memory. */
static inline DwFrame *dw_frames_grow(DwFrame *frames, size_t size, size_t *capacity, DwFrame *inline_frames) {
  size_t grown = *capacity * 2;
  DwFrame *more = (DwFrame *)malloc(grown * sizeof(DwFrame));
  if (!more) return NULL;
  memcpy(more, frames, size * sizeof(DwFrame));
  if (frames != inline_frames) free(frames);
  *capacity = grown;
  return more;
}


DW_ALWAYS_INLINE bool ddplint_walk_inline(TSNode root, DdplintEnterFn enter, DdplintLeaveFn leave, void *context,
                                       bool skip_anonymous_leaves, const bool *leaf_symbols) {
  if (ts_node_is_null(root)) return true;
  const TSTree *tree = root.tree;
  const TSLanguage *language = tree->language;
  const Subtree *subtree = (const Subtree *)root.id;
  Length position = {root.context[0], {root.context[1], root.context[2]}};
  DdplintVisit visit;
  TSSymbol root_alias = (TSSymbol)root.context[3];
  dw_describe(tree, subtree, position, root_alias, dw_is_named(language, *subtree, root_alias), 0, &visit);
  int descend = enter(context, &visit);
  if (descend == DDPLINT_SKIP_CHILDREN || ts_subtree_child_count(*subtree) == 0) {
    leave(context, 0);
    return true;
  }
  /* The frame being walked is the local `f` (kept in registers across the
   * enter/leave calls); the frames of its ancestors wait in `frames`. */
  DwFrame inline_frames[32];
  DwFrame *frames = inline_frames;
  size_t size = 0, capacity = sizeof inline_frames / sizeof inline_frames[0];
  bool ok = true;
  DwFrame f = dw_frame_of(language, subtree, position, 1, true, descend == DDPLINT_VISIT_INNER_CHILDREN);
  for (;;) {
    if (f.index == f.count) {
      if (f.visible) leave(context, f.child_depth - 1);
      if (size == 0) break;
      f = frames[--size];
      continue;
    }
    /* next_child() and the accessors of subtree.h, specialised: an inline
     * subtree is always a leaf, so its fields are read from the 8 bytes at
     * hand with one test of is_inline instead of one per accessor. */
    const Subtree *child = &f.children[f.index];
    const Subtree c = *child;
    const uint32_t depth = f.child_depth;
    TSSymbol alias = 0;
    position = f.position;
    f.index++;
    if (c.data.is_inline) {
      if (!c.data.extra) {
        if (f.alias_sequence) alias = f.alias_sequence[f.structural_index];
        f.structural_index++;
      }
      Length size_of = {c.data.size_bytes, {0, c.data.size_bytes}};
      f.position = length_add(f.position, size_of);
      if (f.index < f.count) f.position = length_add(f.position, ts_subtree_padding(f.children[f.index]));
      if (!c.data.visible && !alias) continue;  /* a hidden leaf: nothing to visit */
      bool named = alias ? dw_symbol_named(language, alias) : c.data.named;
      if (skip_anonymous_leaves && !named && !c.data.is_missing) continue;
      visit.symbol = dw_public_symbol(language, alias ? alias : c.data.symbol);
      if (f.inner_only && named && !c.data.is_missing && visit.symbol != ts_builtin_sym_error &&
          !(leaf_symbols && leaf_symbols[visit.symbol]))
        continue;
      visit.node = dw_make_node(tree, child, position, alias);
      visit.named = named;
      visit.depth = depth;
      enter(context, &visit);
      leave(context, depth);
      continue;
    }
    const SubtreeHeapData *h = c.ptr;
    if (!h->extra) {
      if (f.alias_sequence) alias = f.alias_sequence[f.structural_index];
      f.structural_index++;
    }
    f.position = length_add(f.position, h->size);
    if (f.index < f.count) f.position = length_add(f.position, ts_subtree_padding(f.children[f.index]));
    bool push = false, push_visible = false, push_inner = false;
    uint32_t push_depth = depth;
    if (h->visible || alias) {
      bool named = alias ? dw_symbol_named(language, alias) : h->named;
      if (skip_anonymous_leaves && !named && h->child_count == 0 && !h->is_missing) continue;
      visit.symbol = dw_public_symbol(language, alias ? alias : h->symbol);
      /* a leaf: no visible children (hidden ones may hold tokens, as in string_content) */
      if (f.inner_only && named && (h->child_count == 0 || h->visible_child_count == 0) && !h->is_missing &&
          visit.symbol != ts_builtin_sym_error && !(leaf_symbols && leaf_symbols[visit.symbol]))
        continue;
      visit.node = dw_make_node(tree, child, position, alias);
      visit.named = named;
      visit.depth = depth;
      int child_descend = enter(context, &visit);
      if (child_descend != DDPLINT_SKIP_CHILDREN && h->child_count > 0) {
        push = true;
        push_visible = true;
        push_depth = depth + 1;
        push_inner = child_descend == DDPLINT_VISIT_INNER_CHILDREN;
      } else {
        leave(context, depth);
      }
    } else if (h->child_count > 0 && h->visible_child_count > 0) {
      push = true;
      push_inner = f.inner_only;
    }
    if (push) {
      if (f.index == f.count && !f.visible) {
        /* `f` is hidden and this was its last child: nothing is left to do
         * when the child's frame ends (no leave, no sibling), so the child's
         * frame takes its place instead of suspending it (hidden repetitions
         * nest this way, one level per pair of statements or arguments) */
        f = dw_frame_of(language, child, position, push_depth, push_visible, push_inner);
        continue;
      }
      if (size == capacity) {
        DwFrame *grown = dw_frames_grow(frames, size, &capacity, inline_frames);
        if (!grown) {
          ok = false;
          break;
        }
        frames = grown;
      }
      frames[size++] = f;
      f = dw_frame_of(language, child, position, push_depth, push_visible, push_inner);
    }
  }
  if (frames != inline_frames) free(frames);
  return ok;
}


#endif /* DDPLINT_TREE_WALK_IMPL_H_ */
