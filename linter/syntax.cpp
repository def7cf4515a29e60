#include "linter/syntax.hpp"

#include "linter/tree_walk.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <sys/mman.h>

#if defined(__SANITIZE_ADDRESS__)
#define DDPLINT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DDPLINT_ASAN 1
#endif
#endif
#ifdef DDPLINT_ASAN
#include <sanitizer/asan_interface.h>
#define DDPLINT_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define DDPLINT_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define DDPLINT_POISON(p, n) ((void)(p), (void)(n))
#define DDPLINT_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace ddplint {

// ---------------------------------------------------------------------------
// The parse arena (ParseArenaScope): tree-sitter's allocator hooks
// (ts_set_allocator, installed once before main) serve a thread's requests
// from its region while a scope is open there, and pass everything else to
// malloc. A block carries its size in a 16-byte header (for realloc), so
// blocks stay 16-byte aligned like malloc's. Freeing a block is a no-op,
// except the region's last block, which is given back (tree-sitter often
// frees what it just allocated); realloc of the last block grows in place.
namespace {
struct ParseArena {
  unsigned char* base = nullptr;  // ParseArenaScope::kBytes, or null before first use
  std::size_t used = 0;
  std::size_t high = 0;  // the most `used` has been in this scope
  std::size_t resident = 0;  // the most `used` has been since pages were last handed back
  int small_scopes = 0;      // scopes in a row that stayed within kKeptBytes since then
  std::size_t last = SIZE_MAX;  // offset of the last block's header, SIZE_MAX if none
  bool active = false;          // a scope is open on this thread
  bool overflowed = false;      // a request of the current parse went to malloc (reset by parse_python)
  int live_trees = 0;           // trees parsed in this scope not yet destroyed
};
// Trivially destructible, so constant-initialized: the hooks read it without
// the guard a thread_local with a destructor is reached through (which made
// every allocation of tree-sitter's, arena or not, about 4% of the parse dearer).
thread_local ParseArena t_arena;
// Unmaps the thread's region when the thread exits: reached once, when the region is mapped.
struct ArenaUnmap {
  bool armed = false;
  ~ArenaUnmap() {
    if (!armed || t_arena.base == nullptr) return;
    DDPLINT_UNPOISON(t_arena.base, ParseArenaScope::kBytes);
    munmap(t_arena.base, ParseArenaScope::kBytes);
    t_arena.base = nullptr;
  }
};
thread_local ArenaUnmap t_arena_unmap;
constexpr std::size_t kHeader = 16;

bool in_arena(const void* p) {
  const ParseArena& a = t_arena;
  auto at = reinterpret_cast<std::uintptr_t>(p), base = reinterpret_cast<std::uintptr_t>(a.base);
  return a.base != nullptr && at >= base && at - base < ParseArenaScope::kBytes;
}

// True for the region's last block (`p` in the arena).
bool last_block(const void* p) {
  const ParseArena& a = t_arena;
  return a.active && a.last != SIZE_MAX && static_cast<const unsigned char*>(p) - kHeader == a.base + a.last;
}

std::size_t block_size(const void* p) {
  std::size_t n;
  std::memcpy(&n, static_cast<const unsigned char*>(p) - kHeader, sizeof n);
  return n;
}

// A block of `n` bytes from the region, or null when it does not fit.
void* arena_take(std::size_t n) {
  ParseArena& a = t_arena;
  std::size_t need = (n + kHeader + 15) & ~std::size_t{15};
  if (need < n || need > ParseArenaScope::kBytes - a.used) {
    a.overflowed = true;
    return nullptr;
  }
  unsigned char* header = a.base + a.used;
  DDPLINT_UNPOISON(header, need);
  std::memcpy(header, &n, sizeof n);
  a.last = a.used;
  a.used += need;
  a.high = std::max(a.high, a.used);
  return header + kHeader;
}

// As tree-sitter's own allocator does (lib/src/alloc.c): no memory stops the program.
void* checked(void* p, std::size_t n) {
  if (p == nullptr && n > 0) {
    std::fprintf(stderr, "tree-sitter failed to allocate %zu bytes\n", n);
    std::abort();
  }
  return p;
}

void* hook_malloc(std::size_t n) {
  if (t_arena.active) {
    if (void* p = arena_take(n)) return p;
  }
  return checked(std::malloc(n), n);
}

void* hook_calloc(std::size_t count, std::size_t size) {
  if (t_arena.active && (size == 0 || count <= SIZE_MAX / size)) {
    if (void* p = arena_take(count * size)) return std::memset(p, 0, count * size);  // the region is reused
  }
  return checked(std::calloc(count, size), count * size);
}

void hook_free(void* p) {
  if (p == nullptr) return;
  if (!in_arena(p)) {
    std::free(p);
    return;
  }
  ParseArena& a = t_arena;
  if (last_block(p)) {  // give it back
    unsigned char* header = static_cast<unsigned char*>(p) - kHeader;
    a.used = a.last;
    a.last = SIZE_MAX;
    DDPLINT_POISON(header, ParseArenaScope::kBytes - a.used);
  }
}

void* hook_realloc(void* p, std::size_t n) {
  if (p == nullptr) return hook_malloc(n);
  if (!in_arena(p)) return checked(std::realloc(p, n), n);
  ParseArena& a = t_arena;
  std::size_t old = block_size(p);
  if (last_block(p)) {  // grow or shrink in place
    unsigned char* header = static_cast<unsigned char*>(p) - kHeader;
    std::size_t need = (n + kHeader + 15) & ~std::size_t{15};
    if (need >= n && need <= ParseArenaScope::kBytes - a.last) {
      DDPLINT_UNPOISON(header, need);
      std::memcpy(header, &n, sizeof n);
      a.used = a.last + need;
      a.high = std::max(a.high, a.used);
      return p;
    }
  }
  void* q = hook_malloc(n);
  if (q != nullptr) std::memcpy(q, p, old < n ? old : n);
  return q;  // (the old block stays in the region until the scope ends)
}

void install_hooks() { ts_set_allocator(&hook_malloc, &hook_calloc, &hook_realloc, &hook_free); }

// Installed before main, while the process has one thread.
bool hooks_on = (install_hooks(), true);

// Deleters of trees parsed in a scope.
void release_arena_tree(TSTree*) { --t_arena.live_trees; }
void delete_arena_tree(TSTree* tree) {  // outgrew the region: parts of it are malloc's
  --t_arena.live_trees;
  ts_tree_delete(tree);
}
}  // namespace

