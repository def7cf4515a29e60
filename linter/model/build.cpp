// The one walk over a file's tree that builds its SemanticModel (ModelBuilder),
// and the model's constructor and arena. One pass, one translation unit: see README.md.
#include "linter/model/internal.hpp"
#include "linter/node_access.hpp"

#include "linter/tree_walk_impl.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <memory>
#include <utility>

namespace ddplint {

using namespace model_detail;

namespace {

constexpr TSSymbol kErrorSymbol = static_cast<TSSymbol>(-1);  // ts_builtin_sym_error (tree-sitter's parser.h)

}  // namespace

// ---------------------------------------------------------------------------
// The one walk over the tree.
class ModelBuilder {
 public:
  ModelBuilder(SemanticModel& m, const SyntaxTree& tree) : m_(m), k_(kinds()), tree_(tree) {
    // depth-indexed vectors keep their size (entries are written before read)
    region_stack_.clear();
    subscripts_.clear();
    subscript_writes_.clear();
    pending_arguments_.clear();
    import_sites_.clear();
    as_targets_.clear();
  }

  void run() {
    // The arena never takes back what a vector gives up when it grows, and
    // every copy touches fresh cache lines: room for the usual counts up front
    // (on 800 files of the torch corpus: one call per 49 bytes, a binding per
    // 85, a region per 240; about 1% of fixtures/ and examples/ still grow one
    // of them once). An arena model there then takes 12 KB instead of 17 KB
    // (bench/README.md, sixth round).
    if (std::size_t n = m_.source_.text().size(); n <= ModelArena::kPoolAboveBytes) {
      m_.calls_.reserve(n / 40 + 8);
      m_.bindings_.reserve(n / 64 + 8);
      m_.regions_.reserve(n / 200 + 4);
      m_.region_ranges_.reserve(n / 200 + 4);
    }
    TSNode root = tree_.root();
    m_.regions_.push_back(Region{Region::Kind::Module, -1, 0, root, {}, false, 0, -1});
    m_.region_ranges_.push_back({node_start_byte(root), node_end_byte(root)});
    region_stack_.push_back({0, 0});

    has_error_ = ts_node_has_error(root);
    m_.header_end_ = static_cast<std::uint32_t>(m_.source_.text().size());
    std::string_view text = m_.source_.text();
    may_use_keywords_as_names_ = contains_text(text, "async") || contains_text(text, "await");

    all_leaves_ = has_error_ || may_use_keywords_as_names_;
    // the walk compiled here (tree_walk_impl.h): direct, inlinable calls to enter_node and leave_node
    ddplint_walk_inline(root, &ModelBuilder::enter_node, &ModelBuilder::leave_node, this, /*skip_anonymous_leaves=*/true,
                 leaf_symbols());
    finish();
  }

 private:
  // What enter() does for a symbol, as bits of one table entry (one load per
  // visited node instead of a comparison per case). Public symbols only:
  // ERROR (kErrorSymbol) is out of range and has no entry.
  enum SymbolFlag : std::uint8_t {
    kRecorded = 1,       // enter() records something for it (the cases after the flag test)
    kStatements = 2,     // a block or the module: its children are statements
    kComment = 4,        // a comment (an extra: not a part, argument or statement)
    kPythonTwo = 8,      // print_statement or exec_statement
    kIdentifier = 16,    // an identifier
    kArgumentList = 32,  // an argument_list
  };
  static const std::uint8_t* symbol_flags() {
    static const std::unique_ptr<std::uint8_t[]> table = [] {
      const Kinds& k = kinds();
      auto t = std::make_unique<std::uint8_t[]>(ts_language_symbol_count(tree_sitter_python()));  // all 0
      for (TSSymbol r : {k.if_statement, k.elif_clause, k.call, k.string, k.comment, k.decorator, k.subscript,
                         k.assignment, k.augmented_assignment, k.named_expression, k.import_statement,
                         k.import_from_statement, k.function_definition, k.class_definition, k.for_statement, k.block})
        t[r] |= kRecorded;
      t[k.block] |= kStatements;
      t[k.module] |= kStatements;
      t[k.comment] |= kComment;
      t[k.print_statement] |= kPythonTwo;
      t[k.exec_statement] |= kPythonTwo;
      t[k.identifier] |= kIdentifier;
      t[k.argument_list] |= kArgumentList;
      return t;
    }();
    return table.get();
  }
  // The flags of `s` (none for ERROR).
  std::uint8_t flags_of(TSSymbol s) const { return s == kErrorSymbol ? 0 : flags_[s]; }

  // Named leaves visited under a node that does not need its leaf children
  // (DDPLINT_VISIT_INNER_CHILDREN): comments, which enter() records anywhere.
  static const bool* leaf_symbols() {
    static const std::unique_ptr<bool[]> table = [] {
      auto t = std::make_unique<bool[]>(ts_language_symbol_count(tree_sitter_python()));  // all false
      t[kinds().comment] = true;
      return t;
    }();
    return table.get();
  }

  // always inline: compiled into the walk (tree_walk_impl.h), which calls it once per visited node
  [[gnu::always_inline]] static int enter_node(void* context, const DdplintVisit* visit) {
    auto* self = static_cast<ModelBuilder*>(context);
    if (self->has_error_ && !self->m_.first_error_ && (ts_node_is_error(visit->node) || ts_node_is_missing(visit->node))) {
      self->note_syntax_error(visit->node, {});
    }
    if (!self->enter(visit->node, visit->symbol, visit->named, visit->depth)) return DDPLINT_SKIP_CHILDREN;
    if (!visit->named) return DDPLINT_VISIT_CHILDREN;
    if (self->needs_leaf_children(visit->symbol, visit->depth)) return DDPLINT_VISIT_CHILDREN;
    // Below this node the walk would visit only comments among its named
    // leaves. A node whose visible descendants are all leaf children (`a.b`,
    // `x + 1`) and that lies on one line holds no comment (an extra is never
    // a node's last child, and a comment runs to the end of its line), so
    // nothing below it would be visited: skip it (`all_leaves_` is false here,
    // so the tree has no ERROR or MISSING node).
    if (node_has_leaf_children_only(visit->node) && node_on_one_line(visit->node)) return DDPLINT_SKIP_CHILDREN;
    return DDPLINT_VISIT_INNER_CHILDREN;
  }

