// Thin C++ layer over tree-sitter: parsing a SourceFile into a syntax tree and
// the node-kind and field ids the semantic model compares against.
#pragma once

#include <tree_sitter/api.h>

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "linter/source.hpp"
#include "linter/tree_walk.h"

extern "C" const TSLanguage* tree_sitter_python(void);
extern "C" const TSLanguage* tree_sitter_bash(void);

namespace ddplint {

/// Owns a tree-sitter tree. Nodes taken from it are valid while it lives.
class SyntaxTree {
 public:
  SyntaxTree() = default;
  /// `universal_newlines`: the tree was parsed from a copy of the text with each lone \r read as \n.
  explicit SyntaxTree(TSTree* tree, bool universal_newlines = false)
      : tree_(tree, &ts_tree_delete), universal_newlines_(universal_newlines) {}
  /// A tree parsed inside a ParseArenaScope (see there): `in_arena` when all
  /// of its memory is in the thread's parse arena (nothing to free then).
  SyntaxTree(TSTree* tree, bool universal_newlines, bool in_arena);
  TSNode root() const { return ts_tree_root_node(tree_.get()); }
  explicit operator bool() const { return tree_ != nullptr; }
  /// The tree-sitter tree (owned by this object), or nullptr.
  TSTree* get() const { return tree_.get(); }
  /// Records an edit of the text this tree was parsed from (byte offsets and
  /// row/byte-column points, as tree-sitter's TSInputEdit), so that a later
  /// parse_python(new_source, this) reuses the unchanged subtrees.
  void edit(const TSInputEdit& e) {
    if (tree_) ts_tree_edit(tree_.get(), &e);
  }
  /// True when the tree was parsed from a copy of the text in which each lone
  /// \r (not followed by \n) was a \n (see parse_python).
  bool universal_newlines() const { return universal_newlines_; }

 private:
  std::unique_ptr<TSTree, void (*)(TSTree*)> tree_{nullptr, &ts_tree_delete};
  bool universal_newlines_ = false;
};

/// The parse arena. While an object of this class lives, tree-sitter's
/// allocations on this thread come from one region of the thread's (2 MiB of
/// address space, mapped on first use, reused from scope to scope; pages are
/// touched only as used), and a tree parse_python builds from scratch there is
/// not freed node by node: the next scope simply reuses the region.
/// tree-sitter otherwise allocates and frees thousands of small blocks per
/// parse, and ts_tree_delete walks every node; with the arena, lint() on the
/// torch corpus went from 1.26x to 1.20x the time of tree-sitter's parse
/// alone (bench/README.md, "Eighth round", bench/ddplint_bench). A text over kMaxSourceBytes is parsed
/// with malloc as usual, and so is the rest of a parse that outgrows the
/// region; such a tree, or an incremental parse's, is freed as usual.
///
/// Rules: scopes do not nest (an inner one is inert); every SyntaxTree parsed
/// in a scope is destroyed on the same thread before the scope ends (lint()
/// holds both as locals), and a tree still alive then stops the program
/// (std::abort) rather than be overwritten; inside a scope, do not take memory
/// from tree-sitter that the caller frees with free() (ts_node_string).
class ParseArenaScope {
 public:
  ParseArenaScope();
  ~ParseArenaScope();
  ParseArenaScope(const ParseArenaScope&) = delete;
  ParseArenaScope& operator=(const ParseArenaScope&) = delete;

  /// Bytes of the per-thread region: room for the parse of a text of up to
  /// kMaxSourceBytes (476 KB went to the 11 KB largest file of bench/corpus/torch).
  static constexpr std::size_t kBytes = 2u * 1024u * 1024u;
  /// Bytes of the region that stay resident; the pages beyond are handed
  /// back to the system (madvise) once kTrimAfterScopes scopes in a row have
  /// not used them.
  static constexpr std::size_t kKeptBytes = 512u * 1024u;
  static constexpr int kTrimAfterScopes = 64;
  /// Largest text parsed in the region (43,690 bytes): a larger one is parsed
  /// with malloc throughout, even in a scope. A parse allocates about 44
  /// bytes per byte of ordinary text, frees included (30 KB of examples/ took
  /// 1.32 MB, 48 KB 2.09 MB: the region's high-water mark read with gdb);
  /// deep nesting takes more and outgrows the region.
  static constexpr std::size_t kMaxSourceBytes = kBytes / 48;

  /// The most bytes of the region the open scope on this thread has used so
  /// far (0 without one): for tests and measurements.
  static std::size_t high_water();