void set_parse_arena_hooks(bool on) {
  if (on) install_hooks();
  else ts_set_allocator(nullptr, nullptr, nullptr, nullptr);  // tree-sitter's defaults
  hooks_on = on;
}

ParseArenaScope::ParseArenaScope() : owner_(hooks_on && !t_arena.active) {
  if (!owner_) return;
  ParseArena& a = t_arena;
  if (a.base == nullptr) {
    // its own mapping, so that pages can be handed back (below)
    void* region = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (region == MAP_FAILED) {  // no arena: tree-sitter uses malloc as usual
      owner_ = false;
      return;
    }
    a.base = static_cast<unsigned char*>(region);
    t_arena_unmap.armed = true;
    DDPLINT_POISON(a.base, kBytes);
  }
  a.used = 0;
  a.high = 0;
  a.last = SIZE_MAX;
  a.live_trees = 0;
  a.active = true;
}

ParseArenaScope::~ParseArenaScope() {
  if (!owner_) return;
  ParseArena& a = t_arena;
  if (a.live_trees != 0) {
    std::fputs("ddplint: internal error: a syntax tree outlived its parse arena\n", stderr);
    std::abort();
  }
  a.active = false;
  DDPLINT_POISON(a.base, kBytes);
  // Once kTrimAfterScopes scopes in a row have stayed within kKeptBytes after
  // a larger one, the pages beyond go back to the system: resident memory then
  // stays at what the usual file needs (each thread has a region; at -j 2 over
  // the 370 MB corpus, 4 MiB more were kept otherwise). Not after each large
  // file: a run of files of 20 KB and more then faulted the pages back in for
  // each (5-12% slower than without the arena).
  if (a.high > kKeptBytes) {
    a.resident = std::max(a.resident, a.high);
    a.small_scopes = 0;
  } else if (a.resident > kKeptBytes && ++a.small_scopes >= kTrimAfterScopes) {
    madvise(a.base + kKeptBytes, kBytes - kKeptBytes, MADV_DONTNEED);
    a.resident = kKeptBytes;
    a.small_scopes = 0;
  }
}

std::size_t ParseArenaScope::high_water() { return t_arena.active ? t_arena.high : 0; }