  // True when enter() reads the named leaves (names, numbers) among the
  // children of the node just entered: a call's or an attribute callee's
  // parts, a keyword argument's name and value (note_part), a call's arguments
  // (note_argument), a block's statements (indentation), the module's (header);
  // and every leaf in a tree with errors (ERROR, MISSING) or that may use
  // `async`/`await` as names.
  [[gnu::always_inline]] bool needs_leaf_children(TSSymbol s, std::uint32_t depth) const {  // (hot: inlined into the walk)
    if (all_leaves_ || s == k_.block || s == k_.module) return true;
    if (pending_part_.size() > depth && pending_part_[depth].kind != Part::None) return true;
    return s == k_.argument_list && depth > 0 && symbols_[depth - 1] == k_.call;
  }
  [[gnu::always_inline]] static void leave_node(void* context, std::uint32_t depth) {
    static_cast<ModelBuilder*>(context)->leave(depth);
  }

  struct Open {
    int region;
    std::uint32_t depth;
  };
  // A node whose parts its next named children are (see note_part).
  enum class Part : std::uint8_t { None, Callee, Receiver, Method, KeywordName, KeywordValue };
  struct Pending {
    Part kind = Part::None;
    int index = -1;  // the call, or the pending argument
  };

  int current_region() const { return region_stack_.back().region; }
  int current_scope() const { return m_.regions_[current_region()].scope; }

  int push_region(Region r, TSNode range, std::uint32_t depth) {
    r.parent = current_region();
    int index = static_cast<int>(m_.regions_.size());
    if (r.kind == Region::Kind::Function || r.kind == Region::Kind::Class) {
      r.scope = index;
    } else {
      r.scope = current_scope();
    }
    m_.regions_.push_back(r);
    m_.region_ranges_.push_back({node_start_byte(range), node_end_byte(range)});
    region_stack_.push_back({index, depth});
    return index;
  }

  void leave(std::uint32_t depth) {
    while (region_stack_.size() > 1 && region_stack_.back().depth == depth) region_stack_.pop_back();
  }

  void bind(Binding::Kind kind, TSNode target, TSNode value, int scope) {
    TSSymbol s = node_symbol(target);
    if (s == k_.identifier || s == k_.attribute) {
      std::string built;
      std::string_view path = m_.path_view(target, built);
      if (path.empty()) return;
      if (path.data() == built.data()) path = m_.keep(built);  // written with spaces: keep the built path
      m_.bindings_.push_back(Binding{kind, target, value, scope, path});
      return;
    }
    if (s == k_.pattern_list || s == k_.tuple_pattern || s == k_.tuple || s == k_.list ||
        s == k_.parenthesized_expression) {
      for (TSNode element : children(target)) bind(kind, element, TSNode{}, scope);
    }
  }

  void bind_assignment(TSNode assignment) {
    TSNode left = field(assignment, k_.f_left);
    TSNode right = field(assignment, k_.f_right);
    if (node_is_null(left)) return;
    // a = b = value: the innermost right side is the value for every target
    NodeList targets;
    targets.push_back(left);
    while (!node_is_null(right) && node_symbol(right) == k_.assignment) {
      targets.push_back(field(right, k_.f_left));
      right = field(right, k_.f_right);
    }
    for (TSNode target : targets) {
      TSSymbol ts = node_symbol(target);
      bool target_is_seq = ts == k_.pattern_list || ts == k_.tuple_pattern || ts == k_.tuple || ts == k_.list;
      if (target_is_seq && !node_is_null(right) &&
          (node_symbol(right) == k_.expression_list || node_symbol(right) == k_.tuple) &&
          ts_node_named_child_count(right) == ts_node_named_child_count(target)) {
        NodeList targets_ = children(target), values_ = children(right);
        for (std::size_t i = 0; i < targets_.size() && i < values_.size(); ++i) {
          bind(Binding::Kind::Assign, targets_[i], values_[i], current_scope());
        }
      } else {
        bind(Binding::Kind::Assign, target, target_is_seq ? TSNode{} : right, current_scope());
      }
    }
  }

  void bind_parameters(TSNode params, int scope) {
    for (TSNode p : children(params)) {
      TSSymbol s = node_symbol(p);
      TSNode name{};
      if (s == k_.identifier) {
        name = p;
      } else if (s == k_.default_parameter || s == k_.typed_default_parameter) {
        name = field(p, k_.f_name);
      } else if (ts_node_named_child_count(p) > 0) {
        name = ts_node_named_child(p, 0);  // typed_parameter, *args, **kwargs
        if (node_symbol(name) != k_.identifier && ts_node_named_child_count(name) > 0)
          name = ts_node_named_child(name, 0);
      }
      if (!node_is_null(name) && node_symbol(name) == k_.identifier) {
        bind(Binding::Kind::Parameter, name, TSNode{}, scope);
      }
    }
  }

  void record_import(TSNode stmt) {
    std::string_view text = m_.source_.text();
    bool from = node_symbol(stmt) == k_.import_from_statement;
    TSNode mod{};
    std::string_view module;
    if (from) {
      mod = field(stmt, k_.f_module_name);
      if (node_is_null(mod)) return;
      // `from .engine import f` / `from .. import misc`: kept with their dots
      // (`.engine.f`, `..misc`), which no library name starts with; the project
      // index resolves them against the file's package
      if (node_symbol(mod) != k_.dotted_name && ts_node_type(mod) != std::string_view("relative_import")) return;
      module = node_text(mod, text);
    }
    // whitespace inside dotted names is legal (`torch . nn`): stripped from what is kept
    auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
    std::string& built = scratch_.name;
    auto keep_stripped = [&] {  // `built` without whitespace, kept by the model
      std::erase_if(built, space);
      return m_.keep(built);
    };
    // `name` (a view into the text) without whitespace, as a view that lives as long as the model
    auto kept = [&](std::string_view name) {
      if (std::none_of(name.begin(), name.end(), space)) return name;
      built.assign(name);
      return keep_stripped();
    };
    auto joined = [&](std::string_view name) {  // `module.name` (`..name` after a bare `..`)
      built.assign(module);
      if (built.empty() || built.back() != '.') built.append(".");
      built.append(name);
      return keep_stripped();
    };
    for (TSNode child : children(stmt)) {
      if (from && node_eq(child, mod)) continue;
      TSSymbol s = node_symbol(child);
      if (from && s == k_.wildcard_import) {
        m_.star_imports_.push_back(kept(module));
        continue;
      }
      std::string_view target, local;
      if (s == k_.dotted_name) {
        std::string_view name = node_text(child, text);
        if (from) {
          local = kept(name);
          target = joined(name);
        } else {
          local = kept(name.substr(0, name.find('.')));  // `import a.b` binds `a`
          target = local;
        }
      } else if (s == k_.aliased_import) {
        TSNode name = field(child, k_.f_name);
        TSNode alias = field(child, k_.f_alias);
        if (node_is_null(name) || node_is_null(alias)) continue;
        target = from ? joined(node_text(name, text)) : kept(node_text(name, text));
        local = node_text(alias, text);
      } else {
        continue;
      }
      // `try: from torch import GradScaler` / `except ImportError: from
      // torch.cuda.amp import GradScaler`: the handler's import is the fallback
      // of an older release; where the `try` import succeeds the name is its
      if (!imported_in_try_of(stmt, local)) m_.aliases_.set(local, target);
      import_sites_.push_back({local, node_start_byte(stmt), current_scope()});
    }
  }