 private:
  bool owner_;  // false for an inner (inert) scope
};

/// Routes tree-sitter's allocations through the parse arena's hooks (`on`, the
/// default from before main) or back to tree-sitter's own allocator (malloc,
/// free); with the hooks off a ParseArenaScope is inert. For the benchmarks'
/// reference parse, which must be tree-sitter's own. Call it only while no
/// other thread uses tree-sitter and no ParseArenaScope is open (memory
/// allocated outside a scope may then be freed with the hooks on or off).
void set_parse_arena_hooks(bool on);

/// The most levels of indentation CPython's tokenizer accepts: a 100th level
/// raises "IndentationError: too many levels of indentation" (MAXINDENT, 100,
/// in CPython's Parser/tokenizer.h; the stack's level 0 is the margin).
/// tree-sitter-python's scanner keeps at most 511 levels in the state it
/// serializes (1,024 bytes, two per level) and was seen to crash at 515.
inline constexpr int kMaxIndentationLevels = 99;

/// True when `text` opens more than kMaxIndentationLevels levels of
/// indentation as CPython's tokenizer counts them: at the start of logical
/// lines only (not inside brackets or strings, f-strings' replacement fields
/// included, not after a backslash continuation), blank and comment-only
/// lines skipped, a tab advancing to the next multiple of 8 columns and a form
/// feed resetting the column; or more than 400 counted at every line start,
/// brackets or not (an unclosed bracket hides blocks from CPython's count but
/// not from tree-sitter's error recovery). Lines break at \n, \r\n and a
/// lone \r. Linear in the text; a text whose lines all start within 99
/// columns is answered from the line starts alone. parse_python returns an
/// empty tree for such a text.
bool too_deeply_indented(std::string_view text);

/// Parses `source` with tree-sitter-python. A leading BOM is excluded from
/// parsing (offsets stay relative to the whole buffer). Never fails on bad
/// syntax: errors appear as ERROR/MISSING nodes. Returns an empty tree if
/// tree-sitter itself fails (out of memory), and for a text that is
/// too_deeply_indented (CPython refuses it; tree-sitter-python can crash on it).
///
/// Python reads source with universal newlines; tree-sitter-python takes a
/// lone \r (old Mac line endings) for a space. A text with a lone \r is parsed
/// as a copy in which each lone \r is \n (the same length: byte offsets hold).
///
/// `previous`, if given, is the tree of the text before a series of edits, each
/// recorded with SyntaxTree::edit: parsing is then incremental and costs about
/// the size of the change (the language server's path). The result is the
/// same tree a parse from scratch gives. `previous` must have been parsed with
/// the same BOM length as `source`. It is not reused when either text has a
/// lone \r (an edit next to a \r changes what the byte before it reads as).
SyntaxTree parse_python(const SourceFile& source, const SyntaxTree* previous = nullptr);

/// The language a source is linted as.
enum class Language : std::uint8_t {
  Python,  ///< tree-sitter-python, the semantic model, the rules' check()
  Shell,   ///< tree-sitter-bash, the launch model (linter/launch_model.hpp), the rules' check_launch()
};

/// True for a file name that names a shell or SLURM batch script by its
/// extension: `*.sh`, `*.bash`, `*.slurm`, `*.sbatch`.
bool has_shell_extension(std::string_view file_name);

/// True when `text` starts with a shebang line naming sh or bash
/// (`#!/bin/bash`, `#!/usr/bin/env bash`, `#!/bin/sh -l`).
bool has_shell_shebang(std::string_view text);

/// True for a Markdown file name (`*.md`, `*.markdown`): its fenced shell
/// blocks are linted as launch scripts (markdown_shell_view).
bool has_markdown_extension(std::string_view file_name);

/// The shell of a Markdown text, for parse_shell: a text of the same size in
/// which the lines of fenced blocks whose info string names a shell (`sh`,
/// `bash`, `shell`, `zsh`, `shellscript`), or of blocks without a language
/// whose first line starts a launch (`python`, `torchrun`, `accelerate`,
/// `deepspeed`, `srun`, `mpirun`, `export`, `CUDA_VISIBLE_DEVICES=`/`NCCL_*=`
/// before a command), keep their bytes and everything
/// else is blanked (spaces; line ends kept), so offsets, lines and columns are
/// the Markdown file's. A `$ ` prompt before a command is blanked; in
/// `console`/`shell-session` blocks only prompted commands (and the lines
/// they continue with `\`) are kept, not their output. An unclosed fence runs
/// to the end of the text, as in CommonMark. Fences inside an HTML comment
/// (`<!-- ... -->`) are commented out and not read. Each block is read alone:
/// a `<placeholder>` word is a variable (an unknown value), and a block that
/// tree-sitter-bash cannot parse by itself is not read at all.
/// `kept` (may be null) receives the byte ranges of the blocks read, in order.
std::string markdown_shell_view(std::string_view text,
                                std::vector<std::pair<std::uint32_t, std::uint32_t>>* kept = nullptr);

/// The language of a file: Shell for a shell extension, for a Markdown file
/// (its shell blocks), or for a name without an extension whose text starts
/// with a sh/bash shebang; Python otherwise (`.py`, standard input `-`,
/// editor buffers named anything else).
Language language_of(std::string_view path, std::string_view text);

/// Parses `source` with tree-sitter-bash (launch scripts, SLURM batch files;
/// for a Markdown path, markdown_shell_view of its text).
/// Like parse_python, never fails on bad syntax and keeps byte offsets
/// relative to the whole buffer (a leading BOM is excluded); `previous` makes
/// the parse incremental (it must be a parse_shell tree). The tree is not
/// allocated in the parse arena.
SyntaxTree parse_shell(const SourceFile& source, const SyntaxTree* previous = nullptr);

/// Parses `source` with the grammar of `language`.
SyntaxTree parse_source(const SourceFile& source, Language language, const SyntaxTree* previous = nullptr);

/// The language a tree was parsed in (Shell for a parse_shell tree).
Language language_of(const SyntaxTree& tree);

/// Node kinds (grammar symbols) and field ids of tree-sitter-python, looked up
/// once. Comparing ids avoids string compares in the hot walk.
struct Kinds {
  TSSymbol module, identifier, attribute, call, argument_list, keyword_argument, list_splat,
      dictionary_splat, import_statement, import_from_statement, aliased_import, dotted_name,
      wildcard_import, assignment, augmented_assignment, expression_statement, for_statement,
      while_statement, if_statement, elif_clause, else_clause, with_statement, with_clause,
      with_item, function_definition, decorated_definition, decorator, class_definition, lambda,
      block, comparison_operator, boolean_operator, not_operator, binary_operator, unary_operator,
      parenthesized_expression, integer, float_, string, string_content, interpolation,
      concatenated_string, true_, false_, none, conditional_expression, comment, subscript, tuple,
      list, pattern_list, tuple_pattern, list_comprehension, generator_expression,
      dictionary_comprehension, set_comprehension, for_in_clause, if_clause, typed_parameter, default_parameter,
      typed_default_parameter, parameters, return_statement, named_expression, try_statement,
      expression_list, print_statement, exec_statement, raise_statement, except_clause, assert_statement, dictionary, pair,
      break_statement;
  TSFieldId f_name, f_alias, f_module_name, f_function, f_arguments, f_object, f_attribute,
      f_left, f_right, f_value, f_body, f_condition, f_consequence, f_alternative, f_operator,
      f_parameters, f_definition, f_subscript, f_operators, f_argument, f_superclasses;
};

/// Builds the table of ids (see kinds()); throws std::logic_error if the
/// grammar lacks a node kind or field the model uses.
Kinds make_kinds();
/// The ids for tree-sitter-python (computed on first use; thread-safe).
inline const Kinds& kinds() {
  static const Kinds k = make_kinds();  // inline: a guard test per call, not a call
  return k;
}

/// Text of `node` within `text`.
inline std::string_view node_text(TSNode node, std::string_view text) {
  uint32_t b = ts_node_start_byte(node), e = ts_node_end_byte(node);
  if (e > text.size() || b > e) return {};
  return text.substr(b, e - b);
}

/// Child by field id, or a null node.
inline TSNode field(TSNode node, TSFieldId id) { return ddplint_field(node, id); }

/// A short list held inline (no allocation for up to N items, the common
/// case), continued on the heap beyond. Iterable and indexable like a vector.
template <typename T, std::size_t N>
class InlineList {
 public:
  static constexpr std::size_t kInline = N;
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  const T* data() const { return size_ <= N ? inline_ : heap_.data(); }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T& operator[](std::size_t i) const { return data()[i]; }
  const T& front() const { return data()[0]; }
  const T& back() const { return data()[size_ - 1]; }
  /// Appends `item` (to the heap once more than N are held).
  void push_back(const T& item) {
    if (size_ < N) {
      inline_[size_++] = item;
      return;
    }
    if (size_ == N) heap_.assign(inline_, inline_ + N);
    heap_.push_back(item);
    ++size_;
  }
  /// Makes the list `n` items long, their values unset (inline storage keeps
  /// what it held), and returns where to write them.
  T* fill(std::size_t n) {
    size_ = n;
    if (n <= N) return inline_;
    heap_.resize(n);
    return heap_.data();
  }

 private:
  T inline_[N];
  std::vector<T> heap_;
  std::size_t size_ = 0;
};

/// A node's children: up to 8 held inline (most nodes have a few), more on the heap.
using NodeList = InlineList<TSNode, 8>;

/// The children of `node` in order (only named ones if `named_only`; comments
/// are named). O(children) in all, without allocating for up to 8: repeated
/// ts_node_child(node, i) costs O(i) each and is quadratic on long argument
/// lists or statement sequences.
NodeList children(TSNode node, bool named_only = true);

/// The one expression inside the parentheses of a `parenthesized_expression`,
/// comments between them left out (`(step % n == 0  # every n\n or last)`);
/// a null node when `node` is not one or holds other than one expression.
TSNode parenthesized_inner(TSNode node);

/// Same node (tree-sitter has no operator==).
inline bool same_node(TSNode a, TSNode b) { return ts_node_eq(a, b); }

}  // namespace ddplint