SyntaxTree::SyntaxTree(TSTree* tree, bool universal_newlines, bool in_arena)
    : tree_(tree, in_arena ? &release_arena_tree : &delete_arena_tree), universal_newlines_(universal_newlines) {
  if (tree != nullptr) ++t_arena.live_trees;
}

namespace {
TSSymbol named_symbol(const TSLanguage* lang, const char* name) {
  TSSymbol s = ts_language_symbol_for_name(lang, name, static_cast<uint32_t>(std::strlen(name)), true);
  if (s == 0) throw std::logic_error(std::string("tree-sitter-python has no node kind ") + name);
  return s;
}
TSFieldId field_id(const TSLanguage* lang, const char* name) {
  TSFieldId f = ts_language_field_id_for_name(lang, name, static_cast<uint32_t>(std::strlen(name)));
  if (f == 0) throw std::logic_error(std::string("tree-sitter-python has no field ") + name);
  return f;
}

}  // namespace

Kinds make_kinds() {
  const TSLanguage* L = tree_sitter_python();
  Kinds k{};
  auto s = [&](const char* n) { return named_symbol(L, n); };
  k.module = s("module");
  k.identifier = s("identifier");
  k.attribute = s("attribute");
  k.call = s("call");
  k.argument_list = s("argument_list");
  k.keyword_argument = s("keyword_argument");
  k.list_splat = s("list_splat");
  k.dictionary_splat = s("dictionary_splat");
  k.import_statement = s("import_statement");
  k.import_from_statement = s("import_from_statement");
  k.aliased_import = s("aliased_import");
  k.dotted_name = s("dotted_name");
  k.wildcard_import = s("wildcard_import");
  k.assignment = s("assignment");
  k.augmented_assignment = s("augmented_assignment");
  k.expression_statement = s("expression_statement");
  k.for_statement = s("for_statement");
  k.while_statement = s("while_statement");
  k.if_statement = s("if_statement");
  k.elif_clause = s("elif_clause");
  k.else_clause = s("else_clause");
  k.with_statement = s("with_statement");
  k.with_clause = s("with_clause");
  k.with_item = s("with_item");
  k.function_definition = s("function_definition");
  k.decorated_definition = s("decorated_definition");
  k.decorator = s("decorator");
  k.class_definition = s("class_definition");
  k.lambda = s("lambda");
  k.block = s("block");
  k.comparison_operator = s("comparison_operator");
  k.boolean_operator = s("boolean_operator");
  k.not_operator = s("not_operator");
  k.binary_operator = s("binary_operator");
  k.unary_operator = s("unary_operator");
  k.parenthesized_expression = s("parenthesized_expression");
  k.integer = s("integer");
  k.float_ = s("float");
  k.string = s("string");
  k.string_content = s("string_content");
  k.interpolation = s("interpolation");
  k.concatenated_string = s("concatenated_string");
  k.true_ = s("true");
  k.false_ = s("false");
  k.none = s("none");
  k.conditional_expression = s("conditional_expression");
  k.comment = s("comment");
  k.subscript = s("subscript");
  k.tuple = s("tuple");
  k.list = s("list");
  k.pattern_list = s("pattern_list");
  k.tuple_pattern = s("tuple_pattern");
  k.list_comprehension = s("list_comprehension");
  k.generator_expression = s("generator_expression");
  k.dictionary_comprehension = s("dictionary_comprehension");
  k.set_comprehension = s("set_comprehension");
  k.for_in_clause = s("for_in_clause");
  k.if_clause = s("if_clause");
  k.typed_parameter = s("typed_parameter");
  k.default_parameter = s("default_parameter");
  k.typed_default_parameter = s("typed_default_parameter");
  k.parameters = s("parameters");
  k.return_statement = s("return_statement");
  k.named_expression = s("named_expression");
  k.try_statement = s("try_statement");
  k.expression_list = s("expression_list");
  k.print_statement = s("print_statement");
  k.exec_statement = s("exec_statement");
  k.raise_statement = s("raise_statement");
  k.except_clause = s("except_clause");
  k.assert_statement = s("assert_statement");
  k.break_statement = s("break_statement");
  k.dictionary = s("dictionary");
  k.pair = s("pair");
  auto f = [&](const char* n) { return field_id(L, n); };
  k.f_name = f("name");
  k.f_alias = f("alias");
  k.f_module_name = f("module_name");
  k.f_function = f("function");
  k.f_arguments = f("arguments");
  k.f_object = f("object");
  k.f_attribute = f("attribute");
  k.f_left = f("left");
  k.f_right = f("right");
  k.f_value = f("value");
  k.f_body = f("body");
  k.f_condition = f("condition");
  k.f_consequence = f("consequence");
  k.f_alternative = f("alternative");
  k.f_operator = f("operator");
  k.f_parameters = f("parameters");
  k.f_definition = f("definition");
  k.f_subscript = f("subscript");
  k.f_operators = f("operators");
  k.f_argument = f("argument");
  k.f_superclasses = f("superclasses");
  return k;
}