  // True when `stmt` sits directly in an `except` clause whose `try` body
  // imports `local` itself (in one of its statements, at its top level).
  bool imported_in_try_of(TSNode stmt, std::string_view local) const {
    TSNode block = ts_node_parent(stmt);
    TSNode handler = node_is_null(block) ? TSNode{} : ts_node_parent(block);
    if (node_is_null(handler) || node_symbol(handler) != k_.except_clause) return false;
    TSNode attempt = ts_node_parent(handler);
    if (node_is_null(attempt) || node_symbol(attempt) != k_.try_statement) return false;
    std::string_view text = m_.source_.text();
    for (TSNode tried : children(field(attempt, k_.f_body))) {
      TSSymbol ts = node_symbol(tried);
      if (ts != k_.import_statement && ts != k_.import_from_statement) continue;
      TSNode mod = ts == k_.import_from_statement ? field(tried, k_.f_module_name) : TSNode{};
      for (TSNode c : children(tried)) {
        if (!node_is_null(mod) && node_eq(c, mod)) continue;
        std::string_view bound;
        if (node_symbol(c) == k_.dotted_name) {
          bound = node_text(c, text);
          if (ts == k_.import_statement) bound = bound.substr(0, bound.find('.'));
        } else if (node_symbol(c) == k_.aliased_import) {
          bound = node_text(field(c, k_.f_alias), text);
        }
        if (!bound.empty() && bound == local) return true;
      }
    }
    return false;
  }

  // The names `with ... as name` and `except E as name` bind (in the scope
  // that holds the statement): kept for shadows_import.
  void note_as_targets(TSNode statement) {
    auto note = [&](TSNode pattern) {
      if (node_is_null(pattern) || std::string_view(ts_node_type(pattern)) != "as_pattern") return;
      TSNode target = ts_node_child_by_field_name(pattern, "alias", 5);
      TSNode name = node_is_null(target) ? TSNode{} : ts_node_named_child(target, 0);
      if (!node_is_null(name) && node_symbol(name) == k_.identifier)
        as_targets_.push_back({node_text(name, m_.source_.text()), node_start_byte(name), current_scope()});
    };
    for (TSNode c : children(statement)) {
      if (node_symbol(c) == k_.with_clause) {
        for (TSNode item : children(c))
          if (node_symbol(item) == k_.with_item) note(field(item, k_.f_value));
      } else {
        note(c);  // except_clause: `E as name`
      }
    }
  }

  // True when `node` lies in an `except` clause: a fallback of an import in
  // the `try` body (`except ImportError: def arl(ts): ...`), not another value.
  bool in_except_clause(TSNode node) const {
    for (TSNode p = ts_node_parent(node); !node_is_null(p); p = ts_node_parent(p)) {
      TSSymbol ps = node_symbol(p);
      if (ps == k_.except_clause) return true;
      if (ps == k_.function_definition || ps == k_.class_definition) continue;
      if (ps == k_.module) break;
    }
    return false;
  }

  // The name a call chain starts from: `misc` of `misc.all_reduce_mean`.
  std::string_view root_name(TSNode callee) const {
    TSNode n = callee;
    while (!node_is_null(n) && node_symbol(n) == k_.attribute) n = field(n, k_.f_object);
    return !node_is_null(n) && node_symbol(n) == k_.identifier ? node_text(n, m_.source_.text()) : std::string_view();
  }

  // True when the name `root` that an import binds is, at `call`, another
  // binding: a parameter, local variable or nested def of an enclosing
  // function (`def step(loss, reduce_mean=None): reduce_mean(loss)`), or a
  // module-level def or class after every module-level import of it. Python
  // looks a name up in the innermost scope that binds it; a module-level
  // assignment (`except ImportError: amp = None`) is a fallback of the same
  // import, not another value, and a name also imported inside a function is
  // left to the import table (which scope wins is not followed).
  bool shadows_import(std::string_view root, const CallSite& call) const {
    std::uint32_t last_import = 0;
    bool found = false;
    for (const ImportSite& site : import_sites_) {
      if (site.local != root) continue;
      if (site.scope != 0) return false;
      found = true;
      last_import = std::max(last_import, site.at);
    }
    if (!found) return false;
    const int scope = m_.regions_[call.region].scope;
    for (const ImportSite& site : as_targets_)
      if (site.scope != 0 && site.scope == scope && site.local == root) return true;  // `with ctx as root:`
    BindingList bindings = m_.bindings_of(root, call.region);
    for (const Binding* b : bindings) {
      if (b->scope != 0) return true;  // bound in an enclosing function
      if (b->kind == Binding::Kind::Definition && node_start_byte(b->target) > last_import &&
          (scope != 0 || node_start_byte(b->target) < node_start_byte(call.node)) && !in_except_clause(b->target))
        return true;
    }
    return false;
  }

