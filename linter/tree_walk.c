/* See tree_walk.h; the walk itself is in tree_walk_impl.h. */
#include "linter/tree_walk_impl.h"

typedef struct {
  DwFrame *frames;
  size_t size, capacity;
  DwFrame inline_frames[32];
} Stack;

static inline void stack_init(Stack *s) {
  s->frames = s->inline_frames;
  s->size = 0;
  s->capacity = sizeof s->inline_frames / sizeof s->inline_frames[0];
}

DW_ALWAYS_INLINE void stack_free(Stack *s) {
  if (s->frames != s->inline_frames) free(s->frames);
}

static bool stack_grow(Stack *s) {
  DwFrame *grown = dw_frames_grow(s->frames, s->size, &s->capacity, s->inline_frames);
  if (!grown) return false;
  s->frames = grown;
  return true;
}

DW_ALWAYS_INLINE bool stack_push(Stack *s, const TSLanguage *language, const Subtree *subtree, Length position,
                                 uint32_t child_depth, bool visible, bool inner_only) {
  if (s->size == s->capacity && !stack_grow(s)) return false;
  s->frames[s->size++] = dw_frame_of(language, subtree, position, child_depth, visible, inner_only);
  return true;
}

/* Takes the next child of `f`; returns its subtree and sets its position and alias. */
DW_ALWAYS_INLINE const Subtree *next_child(DwFrame *f, Length *position, TSSymbol *alias) {
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

bool ddplint_walk(TSNode root, DdplintEnterFn enter, DdplintLeaveFn leave, void *context, bool skip_anonymous_leaves,
                  const bool *leaf_symbols) {
  return ddplint_walk_inline(root, enter, leave, context, skip_anonymous_leaves, leaf_symbols);
}

/* The children of `subtree` at `position` into out[0 .. capacity); returns how many there are. */
static size_t collect_children(const TSTree *tree, const Subtree *subtree, Length position, bool named_only,
                               TSNode *out, size_t capacity) {
  if (ts_subtree_child_count(*subtree) == 0) return 0;
  Stack stack;
  stack_init(&stack);
  size_t n = 0;
  bool ok = stack_push(&stack, tree->language, subtree, position, 1, true, false);
  while (ok && stack.size > 0) {
    DwFrame *f = &stack.frames[stack.size - 1];
    if (f->index == f->count) {
      stack.size--;
      continue;
    }
    TSSymbol alias;
    const Subtree *child = next_child(f, &position, &alias);
    if (ts_subtree_visible(*child) || alias) {
      if (!named_only || dw_is_named(tree->language, *child, alias)) {
        if (n < capacity) out[n] = dw_make_node(tree, child, position, alias);
        ++n;
      }
    } else if (ts_subtree_visible_child_count(*child) > 0) {
      ok = stack_push(&stack, tree->language, child, position, 1, false, false);
    }
  }
  stack_free(&stack);
  return n;
}

size_t ddplint_children(TSNode node, bool named_only, TSNode *out, size_t capacity) {
  if (!node.id) return 0;
  Length position = {node.context[0], {node.context[1], node.context[2]}};
  return collect_children(node.tree, (const Subtree *)node.id, position, named_only, out, capacity);
}

static const TSNode kNullNode = {{0, 0, 0, 0}, NULL, NULL};

/* The first visible node below `subtree` (hidden, with visible_child_count > 0)
 * at `position`, as ts_node_child(node, 0). A hidden child with visible
 * descendants always holds the answer, so the descent never backtracks. */
static TSNode first_visible_descendant(const TSTree *tree, const Subtree *subtree, Length position) {
  const TSLanguage *language = tree->language;
descend:;
  DwFrame frame = dw_frame_of(language, subtree, position, 0, false, false);
  while (frame.index < frame.count) {
    TSSymbol alias;
    const Subtree *child = next_child(&frame, &position, &alias);
    if (ts_subtree_visible(*child) || alias) return dw_make_node(tree, child, position, alias);
    if (ts_subtree_child_count(*child) > 0 && child->ptr->visible_child_count > 0) {
      subtree = child;
      goto descend;
    }
  }
  return kNullNode;
}

TSNode ddplint_field(TSNode self, TSFieldId field_id) {
  /* The same search as ts_node_child_by_field_id (node.c), with the child
   * iteration inline and positions kept as we go. */
recur:
  if (!field_id || !self.id) return kNullNode;
  const Subtree *subtree = (const Subtree *)self.id;
  if (ts_subtree_child_count(*subtree) == 0 || subtree->ptr->visible_child_count == 0) return kNullNode;
  const TSTree *tree = self.tree;
  const TSLanguage *language = tree->language;
  const TSFieldMapEntry *field_map, *field_map_end;
  ts_language_field_map(language, subtree->ptr->production_id, &field_map, &field_map_end);
  if (field_map == field_map_end) return kNullNode;
  while (field_map->field_id < field_id) {
    field_map++;
    if (field_map == field_map_end) return kNullNode;
  }
  while (field_map_end[-1].field_id > field_id) {
    field_map_end--;
    if (field_map == field_map_end) return kNullNode;
  }
  DwFrame frame = dw_frame_of(language, subtree, (Length){self.context[0], {self.context[1], self.context[2]}}, 0, false, false);
  while (frame.index < frame.count) {
    Length position;
    TSSymbol alias;
    const Subtree *child = next_child(&frame, &position, &alias);
    if (ts_subtree_extra(*child)) continue;
    uint32_t index = frame.structural_index - 1;
    if (index < field_map->child_index) continue;
    TSNode node = dw_make_node(tree, child, position, alias);
    if (field_map->inherited) {
      if (field_map + 1 == field_map_end) {
        self = node;
        goto recur;
      }
      TSNode result = ddplint_field(node, field_id);
      if (result.id) return result;
      field_map++;
      if (field_map == field_map_end) return kNullNode;
    } else if (ts_subtree_visible(*child) || alias) {
      return node;
    } else if (ts_subtree_child_count(*child) > 0 && child->ptr->visible_child_count > 0) {
      return first_visible_descendant(tree, child, position);
    } else {
      field_map++;
      if (field_map == field_map_end) return kNullNode;
    }
  }
  return kNullNode;
}