NodeList children(TSNode node, bool named_only) {
  NodeList list;
  std::size_t n = ddplint_children(node, named_only, list.fill(NodeList::kInline), NodeList::kInline);
  TSNode* out = list.fill(n);  // the first kInline are in place already
  if (n > NodeList::kInline) ddplint_children(node, named_only, out, n);
  return list;
}

TSNode parenthesized_inner(TSNode node) {
  const Kinds& k = kinds();
  if (ts_node_is_null(node) || ts_node_symbol(node) != k.parenthesized_expression) return TSNode{};
  TSNode inner{};
  int count = 0;
  for (TSNode ch : children(node)) {
    if (ts_node_symbol(ch) == k.comment) continue;
    inner = ch;
    ++count;
  }
  return count == 1 ? inner : TSNode{};
}

namespace {
// Suspends the thread's parse arena while it lives, if `pause` (a text too
// large for the region: filling it before going on with malloc cost more than
// malloc alone).
class ArenaPause {
 public:
  explicit ArenaPause(bool pause) : paused_(pause && t_arena.active) {
    if (paused_) t_arena.active = false;
  }
  ~ArenaPause() {
    if (paused_) t_arena.active = true;
  }
  ArenaPause(const ArenaPause&) = delete;
  ArenaPause& operator=(const ArenaPause&) = delete;

 private:
  bool paused_;
};
}  // namespace

// A leading BOM is left out of the parse (offsets stay those of the whole buffer).
static void exclude_bom(TSParser* parser, const SourceFile& source, std::string_view text) {
  if (source.bom_length() == 0) return;
  TSRange range{};
  range.start_byte = source.bom_length();
  range.start_point = {0, source.bom_length()};
  range.end_byte = static_cast<uint32_t>(text.size());
  range.end_point = {UINT32_MAX, UINT32_MAX};
  ts_parser_set_included_ranges(parser, &range, 1);
}

namespace {

// The column a line's indentation reaches, as CPython's tokenizer counts it
// (a tab to the next multiple of 8, a form feed back to 0); `at` is left on
// the first byte after the indentation.
int indentation_column(std::string_view text, std::size_t& at) {
  int column = 0;
  for (; at < text.size(); ++at) {
    char c = text[at];
    if (c == ' ')
      ++column;
    else if (c == '\t')
      column = (column / 8 + 1) * 8;
    else if (c == '\f')
      column = 0;
    else
      break;
  }
  return column;
}

// True when some line's indentation reaches column kMaxIndentationLevels: a
// text without one cannot open that many levels (each level is deeper by at
// least one column), whatever its brackets and strings. Lines break at \n,
// \r\n and a lone \r, as Python's universal newlines (and parse_python) read them.
bool some_line_indented_past_limit(std::string_view text) {
  for (std::size_t at = 0; at < text.size();) {
    if (indentation_column(text, at) >= kMaxIndentationLevels) return true;
    std::size_t eol = text.find_first_of("\r\n", at);
    if (eol == std::string_view::npos) break;
    at = eol + 1;
  }
  return false;
}

// True when the quote at `at` opens an f-string (or a t-string): the letters
// just before it are a string prefix holding f or t (`f"`, `rf'`, `Ft"`).
bool formatted_string_at(std::string_view text, std::size_t at) {
  std::size_t start = at;
  while (start > 0 && at - start < 3 && std::isalpha(static_cast<unsigned char>(text[start - 1]))) --start;
  if (start > 0 && (std::isalnum(static_cast<unsigned char>(text[start - 1])) || text[start - 1] == '_'))
    return false;  // the end of a longer name: no prefix
  bool formatted = false;
  for (std::size_t i = start; i < at; ++i) {
    char c = static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
    if (c != 'r' && c != 'b' && c != 'u' && c != 'f' && c != 't') return false;
    formatted = formatted || c == 'f' || c == 't';
  }
  return formatted;
}

// Past a string literal that opens at `at` (its quote): a backslash escapes
// the next byte (in raw strings too, for where the literal ends); a
// single-quoted literal also ends at a line break (unterminated), except
// inside a replacement field of an f-string, which since Python 3.12 may
// span lines and hold strings of its own, even in the same quotes
// (`f"{x["key"]}"`); `depth` bounds that nesting.
std::size_t skip_string(std::string_view text, std::size_t at, int depth) {
  const bool formatted = formatted_string_at(text, at);
  const char quote = text[at];
  const bool triple = at + 2 < text.size() && text[at + 1] == quote && text[at + 2] == quote;
  at += triple ? 3 : 1;
  int fields = 0;  // open replacement fields
  while (at < text.size()) {
    char c = text[at];
    if (c == '\\') {
      at += 2;
    } else if (formatted && c == '{') {
      if (fields == 0 && at + 1 < text.size() && text[at + 1] == '{') ++at;  // `{{`: a brace
      else ++fields;
      ++at;
    } else if (formatted && c == '}') {
      if (fields > 0) --fields;
      ++at;
    } else if (fields > 0 && (c == '\'' || c == '"') && depth < 8) {
      at = skip_string(text, at, depth + 1);
    } else if (c == quote) {
      if (!triple) return at + 1;
      if (at + 2 < text.size() && text[at + 1] == quote && text[at + 2] == quote) return at + 3;
      ++at;
    } else if (!triple && fields == 0 && (c == '\n' || c == '\r')) {
      return at;
    } else {
      ++at;
    }
  }
  return text.size();
}

// Past kParserLevels levels counted at every line start, brackets or not,
// tree-sitter-python's scanner comes near the 511 it keeps (an unclosed
// bracket before deep blocks hides them from CPython's count, not from the
// parser's error recovery).
constexpr int kParserLevels = 400;

}  // namespace