  // An ERROR node that tree-sitter's recovery grew over many lines holds the
  // real fault deeper: the first ERROR or MISSING node inside it. A smaller
  // ERROR node (up to 50 lines) is itself the best location: its start is where
  // the statement that failed begins (measured on fixtures/DDP001 and the stdlib).
  static TSNode innermost_error(TSNode node) {
    constexpr std::uint32_t kSmallErrorRows = 50;
    for (int guard = 0; guard < 10000; ++guard) {
      if (ts_node_is_error(node) &&
          ts_node_end_point(node).row - ts_node_start_point(node).row <= kSmallErrorRows)
        return node;
      TSNode next{};
      for (TSNode c : children(node, false)) {
        if (ts_node_is_error(c) || ts_node_is_missing(c) || ts_node_has_error(c)) {
          next = c;
          break;
        }
      }
      if (node_is_null(next)) return node;
      if (!ts_node_is_error(next) && !ts_node_is_missing(next)) {
        // an intact node with an error below: look inside it
        node = next;
        continue;
      }
      node = next;
    }
    return node;
  }

  void note_syntax_error(TSNode node, std::string message) {
    if (m_.first_error_) return;
    if (message.empty() && ts_node_is_error(node)) {
      TSNode inner = innermost_error(node);
      if (ts_node_is_error(inner) || ts_node_is_missing(inner)) node = inner;
    }
    if (message.empty() && ts_node_is_error(node)) {
      // a bracket opened inside the ERROR node and never closed is what
      // CPython reports ("'(' was never closed"), and where the fix goes
      std::vector<TSNode> open;
      for (TSNode c : children(node, false)) {
        if (ts_node_is_named(c)) continue;
        std::string_view t = ts_node_type(c);
        if (t == "(" || t == "[" || t == "{") open.push_back(c);
        else if ((t == ")" || t == "]" || t == "}") && !open.empty()) open.pop_back();
      }
      if (!open.empty()) {
        node = open.front();
        message = "`" + std::string(ts_node_type(node)) + "` was never closed";
      }
    }
    if (message.empty()) {
      if (ts_node_is_missing(node)) {
        message = std::string("missing `") + ts_node_type(node) + "`";
      } else {
        TSNode first = node;  // the first token the parser could not place
        while (ts_node_child_count(first) > 0) first = ts_node_child(first, 0);
        std::string token(node_text(first, m_.source_.text()).substr(0, 40));
        message = token.empty() ? "invalid syntax" : "unexpected `" + token + "`";
      }
    }
    m_.first_error_ = SyntaxProblem{node, std::move(message)};
  }

  // Indentation of a statement that starts its line, measured with tab stops
  // of 8 and of 1 (CPython compares both: equal in one but not the other is a
  // TabError). {-1, -1} when the statement does not start its line.
  std::pair<int, int> indentation(TSNode stmt) const {
    std::string_view text = m_.source_.text();
    std::uint32_t start = node_start_byte(stmt);
    // back to the line's start (after \n, \r\n or a lone \r, as LineIndex
    // breaks lines; a leading BOM is not indentation) over blanks only
    const std::uint32_t floor = static_cast<std::uint32_t>(m_.source_.bom_length());
    std::uint32_t line_start = start;
    while (line_start > floor) {
      char c = text[line_start - 1];
      if (c == '\n' || c == '\r') break;
      if (c != ' ' && c != '\t' && c != '\f') return {-1, -1};
      --line_start;
    }
    int col8 = 0, col1 = 0;
    for (std::uint32_t i = line_start; i < start; ++i) {
      char c = text[i];
      if (c == ' ') ++col8, ++col1;
      else if (c == '\t') col8 = (col8 / 8 + 1) * 8, ++col1;
      else col8 = 0, col1 = 0;  // \f
    }
    return {col8, col1};
  }

  // Tab-8 indentation of the last line of `node`.
  int last_line_indent(TSNode node) const {
    std::string_view text = m_.source_.text();
    const LineIndex& lines = m_.source_.lines();
    std::uint32_t end = node_end_byte(node);
    std::uint32_t line = lines.line_of(end > 0 ? end - 1 : 0);
    int col = 0;
    for (std::uint32_t i = lines.line_start(line); i < text.size(); ++i) {
      if (text[i] == ' ') ++col;
      else if (text[i] == '\t') col = (col / 8 + 1) * 8;
      else break;
    }
    return col;
  }

  // Every statement of a block that starts a line must be indented exactly
  // like the block's first statement (module: column 0).
  void check_indentation(TSNode stmt, std::uint32_t depth) {
    auto [col8, col1] = indentation(stmt);
    TSNode prev = prev_stmt_[depth];
    prev_stmt_[depth] = stmt;
    if (col8 < 0) return;
    auto& first = first_indent_[depth];
    if (first.first < 0) {
      first = {col8, col1};
      return;
    }
    if (col8 == first.first && col1 == first.second) return;
    if ((col8 == first.first) != (col1 == first.second) || (col8 > first.first) != (col1 > first.second)) {
      note_syntax_error(stmt, "inconsistent use of tabs and spaces in indentation");
    } else if (col8 > first.first) {
      // after a deeper block, a line between two levels is a bad unindent, not an indent
      bool after_deeper = !node_is_null(prev) && last_line_indent(prev) > col8;
      note_syntax_error(stmt, after_deeper ? "unindent does not match any outer indentation level" : "unexpected indent");
    } else {
      note_syntax_error(stmt, "unindent does not match any outer indentation level");
    }
  }

