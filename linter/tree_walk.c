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
  bool inner_only;                /* named leaf children only if marked in leaf_symbols */
} Frame;

typedef struct {
  Frame *frames;
  size_t size, capacity;
  Frame inline_frames[32];
} Stack;

static inline void stack_init(Stack *s) {
  s->frames = s->inline_frames;
  s->size = 0;
  s->capacity = sizeof s->inline_frames / sizeof s->inline_frames[0];
}

#define ALWAYS_INLINE static inline __attribute__((always_inline))

ALWAYS_INLINE void stack_free(Stack *s) {
  if (s->frames != s->inline_frames) free(s->frames);
}

static bool stack_grow(Stack *s) {
  size_t capacity = s->capacity * 2;
  Frame *frames = malloc(capacity * sizeof(Frame));
  if (!frames) return false;
  memcpy(frames, s->frames, s->size * sizeof(Frame));
  stack_free(s);
  s->frames = frames;
  s->capacity = capacity;
  return true;
}

/* A frame for the children of `subtree` (which has children: it is not inline) at `position`. */
ALWAYS_INLINE Frame frame_of(const TSLanguage *language, const Subtree *subtree, Length position, uint32_t child_depth,
                             bool visible, bool inner_only) {
  Frame f;
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

ALWAYS_INLINE bool stack_push(Stack *s, const TSLanguage *language, const Subtree *subtree, Length position,
                              uint32_t child_depth, bool visible, bool inner_only) {
  if (s->size == s->capacity && !stack_grow(s)) return false;
  s->frames[s->size++] = frame_of(language, subtree, position, child_depth, visible, inner_only);
  return true;
}

/* Takes the next child of `f`; returns its subtree and sets its position and alias. */
ALWAYS_INLINE const Subtree *next_child(Frame *f, Length *position, TSSymbol *alias) {
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

/* ts_language_symbol_metadata(language, symbol).named, inline (language.c). */
ALWAYS_INLINE bool symbol_named(const TSLanguage *language, TSSymbol symbol) {
  if (symbol == ts_builtin_sym_error) return true;
  if (symbol == ts_builtin_sym_error_repeat) return false;
  return language->symbol_metadata[symbol].named;
}

ALWAYS_INLINE bool is_named(const TSLanguage *language, Subtree subtree, TSSymbol alias) {
  return alias ? symbol_named(language, alias) : ts_subtree_named(subtree);
}

/* ts_node_new (node.c), inline. */
ALWAYS_INLINE TSNode make_node(const TSTree *tree, const Subtree *subtree, Length position, TSSymbol alias) {
  TSNode node = {{position.bytes, position.extent.row, position.extent.column, alias}, subtree, tree};
  return node;
}

/* ts_language_public_symbol (language.c), inline. */
ALWAYS_INLINE TSSymbol public_symbol(const TSLanguage *language, TSSymbol symbol) {
  return symbol == ts_builtin_sym_error ? symbol : language->public_symbol_map[symbol];
}

ALWAYS_INLINE void describe(const TSTree *tree, const Subtree *subtree, Length position, TSSymbol alias, bool named,
                            uint32_t depth, DdplintVisit *visit) {
  visit->node = make_node(tree, subtree, position, alias);
  visit->symbol = public_symbol(tree->language, alias ? alias : ts_subtree_symbol(*subtree));
  visit->named = named;
  visit->depth = depth;
}


/* Makes room for one more suspended frame; returns the (maybe moved) array, or NULL without memory. */
static Frame *frames_grow(Frame *frames, size_t size, size_t *capacity, Frame *inline_frames) {
  size_t grown = *capacity * 2;
  Frame *more = malloc(grown * sizeof(Frame));
  if (!more) return NULL;
  memcpy(more, frames, size * sizeof(Frame));
  if (frames != inline_frames) free(frames);
  *capacity = grown;
  return more;
}

bool ddplint_walk(TSNode root, DdplintEnterFn enter, DdplintLeaveFn leave, void *context, bool skip_anonymous_leaves,
                  const bool *leaf_symbols) {
  if (ts_node_is_null(root)) return true;
  const TSTree *tree = root.tree;
  const TSLanguage *language = tree->language;
  const Subtree *subtree = (const Subtree *)root.id;
  Length position = {root.context[0], {root.context[1], root.context[2]}};
  DdplintVisit visit;
  TSSymbol root_alias = (TSSymbol)root.context[3];
  describe(tree, subtree, position, root_alias, is_named(language, *subtree, root_alias), 0, &visit);
  int descend = enter(context, &visit);
  if (descend == DDPLINT_SKIP_CHILDREN || ts_subtree_child_count(*subtree) == 0) {
    leave(context, 0);
    return true;
  }
  /* The frame being walked is the local `f` (kept in registers across the
   * enter/leave calls); the frames of its ancestors wait in `frames`. */
  Frame inline_frames[32];
  Frame *frames = inline_frames;
  size_t size = 0, capacity = sizeof inline_frames / sizeof inline_frames[0];
  bool ok = true;
  Frame f = frame_of(language, subtree, position, 1, true, descend == DDPLINT_VISIT_INNER_CHILDREN);
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
      bool named = alias ? symbol_named(language, alias) : c.data.named;
      if (skip_anonymous_leaves && !named && !c.data.is_missing) continue;
      visit.symbol = public_symbol(language, alias ? alias : c.data.symbol);
      if (f.inner_only && named && !c.data.is_missing && visit.symbol != ts_builtin_sym_error &&
          !(leaf_symbols && leaf_symbols[visit.symbol]))
        continue;
      visit.node = make_node(tree, child, position, alias);
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
      bool named = alias ? symbol_named(language, alias) : h->named;
      if (skip_anonymous_leaves && !named && h->child_count == 0 && !h->is_missing) continue;
      visit.symbol = public_symbol(language, alias ? alias : h->symbol);
      /* a leaf: no visible children (hidden ones may hold tokens, as in string_content) */
      if (f.inner_only && named && (h->child_count == 0 || h->visible_child_count == 0) && !h->is_missing &&
          visit.symbol != ts_builtin_sym_error && !(leaf_symbols && leaf_symbols[visit.symbol]))
        continue;
      visit.node = make_node(tree, child, position, alias);
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
      if (size == capacity) {
        Frame *grown = frames_grow(frames, size, &capacity, inline_frames);
        if (!grown) {
          ok = false;
          break;
        }
        frames = grown;
      }
      frames[size++] = f;
      f = frame_of(language, child, position, push_depth, push_visible, push_inner);
    }
  }
  if (frames != inline_frames) free(frames);
  return ok;
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
    Frame *f = &stack.frames[stack.size - 1];
    if (f->index == f->count) {
      stack.size--;
      continue;
    }
    TSSymbol alias;
    const Subtree *child = next_child(f, &position, &alias);
    if (ts_subtree_visible(*child) || alias) {
      if (!named_only || is_named(tree->language, *child, alias)) {
        if (n < capacity) out[n] = make_node(tree, child, position, alias);
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
  Frame frame = frame_of(language, subtree, position, 0, false, false);
  while (frame.index < frame.count) {
    TSSymbol alias;
    const Subtree *child = next_child(&frame, &position, &alias);
    if (ts_subtree_visible(*child) || alias) return make_node(tree, child, position, alias);
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
  Frame frame = frame_of(language, subtree, (Length){self.context[0], {self.context[1], self.context[2]}}, 0, false, false);
  while (frame.index < frame.count) {
    Length position;
    TSSymbol alias;
    const Subtree *child = next_child(&frame, &position, &alias);
    if (ts_subtree_extra(*child)) continue;
    uint32_t index = frame.structural_index - 1;
    if (index < field_map->child_index) continue;
    TSNode node = make_node(tree, child, position, alias);
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