bool too_deeply_indented(std::string_view text) {
  if (!some_line_indented_past_limit(text)) return false;
  int levels[kMaxIndentationLevels + 1] = {0};  // the logical lines' stack; levels[0] is the margin
  int top = 0, brackets = 0;
  std::vector<int> lines{0};  // the stack of every line start, brackets or not
  bool line_start = true;
  for (std::size_t at = 0; at < text.size();) {
    if (line_start) {
      line_start = false;
      int column = indentation_column(text, at);
      if (at >= text.size()) break;
      char c = text[at];
      if (c != '\n' && c != '\r' && c != '#') {  // blank or comment-only lines open nothing
        if (column > lines.back()) {
          if (static_cast<int>(lines.size()) > kParserLevels) return true;
          lines.push_back(column);
        } else {
          while (lines.size() > 1 && column < lines.back()) lines.pop_back();
        }
        if (brackets == 0) {
          if (column > levels[top]) {
            if (top == kMaxIndentationLevels) return true;
            levels[++top] = column;
          } else {
            while (top > 0 && column < levels[top]) --top;
          }
        }
      }
      continue;
    }
    switch (text[at]) {
      case '\r':
        if (at + 1 < text.size() && text[at + 1] == '\n') ++at;
        [[fallthrough]];
      case '\n':
        line_start = true;
        ++at;
        break;
      case '#': {
        std::size_t end = text.find_first_of("\r\n", at);
        at = end == std::string_view::npos ? text.size() : end;
        break;
      }
      case '\\':  // a continuation (the line break after it starts no logical line)
        at += (at + 2 < text.size() && text[at + 1] == '\r' && text[at + 2] == '\n') ? 3 : 2;
        break;
      case '(':
      case '[':
      case '{':
        ++brackets;
        ++at;
        break;
      case ')':
      case ']':
      case '}':
        if (brackets > 0) --brackets;
        ++at;
        break;
      case '\'':
      case '"':
        at = skip_string(text, at, 0);
        break;
      default:
        ++at;
    }
  }
  return false;
}