  // Records what the model needs from `node`; returns false when its
  // descendants hold nothing the model records (they are then not visited).
  bool enter(const TSNode& node, TSSymbol s, bool named, std::uint32_t depth) {  // (by reference: no 32-byte copy per visit)
    // the path from the root: parents without ts_node_parent (which walks down from the root)
    if (path_.size() <= depth + 1) {
      path_.resize(depth + 2);
      symbols_.resize(depth + 2);
      call_at_.resize(depth + 2);
      branch_condition_.resize(depth + 2);
      first_indent_.resize(depth + 2);
      prev_stmt_.resize(depth + 2);
      pending_part_.resize(depth + 2);
    }
    path_[depth] = node;
    symbols_[depth] = s;
    pending_part_[depth] = {};
    const std::uint8_t flags = flags_of(s);
    if (flags & kStatements) {
      first_indent_[depth + 1] = {s == k_.module ? 0 : -1, s == k_.module ? 0 : -1};
      prev_stmt_[depth + 1] = TSNode{};
    }
    if (!named) return true;
    if (depth == 0) return true;  // the module: nothing below applies (it records nothing)
    if (depth == 1 && !header_done_) note_header(node, s);
    const bool comment = flags & kComment;
    if (pending_part_[depth - 1].kind != Part::None && !comment) note_part(node, s, depth);
    const std::uint8_t parent_flags = flags_of(symbols_[depth - 1]);
    if ((parent_flags & kArgumentList) && depth >= 2 && symbols_[depth - 2] == k_.call && !comment) {
      note_argument(node, s, call_at_[depth - 2], depth);
    }
    if (!m_.first_error_ && !comment && s != kErrorSymbol) {
      if (parent_flags & kStatements) check_indentation(node, depth);
      if (flags & kPythonTwo) {
        // `print >> f, x` is a valid (if useless) Python 3 expression: only the plain form is an error
        bool chevron = s == k_.print_statement && ts_node_named_child_count(node) > 0 &&
                       std::string_view(ts_node_type(ts_node_named_child(node, 0))) == "chevron";
        if (!chevron) {
          note_syntax_error(node, std::string("Python 2 ") + (s == k_.print_statement ? "print" : "exec") +
                                      " statement: call it as a function");
        }
      } else if ((flags & kIdentifier) && may_use_keywords_as_names_) {
        std::string_view name = node_text(node, m_.source_.text());
        if (name == "async" || name == "await") note_syntax_error(node, "`" + std::string(name) + "` is a reserved keyword");
      }
    }
    if (!(flags & kRecorded)) return true;  // most nodes: nothing below applies
    TSNode parent = path_[depth - 1];
    if (s == k_.if_statement) branch_condition_[depth] = field(node, k_.f_condition);
    if (s == k_.elif_clause && depth > 0) branch_condition_[depth - 1] = field(node, k_.f_condition);
    const int region = current_region();

    if (s == k_.call) {
      CallSite c;
      c.node = node;
      c.region = region;
      call_at_[depth] = static_cast<int>(m_.calls_.size());
      if (!has_error_) {
        // the callee is the call's first named child, entered next (see note_part)
        pending_part_[depth] = {Part::Callee, call_at_[depth]};
        m_.calls_.push_back(std::move(c));
        return true;
      }
      c.callee = field(node, k_.f_function);
      if (!node_is_null(c.callee)) {
        TSSymbol cs = node_symbol(c.callee);
        if (cs == k_.attribute) {
          c.receiver = field(c.callee, k_.f_object);
          c.method = node_text(field(c.callee, k_.f_attribute), m_.source_.text());
        } else if (cs == k_.identifier) {
          c.method = node_text(c.callee, m_.source_.text());
        }
      }
      m_.calls_.push_back(std::move(c));
      return true;
    }
    if (s == k_.string) {
      note_string(node);
      // without `{` it has no interpolation, so no call or name below it: its
      // parts need no visit (in a tree with errors, every node is visited)
      return has_error_ || m_.text(node).find('{') != std::string_view::npos;
    }
    if (s == k_.comment) {
      m_.comments_.push_back(node);
      return true;
    }
    if (s == k_.decorator) {
      if (ts_node_named_child_count(node) > 0) m_.decorators_.push_back(ts_node_named_child(node, 0));
      return true;
    }
    if (s == k_.subscript) {
      subscripts_.push_back(node);
      return true;
    }
    if (s == k_.assignment) {
      // chained assignments nest: only the outermost one binds
      if (symbols_[depth - 1] != k_.assignment) bind_assignment(node);
      TSNode left = field(node, k_.f_left);
      if (!node_is_null(left) && node_symbol(left) == k_.subscript) subscript_writes_.emplace_back(left, field(node, k_.f_right));
      return true;
    }
    if (s == k_.augmented_assignment) {
      bind(Binding::Kind::Augmented, field(node, k_.f_left), node, current_scope());
      return true;
    }
    if (s == k_.named_expression) {
      bind(Binding::Kind::Assign, field(node, k_.f_name), field(node, k_.f_value), current_scope());
      return true;
    }
    if (s == k_.import_statement || s == k_.import_from_statement) {
      record_import(node);
      // record_import read the names; below are only names, unless a comment
      // (an extra, which the model records) sits in a parenthesised list
      return has_error_ || m_.text(node).find('#') != std::string_view::npos;
    }
    if (s == k_.function_definition) {
      TSNode name = field(node, k_.f_name);
      int fn = static_cast<int>(m_.functions_.size());
      bind(Binding::Kind::Definition, name, node, current_scope());
      FunctionInfo info;
      info.name = node_text(name, m_.source_.text());
      info.node = node;
      info.no_grad = decorated_no_grad(parent);
      Region r;
      r.kind = Region::Kind::Function;
      r.node = node;
      r.function = fn;
      info.region = push_region(r, node, depth);
      m_.functions_.push_back(info);
      m_.functions_by_name_[info.name].push_back(fn);
      TSNode params = field(node, k_.f_parameters);
      if (!node_is_null(params)) bind_parameters(params, info.region);
      return true;
    }
    if (s == k_.class_definition) {
      bind(Binding::Kind::Definition, field(node, k_.f_name), node, current_scope());
      Region r;
      r.kind = Region::Kind::Class;
      r.node = node;
      push_region(r, node, depth);
      return true;
    }
    if (s == k_.for_statement) {
      bind(Binding::Kind::LoopTarget, field(node, k_.f_left), TSNode{}, current_scope());
      return true;
    }
    if (s == k_.block) {
      // the only block child of these statements is the field the region is
      // for (body or consequence; else/elif blocks sit in their own clauses)
      TSSymbol ps = node_symbol(parent);
      if (ps == k_.with_statement || ps == k_.except_clause) note_as_targets(parent);
      Region r;
      r.node = parent;
      if (ps == k_.for_statement || ps == k_.while_statement) {
        r.kind = Region::Kind::Loop;
      } else if (ps == k_.if_statement || ps == k_.elif_clause) {
        r.kind = Region::Kind::Branch;
        r.condition = field(parent, k_.f_condition);
      } else if (ps == k_.else_clause) {
        if (depth < 2 || node_symbol(path_[depth - 2]) != k_.if_statement) return true;  // for/while/try else
        r.kind = Region::Kind::Branch;
        r.negated = true;
        r.condition = branch_condition_[depth - 2];  // the if's, or the last elif's, condition
      } else if (ps == k_.with_statement) {
        r.kind = Region::Kind::With;
      } else {
        return true;
      }
      push_region(r, node, depth);
      return true;
    }
    return true;
  }

