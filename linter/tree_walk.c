/* See tree_walk.h. The child iteration mirrors tree-sitter 0.25.0's
 * ts_tree_cursor_child_iterator_next (lib/src/tree_cursor.c): a child's
 * position is its parent's for the first child, then the previous child's
 * position plus its size plus the next child's padding; a non-extra child
 * takes the alias at its structural index in the parent's production. */
#include "linter/tree_walk.h"

#include <stdlib.h>
#include <string.h>

#include "language.h"
#include "length.h"
#include "subtree.h"
#include "tree.h"

typedef struct {
  const Subtree *children;
  uint32_t count;
  uint32_t index;
  uint32_t structural_index;
  Length position;                /* position of children[index] */
  const TSSymbol *alias_sequence; /* of the frame's production, or NULL */
  uint32_t child_depth;           /* depth of the frame's visible children */
  bool visible;                   /* the frame's own subtree is a visible node */
} Frame;

typedef struct {
  Frame *frames;
  size_t size, capacity;
  Frame inline_frames[32];
} Stack;

static void stack_init(Stack *s) {
  s->frames = s->inline_frames;
  s->size = 0;
  s->capacity = sizeof s->inline_frames / sizeof s->inline_frames[0];
}

static void stack_free(Stack *s) {
  if (s->frames != s->inline_frames) free(s->frames);
}

static bool stack_push(Stack *s, const TSLanguage *language, const Subtree *subtree, Length position,
                       uint32_t child_depth, bool visible) {
  if (s->size == s->capacity) {
    size_t capacity = s->capacity * 2;
    Frame *frames = malloc(capacity * sizeof(Frame));
    if (!frames) return false;
    memcpy(frames, s->frames, s->size * sizeof(Frame));
    stack_free(s);
    s->frames = frames;
    s->capacity = capacity;
  }
  Frame *f = &s->frames[s->size++];
  f->children = ts_subtree_children(*subtree);
  f->count = ts_subtree_child_count(*subtree);
  f->index = 0;
  f->structural_index = 0;
  f->position = position;
  f->alias_sequence = ts_language_alias_sequence(language, subtree->ptr->production_id);
  f->child_depth = child_depth;
  f->visible = visible;
  return true;
}

/* Takes the next child of `f`; returns its subtree and sets its position and alias. */
static const Subtree *next_child(Frame *f, Length *position, TSSymbol *alias) {
  const Subtree *child = &f->children[f->index];
  *position = f->position;
  *alias = 0;
  if (!ts_subtree_extra(*child)) {
    if (f->alias_sequence) *alias = f->alias_sequence[f->structural_index];
    f->structural_index++;
  }
  f->index++;
  f->position = length_add(f->position, ts_subtree_size(*child));
  if (f->index < f->count) f->position = length_add(f->position, ts_subtree_padding(f->children[f->index]));
  return child;
}

static inline bool is_named(const TSLanguage *language, Subtree subtree, TSSymbol alias) {
  return alias ? ts_language_symbol_metadata(language, alias).named : ts_subtree_named(subtree);
}

static void describe(const TSTree *tree, const Subtree *subtree, Length position, TSSymbol alias, bool named,
                     uint32_t depth, DdplintVisit *visit) {
  visit->node = ts_node_new(tree, subtree, position, alias);
  visit->symbol = ts_language_public_symbol(tree->language, alias ? alias : ts_subtree_symbol(*subtree));
  visit->named = named;
  visit->depth = depth;
}

bool ddplint_walk(TSNode root, DdplintEnterFn enter, DdplintLeaveFn leave, void *context, bool skip_anonymous_leaves) {
  if (ts_node_is_null(root)) return true;
  const TSTree *tree = root.tree;
  const Subtree *subtree = (const Subtree *)root.id;
  Length position = {root.context[0], {root.context[1], root.context[2]}};
  DdplintVisit visit;
  TSSymbol root_alias = (TSSymbol)root.context[3];
  describe(tree, subtree, position, root_alias, is_named(tree->language, *subtree, root_alias), 0, &visit);
  if (!enter(context, &visit) || ts_subtree_child_count(*subtree) == 0) {
    leave(context, 0);
    return true;
  }
  Stack stack;
  stack_init(&stack);
  bool ok = stack_push(&stack, tree->language, subtree, position, 1, true);
  while (ok && stack.size > 0) {
    Frame *f = &stack.frames[stack.size - 1];
    if (f->index == f->count) {
      bool visible = f->visible;
      uint32_t depth = f->child_depth - 1;
      stack.size--;
      if (visible) leave(context, depth);
      continue;
    }
    TSSymbol alias;
    const Subtree *child = next_child(f, &position, &alias);
    uint32_t depth = f->child_depth;
    if (ts_subtree_visible(*child) || alias) {
      bool named = is_named(tree->language, *child, alias);
      if (skip_anonymous_leaves && !named && ts_subtree_child_count(*child) == 0 && !ts_subtree_missing(*child)) continue;
      describe(tree, child, position, alias, named, depth, &visit);
      if (enter(context, &visit) && ts_subtree_child_count(*child) > 0) {
        ok = stack_push(&stack, tree->language, child, position, depth + 1, true);
      } else {
        leave(context, depth);
      }
    } else if (ts_subtree_visible_child_count(*child) > 0) {
      ok = stack_push(&stack, tree->language, child, position, depth, false);
    }
  }
  stack_free(&stack);
  return ok;
}

size_t ddplint_children(TSNode node, bool named_only, TSNode *out, size_t capacity) {
  if (ts_node_is_null(node)) return 0;
  const TSTree *tree = node.tree;
  const Subtree *subtree = (const Subtree *)node.id;
  if (ts_subtree_child_count(*subtree) == 0) return 0;
  Length position = {node.context[0], {node.context[1], node.context[2]}};
  Stack stack;
  stack_init(&stack);
  size_t n = 0;
  bool ok = stack_push(&stack, tree->language, subtree, position, 1, true);
  while (ok && stack.size > 0) {
    Frame *f = &stack.frames[stack.size - 1];
    if (f->index == f->count) {
      stack.size--;
      continue;
    }
    TSSymbol alias;
    const Subtree *child = next_child(f, &position, &alias);
    if (ts_subtree_visible(*child) || alias) {
      if (!named_only || is_named(tree->language, *child, alias)) {
        if (n < capacity) out[n] = ts_node_new(tree, child, position, alias);
        ++n;
      }
    } else if (ts_subtree_visible_child_count(*child) > 0) {
      ok = stack_push(&stack, tree->language, child, position, 1, false);
    }
  }
  stack_free(&stack);
  return n;
}