SyntaxTree parse_python(const SourceFile& source, const SyntaxTree* previous) {
  ArenaPause pause(source.text().size() > ParseArenaScope::kMaxSourceBytes);  // (outlives the parser)
  if (too_deeply_indented(source.text())) return {};  // (CPython refuses it; the parser can crash on it)
  std::unique_ptr<TSParser, void (*)(TSParser*)> parser(ts_parser_new(), &ts_parser_delete);
  if (!parser || !ts_parser_set_language(parser.get(), tree_sitter_python())) return {};
  std::string_view text = source.text();
  // tree-sitter-python takes a lone \r (old Mac line endings) for a space, so
  // the statements of such a file run together into a syntax error. The
  // parser gets a copy in which each lone \r is \n: the same length, so every
  // byte offset, and the rows (LineIndex breaks lines at a lone \r too), match
  // the file's own text.
  std::string universal_newlines;  // the copy, made at the first lone \r (most files have none)
  const char* end = text.data() + text.size();
  for (const char* p = text.data(); (p = static_cast<const char*>(std::memchr(p, '\r', static_cast<std::size_t>(end - p))));
       ++p) {
    if (p + 1 != end && p[1] == '\n') continue;  // the first half of a CRLF
    if (universal_newlines.empty()) universal_newlines.assign(text);
    universal_newlines[static_cast<std::size_t>(p - text.data())] = '\n';
  }
  const bool lone_cr = !universal_newlines.empty();
  if (lone_cr) text = universal_newlines;
  exclude_bom(parser.get(), source, text);
  // (deleting the \n of a CRLF turns the \r before the edit into a line
  // break: a byte outside the edited range reads differently; parsed afresh)
  TSTree* old = previous != nullptr && !lone_cr && !previous->universal_newlines() ? previous->get() : nullptr;
  t_arena.overflowed = false;  // (read below, for this parse)
  TSTree* tree = ts_parser_parse_string_encoding(parser.get(), old, text.data(),
                                                 static_cast<uint32_t>(text.size()), TSInputEncodingUTF8);
  // In a parse arena scope the tree must not outlive the scope. Its memory is
  // all in the region unless the parse outgrew it, or it shares subtrees with
  // `old` (kept alive by reference counts that only ts_tree_delete gives back).
  if (t_arena.active) return SyntaxTree(tree, lone_cr, !std::exchange(t_arena.overflowed, false) && old == nullptr);
  return SyntaxTree(tree, lone_cr);
}

bool has_shell_extension(std::string_view name) {
  for (std::string_view ext : {".sh", ".bash", ".slurm", ".sbatch"})
    if (name.size() > ext.size() && name.ends_with(ext)) return true;
  return false;
}

bool has_shell_shebang(std::string_view text) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  if (!text.starts_with("#!")) return false;
  std::string_view line = text.substr(2, text.find('\n') == std::string_view::npos ? std::string_view::npos : text.find('\n') - 2);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  // the interpreter: the first word, or the word after `env` (and its options)
  auto words = [](std::string_view s) {
    std::vector<std::string_view> out;
    std::size_t i = 0;
    while (i < s.size()) {
      while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
      std::size_t j = i;
      while (j < s.size() && s[j] != ' ' && s[j] != '\t') ++j;
      if (j > i) out.push_back(s.substr(i, j - i));
      i = j;
    }
    return out;
  };
  auto base = [](std::string_view w) { return w.substr(w.rfind('/') == std::string_view::npos ? 0 : w.rfind('/') + 1); };
  std::vector<std::string_view> w = words(line);
  std::size_t at = 0;
  if (at < w.size() && base(w[at]) == "env") {
    ++at;
    while (at < w.size() && w[at].starts_with("-")) ++at;
  }
  if (at >= w.size()) return false;
  std::string_view interpreter = base(w[at]);
  return interpreter == "sh" || interpreter == "bash";
}

bool has_markdown_extension(std::string_view name) {
  for (std::string_view ext : {".md", ".markdown"}) {
    if (name.size() <= ext.size()) continue;
    std::string_view tail = name.substr(name.size() - ext.size());
    if (std::equal(tail.begin(), tail.end(), ext.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) == b;
        }))
      return true;  // README.MD too
  }
  return false;
}