  // The header block: comments before the first statement of the module that
  // is not its docstring. Called for each named child of the module in order
  // until that statement.
  void note_header(TSNode node, TSSymbol s) {
    if (s == k_.comment) return;
    if (docstring_allowed_ && s == k_.expression_statement && ts_node_named_child_count(node) == 1 &&
        node_symbol(ts_node_named_child(node, 0)) == k_.string) {
      docstring_allowed_ = false;
      return;
    }
    m_.header_end_ = node_start_byte(node);
    header_done_ = true;
  }

  // In a tree without errors, the parts of a call, its callee attribute and a
  // keyword argument are their named children in grammar order (extras aside:
  // comments are skipped), so the walk fills them in as it enters them instead
  // of looking each up by field: call = function, arguments; attribute =
  // object, '.', attribute; keyword_argument = name, '=', value
  // (tree-sitter-python's grammar.js). tests/unit/semantic_model_test.cpp
  // checks the result against field lookups on every fixture and example.
  void note_part(TSNode node, TSSymbol s, std::uint32_t depth) {
    Pending& p = pending_part_[depth - 1];
    std::string_view text = m_.source_.text();
    switch (p.kind) {
      case Part::Callee: {
        CallSite& c = m_.calls_[p.index];
        c.callee = node;
        p.kind = Part::None;
        if (s == k_.identifier) {
          c.method = node_text(node, text);
        } else if (s == k_.attribute) {
          pending_part_[depth] = {Part::Receiver, p.index};
        }
        break;
      }
      case Part::Receiver:
        m_.calls_[p.index].receiver = node;
        p.kind = Part::Method;
        break;
      case Part::Method:
        m_.calls_[p.index].method = node_text(node, text);
        p.kind = Part::None;
        break;
      case Part::KeywordName:
        pending_arguments_[p.index].second.keyword = node_text(node, text);
        p.kind = Part::KeywordValue;
        break;
      case Part::KeywordValue:
        pending_arguments_[p.index].second.value = node;
        p.kind = Part::None;
        break;
      case Part::None:
        break;
    }
  }

  void note_argument(TSNode node, TSSymbol s, int call, std::uint32_t depth) {
    Argument a;
    a.node = node;
    a.value = node;
    if (s == k_.keyword_argument) {
      a.kind = Argument::Kind::Keyword;
      if (!has_error_) {
        // name and value are the keyword argument's two named children, entered next
        a.value = TSNode{};
        pending_part_[depth] = {Part::KeywordName, static_cast<int>(pending_arguments_.size())};
      } else {
        a.keyword = node_text(field(node, k_.f_name), m_.source_.text());
        a.value = field(node, k_.f_value);
      }
    } else if (s == k_.list_splat) {
      a.kind = Argument::Kind::ListSplat;
    } else if (s == k_.dictionary_splat) {
      a.kind = Argument::Kind::DictionarySplat;
    }
    pending_arguments_.emplace_back(call, a);
  }

  // Groups the walk's arguments by call (a counting sort: stable, so each
  // call's arguments stay in source order). O(calls + arguments).
  void group_arguments() {
    auto& calls = m_.calls_;
    for (const auto& [call, a] : pending_arguments_) calls[call].argument_count++;
    std::uint32_t next = 0;
    for (CallSite& c : calls) {
      c.first_argument = next;
      next += c.argument_count;
    }
    m_.arguments_.resize(next);
    std::vector<std::uint32_t>& fill = scratch_.fill;
    fill.assign(calls.size(), 0);
    for (const auto& [call, a] : pending_arguments_) m_.arguments_[calls[call].first_argument + fill[call]++] = a;
    pending_arguments_.clear();
  }

  bool decorated_no_grad(TSNode parent) {
    if (node_is_null(parent) || node_symbol(parent) != k_.decorated_definition) return false;
    for (TSNode d : children(parent)) {
      if (node_symbol(d) != k_.decorator) continue;
      std::string_view t = node_text(d, m_.source_.text());
      if (contains(t, "no_grad") || contains(t, "inference_mode")) return true;
    }
    return false;
  }

  void note_string(TSNode node) {
    std::string_view whole = node_text(node, m_.source_.text());
    if (!contains(whole, "cuda") && !contains(whole, "nccl") && !contains(whole, "mps") && !contains(whole, "xpu") &&
        !contains(whole, "hpu") && !contains(whole, "npu"))
      return;  // (most strings)
    for (TSNode c : children(node)) {
      if (node_symbol(c) != k_.string_content) continue;
      std::string_view t = node_text(c, m_.source_.text());
      if (t == "cuda" || t.rfind("cuda:", 0) == 0 || t == "nccl") m_.cuda_ = true;
      for (std::string_view other : {"mps", "xpu", "hpu", "npu"})
        if (t == other || (t.size() > other.size() && t.rfind(other, 0) == 0 && t[other.size()] == ':'))
          other_accelerator_ = true;
      break;
    }
  }

  void finish() {
    group_arguments();
    // (sized once: see run())
    m_.bindings_by_path_.reserve(m_.bindings_.size());
    m_.calls_by_canonical_.reserve(m_.calls_.size());
    m_.calls_by_name_.reserve(m_.calls_.size());
    for (std::size_t i = 0; i < m_.bindings_.size(); ++i)
      m_.bindings_by_path_.emplace_back(name_hash(m_.bindings_[i].path), static_cast<int>(i));
    sort_index(m_.bindings_by_path_, [&](int i) { return m_.bindings_[i].path; });
    // canonical names of calls, indexes
    std::string& name = scratch_.name;
    for (std::size_t i = 0; i < m_.calls_.size(); ++i) {
      CallSite& c = m_.calls_[i];
      if (!node_is_null(c.callee) && m_.canonical_name_into(c.callee, name) &&
          !shadows_import(root_name(c.callee), c)) {
        c.canonical = m_.keep(name);
        m_.calls_by_canonical_.emplace_back(name_hash(c.canonical), static_cast<int>(i));
      }
      if (!c.method.empty()) m_.calls_by_name_.emplace_back(name_hash(c.method), static_cast<int>(i));
    }
    sort_index(m_.calls_by_canonical_, [&](int i) { return m_.calls_[i].canonical; });
    sort_index(m_.calls_by_name_, [&](int i) { return m_.calls_[i].method; });
    // argparse destinations
    for (const CallSite* c : m_.calls_named("add_argument")) {
      std::string dest;
      TSNode args = field(c->node, k_.f_arguments);
      for (TSNode a : children(args)) {
        if (node_symbol(a) != k_.string) break;
        Value v = m_.value_of(a);
        if (v.kind != Value::Kind::Str) break;
        if (v.s.rfind("--", 0) == 0) {
          dest = v.s.substr(2);
          break;
        }
        if (dest.empty() && !v.s.empty() && v.s[0] != '-') dest = v.s;
        if (dest.empty() && v.s.size() > 1 && v.s[0] == '-') dest = v.s.substr(1);
      }
      TSNode dest_arg = m_.argument(*c, "dest");
      if (!node_is_null(dest_arg)) {
        Value v = m_.value_of(dest_arg);
        if (v.kind == Value::Kind::Str) dest = v.s;
      }
      std::replace(dest.begin(), dest.end(), '-', '_');
      if (!dest.empty()) m_.argparse_[dest].push_back(static_cast<int>(c - m_.calls_.data()));
    }
    // environment reads; a read that only refuses a distributed run
    // (`if os.environ.get("WORLD_SIZE", "1") != "1": raise ...`, an assert)
    // makes a one-process tool, not a distributed script
    auto refuses = [&](TSNode read) {
      for (TSNode n = read, p = ts_node_parent(n); !node_is_null(p); n = p, p = ts_node_parent(p)) {
        TSSymbol ps = node_symbol(p);
        if (ps == k_.assert_statement) return true;
        if (ps == k_.if_statement || ps == k_.elif_clause) {
          return ts_node_eq(n, field(p, k_.f_condition)) && m_.branch_starts_by_exiting(p);
        }
        if (ps == k_.block || ps == k_.module || ps == k_.function_definition) return false;
      }
      return false;
    };
    auto note_env = [&](const std::string& var, TSNode read) {
      if ((var == "LOCAL_RANK" || var == "RANK" || var == "WORLD_SIZE") && !refuses(read)) m_.distributed_ = true;
    };
    for (TSNode sub : subscripts_) {
      std::string var = m_.env_var_read(sub);
      if (!var.empty()) note_env(var, sub);
    }
    for (auto [sub, value] : subscript_writes_)
      if (node_symbol(field(sub, k_.f_value)) == k_.identifier) m_.name_subscript_writes_.emplace_back(sub, value);
    // writes to the environment
    for (auto [sub, value] : subscript_writes_) {
      if (m_.canonical_name(field(sub, k_.f_value)) != "os.environ") continue;
      Value key = m_.value_of(field(sub, k_.f_subscript));
      if (key.kind == Value::Kind::Str) m_.env_writes_.push_back(EnvWrite{key.s, value, sub});
    }
    for (const CallSite& c : m_.calls_) {
      if (c.canonical == "os.environ.setdefault" || c.canonical == "os.putenv") {
        Value key = m_.value_of(m_.argument(c, "", 0));
        if (key.kind == Value::Kind::Str) m_.env_writes_.push_back(EnvWrite{key.s, m_.argument(c, "", 1), c.node});
      } else if (c.canonical == "os.environ.update") {
        for (const Argument& a : m_.arguments(c)) {
          if (a.kind == Argument::Kind::Keyword) {
            m_.env_writes_.push_back(EnvWrite{std::string(a.keyword), a.value, c.node});
          } else if (std::string_view(ts_node_type(a.node)) == "dictionary") {
            for (TSNode pair : children(a.node)) {
              if (std::string_view(ts_node_type(pair)) != "pair") continue;
              Value key = m_.value_of(ts_node_child_by_field_name(pair, "key", 3));
              if (key.kind == Value::Kind::Str)
                m_.env_writes_.push_back(EnvWrite{key.s, ts_node_child_by_field_name(pair, "value", 5), c.node});
            }
          }
        }
      }
    }
    std::sort(m_.env_writes_.begin(), m_.env_writes_.end(), [](const EnvWrite& a, const EnvWrite& b) {
      return node_start_byte(a.at) < node_start_byte(b.at);
    });
    bool uses_accelerator = false;
    for (const CallSite& c : m_.calls_) {
      if (c.canonical == "os.environ.get" || c.canonical == "os.getenv") note_env(m_.env_var_read(c.node), c.node);
      if (c.canonical == "torch.distributed.init_process_group") {
        m_.distributed_ = true;
        TSNode backend = m_.argument(c, "backend", 0);
        Value v = m_.value_of(backend);
        if (m_.canonical_name(backend) == "torch.distributed.Backend.GLOO") v = Value::string("gloo");
        if (v.kind == Value::Kind::Str) {
          if (v.s == "gloo") m_.gloo_ = true;
          if (contains(v.s, "nccl")) m_.cuda_ = true;
        }
      }
      if (c.canonical == "torch.nn.parallel.DistributedDataParallel" ||
          c.canonical == "torch.distributed.fsdp.FullyShardedDataParallel" ||
          c.canonical == "torch.distributed.fsdp.fully_shard") {
        m_.distributed_ = true;
        m_.wraps_ddp_ = true;
      }
      if (c.method == "cuda" && !node_is_null(c.receiver)) m_.cuda_ = true;
      if (c.canonical.rfind("torch.cuda.", 0) == 0 && c.canonical != "torch.cuda.is_available" &&
          c.canonical != "torch.cuda.device_count") {
        m_.cuda_ = true;
      }
      // torch.accelerator (PyTorch 2.6+): the script puts its work on the
      // current accelerator, CUDA on NVIDIA GPUs, and NCCL is the default
      // backend get_default_backend_for_device gives it (pytorch/examples'
      // DDP tutorial sets up this way)
      if ((c.canonical.rfind("torch.accelerator.", 0) == 0 && c.canonical != "torch.accelerator.is_available" &&
           c.canonical != "torch.accelerator.device_count") ||
          c.canonical == "torch.distributed.get_default_backend_for_device") {
        uses_accelerator = true;
      }
    }
    // parser.set_defaults(x=...) overrides every add_argument default of x
    for (const CallSite* c : m_.calls_named("set_defaults")) {
      for (const Argument& a : m_.arguments(*c)) {
        if (a.kind == Argument::Kind::Keyword) m_.argparse_set_defaults_[std::string(a.keyword)].push_back(a.value);
      }
    }
    // ... unless the file names another accelerator's device (`torch.device("mps")`,
    // `acc.type == "xpu"`): then which one runs is not known to be CUDA
    if (uses_accelerator && !other_accelerator_) m_.cuda_ = true;
    if (m_.argparse_.contains("local_rank")) m_.distributed_ = true;
    if (m_.project_ && m_.project_->cuda) m_.cuda_ = true;  // a CUDA script of the project calls into this file

    m_.find_frameworks();
    // A framework that picks the device itself puts the work on the GPU when
    // there is one (Accelerate's and Lightning's default accelerator is
    // "auto"): a file that trains through one is a CUDA script unless it
    // names another accelerator or asks for the CPU
    bool framework_device = false;
    for (const FrameworkConfig& c : m_.framework_configs_) {
      if (c.framework == Framework::HfTrainer) continue;
      Value cpu = m_.value_of(m_.argument(*c.call, c.framework == Framework::Accelerate ? "cpu" : "accelerator"));
      if (cpu.kind == Value::Kind::Bool ? !cpu.truthy() : !(cpu.kind == Value::Kind::Str && cpu.s == "cpu"))
        framework_device = true;
      else
        other_accelerator_ = true;
    }
    for (std::size_t f = 0; f < m_.functions_.size(); ++f)
      if (m_.is_lightning_step_hook(static_cast<int>(f))) framework_device = true;
    if (framework_device && !other_accelerator_) m_.cuda_ = true;

    m_.analyse_loops();
  }