namespace {
// Whether a fenced block's info string names shell: its first word, as
// CommonMark reads it (```bash, ```sh {.copy}, ~~~ shell).
enum class BlockKind { Other, Shell, Session, Untagged };
BlockKind block_kind(std::string_view info) {
  std::size_t end = info.find_first_of(" \t{");
  std::string word(info.substr(0, end));
  for (char& c : word) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (word.empty()) return BlockKind::Untagged;
  if (word == "sh" || word == "bash" || word == "shell" || word == "zsh" || word == "shellscript") return BlockKind::Shell;
  if (word == "console" || word == "shell-session" || word == "shellsession") return BlockKind::Session;
  return BlockKind::Other;
}

// A block without a language is read as shell when its first line (after a
// `$ ` prompt) starts a command that launches training or sets its
// environment: `python`, `torchrun`, `accelerate`, `deepspeed`, `srun`,
// `mpirun`, `export`, or an assignment of CUDA_VISIBLE_DEVICES or an NCCL_
// variable before a command. Anything else (Python, output, YAML) is not read.
bool starts_like_a_launch(std::string_view line) {
  std::size_t s = line.find_first_not_of(" \t");
  if (s == std::string_view::npos) return false;
  line.remove_prefix(s);
  if (line.starts_with("$ ")) line.remove_prefix(2);
  std::string_view word = line.substr(0, line.find_first_of(" \t"));
  for (std::string_view w : {"python", "python3", "torchrun", "accelerate", "deepspeed", "srun", "mpirun", "export"})
    if (word == w) return true;
  return word.starts_with("CUDA_VISIBLE_DEVICES=") || word.starts_with("NCCL_");
}
}  // namespace

std::string markdown_shell_view(std::string_view text, std::vector<std::pair<std::uint32_t, std::uint32_t>>* kept) {
  std::string out(text.size(), ' ');
  for (std::size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\n' || text[i] == '\r') out[i] = text[i];
  char fence = 0;            // '`' or '~' inside a fenced block
  std::size_t fence_len = 0;
  BlockKind kind = BlockKind::Other;
  std::vector<std::pair<std::size_t, std::size_t>> blocks;  // the kept blocks' contents [start, end)
  bool in_comment = false;  // inside an HTML comment (`<!-- ... -->`): commented-out text, no fences
  bool continued = false;  // a session's command line ended in `\`: the next line is its
  for (std::size_t at = 0; at < text.size();) {
    std::size_t eol = text.find('\n', at);
    std::size_t next = eol == std::string_view::npos ? text.size() : eol + 1;
    std::string_view line = text.substr(at, next - at);
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
    if (at == 0 && line.starts_with("\xEF\xBB\xBF")) {  // a byte-order mark before the first line
      line.remove_prefix(3);
      at += 3;
    }
    std::size_t indent = line.find_first_not_of(' ');
    std::string_view body = indent == std::string_view::npos ? std::string_view() : line.substr(indent);
    auto run_of = [&](char c) {
      std::size_t n = 0;
      while (n < body.size() && body[n] == c) ++n;
      return n;
    };
    if (fence == 0 && (in_comment || body.starts_with("<!--"))) {
      std::size_t open = in_comment ? 0 : body.find("<!--") + 4;
      in_comment = body.find("-->", open) == std::string_view::npos;
    } else if (fence == 0) {
      for (char c : {'`', '~'}) {
        std::size_t n = run_of(c);
        if (n < 3) continue;
        std::string_view info = body.substr(n);
        if (c == '`' && info.find('`') != std::string_view::npos) continue;  // inline code, not a fence
        fence = c;
        fence_len = n;
        std::size_t s = info.find_first_not_of(" \t");
        kind = block_kind(s == std::string_view::npos ? std::string_view() : info.substr(s));
        continued = false;
        if (kind == BlockKind::Untagged) {
          // the first line with text decides
          std::size_t first = next;
          while (first < text.size() && (text[first] == '\n' || text[first] == '\r' || text[first] == ' ')) ++first;
          std::size_t first_end = text.find('\n', first);
          kind = starts_like_a_launch(text.substr(first, first_end == std::string_view::npos ? std::string_view::npos
                                                                                           : first_end - first))
                     ? BlockKind::Shell
                     : BlockKind::Other;
        }
        if (kind != BlockKind::Other) blocks.emplace_back(next, text.size());  // (an unclosed fence runs to the end)
        break;
      }
    } else if (run_of(fence) >= fence_len && body.substr(run_of(fence)).find_first_not_of(" \t") == std::string_view::npos) {
      fence = 0;  // the closing fence
      if (kind != BlockKind::Other) blocks.back().second = at;
    } else if (kind != BlockKind::Other) {
      std::size_t keep = at;  // the line's bytes kept from here
      bool kept = true;
      if (body.starts_with("$ ")) {
        keep = at + indent + 2;  // a prompt: the command after it
        continued = body.ends_with("\\");
      } else if (continued && body.starts_with("> ")) {
        keep = at + indent + 2;  // the continuation prompt (PS2) of a prompted command
        continued = body.ends_with("\\");
      } else if (kind == BlockKind::Session) {
        kept = continued;  // output lines are not commands
        continued = kept && body.ends_with("\\");
      }
      if (kept)
        for (std::size_t i = keep; i < at + line.size(); ++i) out[i] = text[i];
    }
    at = next;
  }
  // Each block stands alone: a `<placeholder>` of the README's (`--data-path
  // <imagenet-path>`) is read as a variable (unknown), not as redirections
  // whose `>` would take the next block's first word; a block that still does
  // not parse by itself is not read (an unclosed quote or heredoc would
  // swallow the blocks after it).
  ArenaPause pause(true);
  std::unique_ptr<TSParser, void (*)(TSParser*)> parser(ts_parser_new(), &ts_parser_delete);
  if (!parser || !ts_parser_set_language(parser.get(), tree_sitter_bash())) return std::string(text.size(), ' ');
  auto word_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == '/' || c == ':';
  };
  for (auto [start, end] : blocks) {
    for (std::size_t i = start; i < end; ++i) {
      if (out[i] != '<' || (i > start && !std::strchr(" \t=\"'", out[i - 1]))) continue;
      std::size_t j = i + 1;
      while (j < end && word_char(out[j])) ++j;
      if (j == i + 1 || j >= end || out[j] != '>' || (j + 1 < end && !std::strchr(" \t\r\n\"'", out[j + 1]))) continue;
      out[i] = '$';
      for (std::size_t k = i + 1; k <= j; ++k)
        if (!std::isalnum(static_cast<unsigned char>(out[k]))) out[k] = '_';
      i = j;
    }
    // a README's command often ends in a `\` before the fence: it continues into nothing
    std::size_t last = end;
    while (last > start && std::isspace(static_cast<unsigned char>(out[last - 1]))) --last;
    if (last > start && out[last - 1] == '\\') out[last - 1] = ' ';
    std::string_view block = std::string_view(out).substr(start, end - start);
    TSTree* alone = ts_parser_parse_string_encoding(parser.get(), nullptr, block.data(),
                                                    static_cast<uint32_t>(block.size()), TSInputEncodingUTF8);
    bool broken = alone == nullptr || ts_node_has_error(ts_tree_root_node(alone));
    if (alone != nullptr) ts_tree_delete(alone);
    if (broken) {
      for (std::size_t i = start; i < end; ++i)
        if (out[i] != '\n' && out[i] != '\r') out[i] = ' ';
    } else if (kept != nullptr) {
      kept->emplace_back(static_cast<std::uint32_t>(start), static_cast<std::uint32_t>(end));
    }
  }
  return out;
}