  SemanticModel& m_;
  const Kinds& k_;
  const SyntaxTree& tree_;
  // The walk's working storage, kept per thread between files so that a run
  // over many files does not allocate it again for each (cleared in the constructor).
  struct ImportSite {
    std::string_view local;  // the name bound
    std::uint32_t at = 0;    // the import statement's first byte
    int scope = 0;           // the function scope holding it (0: module)
  };
  struct Scratch {
    std::vector<Open> region_stack;
    std::vector<TSNode> subscripts;
    std::vector<std::pair<TSNode, TSNode>> subscript_writes;
    std::vector<TSNode> path;
    std::vector<TSSymbol> symbols;
    std::vector<int> call_at;
    std::vector<std::pair<int, Argument>> pending_arguments;
    std::vector<TSNode> branch_condition;
    std::vector<std::pair<int, int>> first_indent;
    std::vector<TSNode> prev_stmt;
    std::vector<std::uint32_t> fill;
    std::vector<Pending> pending_part;
    std::string name;  // a canonical name or import target being built
    std::vector<ImportSite> import_sites;
    std::vector<ImportSite> as_targets;
  };
  static Scratch& scratch() {
    thread_local Scratch s;
    return s;
  }
  Scratch& scratch_ = scratch();
  std::vector<Open>& region_stack_ = scratch_.region_stack;
  std::vector<TSNode>& subscripts_ = scratch_.subscripts;
  std::vector<ImportSite>& import_sites_ = scratch_.import_sites;  // every name an import binds, where
  std::vector<ImportSite>& as_targets_ = scratch_.as_targets;      // `with/except ... as name` targets
  std::vector<std::pair<TSNode, TSNode>>& subscript_writes_ = scratch_.subscript_writes;  // `x[k] = v`: (x[k], v)
  std::vector<TSNode>& path_ = scratch_.path;                // node at each depth of the current walk position
  std::vector<TSSymbol>& symbols_ = scratch_.symbols;        // its symbol
  std::vector<int>& call_at_ = scratch_.call_at;             // per depth: index of the call entered there
  std::vector<std::pair<int, Argument>>& pending_arguments_ = scratch_.pending_arguments;  // (call, argument)
  std::vector<TSNode>& branch_condition_ = scratch_.branch_condition;  // per depth: latest if/elif condition
  std::vector<std::pair<int, int>>& first_indent_ = scratch_.first_indent;  // per depth: a block's first indentation
  std::vector<TSNode>& prev_stmt_ = scratch_.prev_stmt;      // per depth: the block's previous statement
  std::vector<Pending>& pending_part_ = scratch_.pending_part;  // per depth: parts the node's children fill in
  bool has_error_ = false;                                   // the tree has ERROR or MISSING nodes
  bool other_accelerator_ = false;                           // a string names an MPS, XPU, HPU or NPU device
  bool header_done_ = false;                                 // the header block's end is known
  bool docstring_allowed_ = true;                            // no statement before: a string is the docstring
  bool may_use_keywords_as_names_ = false;                   // the text contains `async` or `await`
  bool all_leaves_ = false;                                  // enter() needs every named leaf
  const std::uint8_t* flags_ = symbol_flags();  // per symbol: SymbolFlag bits
};

// ---------------------------------------------------------------------------

namespace {
struct ThreadBuffer {
  std::unique_ptr<std::byte[]> bytes;  // allocated on the thread's first model
  bool in_use = false;
};
thread_local ThreadBuffer thread_buffer;

std::pmr::monotonic_buffer_resource arena_resource(bool claim) {
  if (!claim) return std::pmr::monotonic_buffer_resource(4096);
  if (!thread_buffer.bytes) thread_buffer.bytes = std::make_unique<std::byte[]>(ModelArena::kThreadBufferBytes);
  return std::pmr::monotonic_buffer_resource(thread_buffer.bytes.get(), ModelArena::kThreadBufferBytes);
}
}  // namespace

ModelArena::ModelArena(std::size_t source_bytes)
    : holds_thread_buffer_(source_bytes <= kPoolAboveBytes && !std::exchange(thread_buffer.in_use, true)),
      resource_(arena_resource(holds_thread_buffer_)) {
  if (source_bytes > kPoolAboveBytes) pool_.emplace();
}

ModelArena::~ModelArena() {
  if (holds_thread_buffer_) thread_buffer.in_use = false;
}

SemanticModel::SemanticModel(const SourceFile& source, const SyntaxTree& tree, const ProjectFacts* project)
    : arena_(source.text().size()), source_(source), project_(project) {
  ModelBuilder(*this, tree).run();
}

const ProjectFacts& SemanticModel::no_project_facts() {
  static const ProjectFacts none;
  return none;
}

}  // namespace ddplint