Language language_of(std::string_view path, std::string_view text) {
  std::string_view name = path.substr(path.rfind('/') == std::string_view::npos ? 0 : path.rfind('/') + 1);
  if (has_shell_extension(name) || has_markdown_extension(name)) return Language::Shell;
  if (name.find('.') == std::string_view::npos && !name.empty() && path != "-" && has_shell_shebang(text))
    return Language::Shell;
  return Language::Python;
}

SyntaxTree parse_shell(const SourceFile& source, const SyntaxTree* previous) {
  ArenaPause pause(true);  // shell trees are few and small: tree-sitter's own allocator
  std::unique_ptr<TSParser, void (*)(TSParser*)> parser(ts_parser_new(), &ts_parser_delete);
  if (!parser || !ts_parser_set_language(parser.get(), tree_sitter_bash())) return {};
  std::string_view text = source.text();
  // Markdown: its shell blocks, at their own offsets (everything else blank)
  std::string view;
  std::string_view path = source.path();
  if (has_markdown_extension(path.substr(path.rfind('/') == std::string_view::npos ? 0 : path.rfind('/') + 1))) {
    view = markdown_shell_view(text);
    text = view;
  }
  exclude_bom(parser.get(), source, text);
  TSTree* old = previous != nullptr && language_of(*previous) == Language::Shell ? previous->get() : nullptr;
  TSTree* tree = ts_parser_parse_string_encoding(parser.get(), old, text.data(), static_cast<uint32_t>(text.size()),
                                                 TSInputEncodingUTF8);
  return SyntaxTree(tree);
}

SyntaxTree parse_source(const SourceFile& source, Language language, const SyntaxTree* previous) {
  return language == Language::Shell ? parse_shell(source, previous) : parse_python(source, previous);
}

Language language_of(const SyntaxTree& tree) {
  return tree && ts_tree_language(tree.get()) == tree_sitter_bash() ? Language::Shell : Language::Python;
}

}  // namespace ddplint
