#include "linter/semantic_model.hpp"
#include "linter/node_access.hpp"

#include "linter/tree_walk_impl.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <utility>

namespace ddplint {

namespace {

constexpr TSSymbol kErrorSymbol = static_cast<TSSymbol>(-1);  // ts_builtin_sym_error (tree-sitter's parser.h)
constexpr int kMaxDepth = 24;  // bound on recursion through bindings and nesting
constexpr std::size_t kMaxStringValue = 4096;  // longer constant strings are Unknown (bounded memory)


std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool contains(std::string_view hay, std::string_view needle) { return hay.find(needle) != std::string_view::npos; }

// Public spellings of names that PyTorch re-exports from private modules.
struct Rewrite {
  std::string_view from, to;
};
constexpr std::array kRewrites = {
    Rewrite{"torch.nn.parallel.distributed.", "torch.nn.parallel."},
    Rewrite{"torch.nn.parallel.data_parallel.", "torch.nn.parallel."},
    Rewrite{"torch.nn.DistributedDataParallel", "torch.nn.parallel.DistributedDataParallel"},
    Rewrite{"torch.nn.DataParallel", "torch.nn.parallel.DataParallel"},
    Rewrite{"torch.utils.data.dataloader.", "torch.utils.data."},
    Rewrite{"torch.utils.data.distributed.", "torch.utils.data."},
    Rewrite{"torch.utils.data.dataset.", "torch.utils.data."},
    Rewrite{"torch.utils.data.sampler.", "torch.utils.data."},
    Rewrite{"torch.distributed.distributed_c10d.", "torch.distributed."},
    Rewrite{"torch.distributed.fsdp.fully_sharded_data_parallel.", "torch.distributed.fsdp."},
    Rewrite{"torch.cuda.amp.autocast_mode.", "torch.cuda.amp."},
    Rewrite{"torch.cuda.amp.grad_scaler.", "torch.cuda.amp."},
    Rewrite{"torch.amp.autocast_mode.", "torch.amp."},
    Rewrite{"torch.amp.grad_scaler.", "torch.amp."},
};

// Names that conventionally hold parsed command-line arguments (`args.lr`).
bool is_args_like_name(std::string_view name) {
  static constexpr std::array<std::string_view, 8> names = {"args", "opt", "opts", "flags", "FLAGS",
                                                            "hparams", "options", "cmd_args"};
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool is_world_size_name(std::string_view raw) {
  std::string name = lower(raw);
  static constexpr std::array<std::string_view, 17> names = {
      "world_size", "ngpus_per_node", "num_gpus", "n_gpu", "n_gpus", "ngpus", "ngpu",
      "ddp_world_size", "nproc_per_node", "gpu_count", "num_replicas", "nprocs",
      "num_processes", "num_devices", "n_devices", "ndevices", "num_gpus_per_node"};
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool is_rank_name(std::string_view raw) {
  std::string name = lower(raw);
  if (name == "rank") return true;
  auto ends = [&](std::string_view suf) {
    return name.size() >= suf.size() && name.compare(name.size() - suf.size(), suf.size(), suf) == 0;
  };
  return ends("_rank") || name.rfind("rank_", 0) == 0 || name == "localrank" || name == "gpu_id" ||
         name == "device_id" || name == "local_gpu" || name == "process_index" || name == "local_process_index";
}

bool is_main_process_name(std::string_view raw) {
  std::string name = lower(raw);
  static constexpr std::array<std::string_view, 16> names = {
      "master_process", "is_master", "is_main_process", "main_process", "is_main", "is_rank0",
      "rank0", "is_rank_zero", "rank_zero", "is_primary", "is_global_zero", "is_local_main_process",
      "is_main_rank", "master", "is_master_process", "is_leader"};
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

void normalize_canonical_in_place(std::string& name) {
  // Every rewritten prefix is under torch and at least 16 bytes long: compare
  // two 8-byte words (two loads each) before the rest, so that most names
  // (`torch.nn.functional.relu`) are rejected without a memcmp call.
  static_assert(std::all_of(kRewrites.begin(), kRewrites.end(), [](const Rewrite& r) { return r.from.size() >= 16; }));
  if (name.size() < 16 || std::memcmp(name.data(), "torch.", 6) != 0) return;
  std::uint64_t head[2];
  std::memcpy(head, name.data(), 16);
  for (const auto& r : kRewrites) {
    std::uint64_t from[2];
    std::memcpy(from, r.from.data(), 16);
    if (head[0] != from[0] || head[1] != from[1] || name.size() < r.from.size()) continue;
    if (std::memcmp(name.data() + 16, r.from.data() + 16, r.from.size() - 16) != 0) continue;
    name.replace(0, r.from.size(), r.to);
    return;
  }
}

std::string normalize_canonical(std::string name) {
  normalize_canonical_in_place(name);
  return name;
}

namespace {
using Entry = CallRange::Entry;

// A name index: (name_hash, position) entries sorted by hash, then name (only
// where hashes meet), then position, so that the entries of one name are
// contiguous and in file order. `name(position)` gives an entry's name.
template <typename Name>
void sort_index(std::span<Entry> table, Name name) {
  std::sort(table.begin(), table.end(), [&](const Entry& a, const Entry& b) {
    if (a.first != b.first) return a.first < b.first;
    std::string_view na = name(a.second), nb = name(b.second);
    if (na != nb) return na < nb;
    return a.second < b.second;
  });
}

// The entries of `key` in an index sorted by sort_index: [first, last).
template <typename Name>
std::pair<const Entry*, const Entry*> index_run(std::span<const Entry> table, std::string_view key, Name name) {
  const std::uint64_t h = name_hash(key);
  const Entry* begin = table.data();
  const Entry* end = begin + table.size();
  const Entry* first = std::lower_bound(begin, end, h, [](const Entry& e, std::uint64_t v) { return e.first < v; });
  while (first != end && first->first == h && name(first->second) != key) ++first;  // (a collision)
  const Entry* last = first;
  for (int step = 0; step < 16; ++step, ++last) {  // most runs are short: walked
    if (last == end || last->first != h || name(last->second) != key) return {first, last};
  }
  // a long run (a name bound or called thousands of times): its end by binary
  // search, not a pass over all of it for each lookup
  last = std::upper_bound(last, end, key, [&](std::string_view k, const Entry& e) {
    return e.first != h || k < name(e.second);  // within the hash, entries are sorted by name
  });
  return {first, last};
}
}  // namespace

namespace {
// The text of a name or attribute chain written without spaces, comments or
// line breaks (`args.batch_size`) is its dotted path: each segment must start
// like an identifier (a digit would be a number: `1.5.real`) and not be a
// keyword constant (`None.x`). Otherwise, empty: take the tree walk.
// Per byte: 1 may start an identifier (letters, _, non-ASCII), 2 may continue one (also digits), 0 neither.
constexpr std::array<unsigned char, 256> kIdentifierByte = [] {
  std::array<unsigned char, 256> k{};
  for (int c = 0; c < 256; ++c) {
    if (c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80) k[c] = 1;
    else if (c >= '0' && c <= '9') k[c] = 2;
  }
  return k;
}();

// The identifier `t` starts with (empty if it starts otherwise).
std::string_view leading_identifier(std::string_view t) {
  std::size_t n = 0;
  while (n < t.size() && kIdentifierByte[static_cast<unsigned char>(t[n])] != 0) ++n;
  if (n > 0 && kIdentifierByte[static_cast<unsigned char>(t[0])] != 1) return {};  // a number
  return t.substr(0, n);
}

bool plain_dotted(std::string_view t) {
  // per byte: 1 may start an identifier, 2 a digit (may continue one), 3 '.', 0 neither
  static constexpr std::array<unsigned char, 256> kClass = [] {
    std::array<unsigned char, 256> k = kIdentifierByte;
    k['.'] = 3;
    return k;
  }();
  // a segment is not empty, does not start with a digit, and is not None, True or False
  auto segment_ok = [&](std::size_t start, std::size_t end) {
    std::size_t len = end - start;
    if (len == 0 || kClass[static_cast<unsigned char>(t[start])] != 1) return false;
    if ((len == 4 || len == 5) && t[start] >= 'F' && t[start] <= 'T') {
      std::string_view seg = t.substr(start, len);
      if (seg == "None" || seg == "True" || seg == "False") return false;
    }
    return true;
  };
  std::size_t start = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    unsigned char k = kClass[static_cast<unsigned char>(t[i])];
    if (k == 3) {
      if (!segment_ok(start, i)) return false;
      start = i + 1;
    } else if (k == 0) {
      return false;
    }
  }
  return segment_ok(start, t.size());
}
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
      if (node_is_null(mod) || node_symbol(mod) != k_.dotted_name) return;  // relative import
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
    auto joined = [&](std::string_view name) {  // `module.name`
      built.assign(module).append(".").append(name);
      return keep_stripped();
    };
    for (TSNode child : children(stmt)) {
      if (from && node_eq(child, mod)) continue;
      TSSymbol s = node_symbol(child);
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
      m_.aliases_.set(local, target);
    }
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
    if (!contains(whole, "cuda") && !contains(whole, "nccl")) return;  // (most strings)
    for (TSNode c : children(node)) {
      if (node_symbol(c) != k_.string_content) continue;
      std::string_view t = node_text(c, m_.source_.text());
      if (t == "cuda" || t.rfind("cuda:", 0) == 0 || t == "nccl") m_.cuda_ = true;
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
      if (!node_is_null(c.callee) && m_.canonical_name_into(c.callee, name)) {
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
    // environment reads
    auto note_env = [&](const std::string& var) {
      if (var == "LOCAL_RANK" || var == "RANK" || var == "WORLD_SIZE") m_.distributed_ = true;
    };
    for (TSNode sub : subscripts_) {
      std::string var = m_.env_var_read(sub);
      if (!var.empty()) note_env(var);
    }
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
    for (const CallSite& c : m_.calls_) {
      if (c.canonical == "os.environ.get" || c.canonical == "os.getenv") note_env(m_.env_var_read(c.node));
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
    }
    // parser.set_defaults(x=...) overrides every add_argument default of x
    for (const CallSite* c : m_.calls_named("set_defaults")) {
      for (const Argument& a : m_.arguments(*c)) {
        if (a.kind == Argument::Kind::Keyword) m_.argparse_set_defaults_[std::string(a.keyword)].push_back(a.value);
      }
    }
    if (m_.argparse_.contains("local_rank")) m_.distributed_ = true;

    m_.analyse_loops();
  }

  SemanticModel& m_;
  const Kinds& k_;
  const SyntaxTree& tree_;
  // The walk's working storage, kept per thread between files so that a run
  // over many files does not allocate it again for each (cleared in the constructor).
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
  };
  static Scratch& scratch() {
    thread_local Scratch s;
    return s;
  }
  Scratch& scratch_ = scratch();
  std::vector<Open>& region_stack_ = scratch_.region_stack;
  std::vector<TSNode>& subscripts_ = scratch_.subscripts;
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

SemanticModel::SemanticModel(const SourceFile& source, const SyntaxTree& tree)
    : arena_(source.text().size()), source_(source) {
  ModelBuilder(*this, tree).run();
}


std::string SemanticModel::path_of(TSNode expr) const {
  std::string storage;
  return std::string(path_view(expr, storage));
}

std::string_view SemanticModel::path_view(TSNode expr, std::string& storage) const {
  const Kinds& k = kinds();
  if (node_is_null(expr)) return {};
  TSSymbol s0 = node_symbol(expr);
  if (s0 != k.identifier && s0 != k.attribute) return {};
  std::string_view whole = text(expr);
  if (plain_dotted(whole)) return whole;
  std::array<std::string_view, 64> parts;
  std::size_t n = 0;
  TSNode cur = expr;
  for (; n < parts.size(); ++n) {
    if (node_is_null(cur)) return {};
    TSSymbol s = node_symbol(cur);
    if (s == k.identifier) {
      parts[n++] = text(cur);
      storage.clear();
      for (std::size_t i = n; i-- > 0;) {
        storage += parts[i];
        if (i > 0) storage += '.';
      }
      return storage;
    }
    if (s != k.attribute) return {};
    parts[n] = text(field(cur, k.f_attribute));
    cur = field(cur, k.f_object);
  }
  return {};
}

std::string_view SemanticModel::last_name(TSNode expr) const {
  const Kinds& k = kinds();
  if (node_is_null(expr)) return {};
  TSSymbol s = node_symbol(expr);
  if (s == k.identifier) return text(expr);
  if (s == k.attribute) return text(field(expr, k.f_attribute));
  if (s == k.call) return last_name(field(expr, k.f_function));
  return {};
}

std::string_view SemanticModel::text(TSNode node) const {
  // node_text() with the inline accessors
  std::string_view t = source_.text();
  std::uint32_t b = node_start_byte(node), e = node_end_byte(node);
  if (e > t.size() || b > e) return {};
  return t.substr(b, e - b);
}

std::string SemanticModel::canonical_name(TSNode expr) const {
  std::string name;
  canonical_name_into(expr, name);
  return name;
}

bool SemanticModel::canonical_name_into(TSNode expr, std::string& out) const {
  out.clear();
  if (node_is_null(expr)) return false;
  TSSymbol s0 = node_symbol(expr);
  const Kinds& k = kinds();
  if (s0 != k.identifier && s0 != k.attribute) return false;
  std::string_view whole = text(expr);
  // The chain's root name starts its text (`a` in `a . b`, and in `a().b`,
  // which has no path): most roots are not imports, and then nothing more is read.
  if (s0 == k.attribute && aliases_.find(leading_identifier(whole)) == nullptr) return false;
  std::string storage;  // (only for a chain not written plainly)
  std::string_view path = s0 == k.identifier ? whole : path_view(expr, storage);  // an identifier's text is its path
  if (path.empty()) return false;
  std::size_t dot = std::min(path.find('.'), path.size());
  const std::string_view* target = aliases_.find(path.substr(0, dot));
  if (target == nullptr) return false;
  out.append(*target).append(path.substr(dot));
  normalize_canonical_in_place(out);
  return !out.empty();
}

namespace {
// The calls listed under `key` in a sorted (key, call index) table, in file order.
}  // namespace

CallRange SemanticModel::calls_to(std::string_view canonical) const {
  auto [first, last] = index_run(calls_by_canonical_, canonical, [&](int i) { return calls_[i].canonical; });
  return CallRange(first, last, calls_.data());
}

CallRange SemanticModel::calls_named(std::string_view name) const {
  auto [first, last] = index_run(calls_by_name_, name, [&](int i) { return calls_[i].method; });
  return CallRange(first, last, calls_.data());
}

const CallSite* SemanticModel::call_at(TSNode call) const {
  std::uint32_t start = node_start_byte(call);
  auto it = std::lower_bound(calls_.begin(), calls_.end(), start,
                             [](const CallSite& c, std::uint32_t b) { return node_start_byte(c.node) < b; });
  for (; it != calls_.end() && node_start_byte(it->node) == start; ++it) {
    if (node_eq(it->node, call)) return &*it;
  }
  return nullptr;
}

TSNode SemanticModel::argument(const CallSite& call, std::string_view keyword, int position) const {
  int pos = 0;
  TSNode positional{};
  for (const Argument& a : arguments(call)) {
    switch (a.kind) {
      case Argument::Kind::Keyword:
        if (!keyword.empty() && a.keyword == keyword) return a.value;
        break;
      case Argument::Kind::Positional:
        if (pos == position) positional = a.node;
        ++pos;
        break;
      default:
        break;
    }
  }
  return positional;
}

bool SemanticModel::has_unpacked_arguments(const CallSite& call) const {
  for (const Argument& a : arguments(call)) {
    if (a.kind == Argument::Kind::ListSplat || a.kind == Argument::Kind::DictionarySplat) return true;
  }
  return false;
}

int SemanticModel::positional_count(const CallSite& call) const {
  int count = 0;
  for (const Argument& a : arguments(call)) count += a.kind == Argument::Kind::Positional;
  return count;
}

int SemanticModel::region_of(TSNode node) const {
  std::uint32_t b = node_start_byte(node);
  std::uint32_t e = node_end_byte(node);
  // Regions are recorded in pre-order and nest, so the last region starting at
  // or before the node is the deepest container or a descendant of it: walk up
  // its parents to the first that contains the node. O(log n + depth).
  auto it = std::upper_bound(region_ranges_.begin(), region_ranges_.end(), b,
                             [](std::uint32_t off, const std::pair<std::uint32_t, std::uint32_t>& r) {
                               return off < r.first;
                             });
  int i = static_cast<int>(it - region_ranges_.begin()) - 1;
  while (i > 0 && !(region_ranges_[i].first <= b && e <= region_ranges_[i].second)) i = regions_[i].parent;
  return std::max(i, 0);
}

BindingList SemanticModel::bindings_of(std::string_view path, int region) const {
  BindingList out;
  auto [from, to] = index_run(bindings_by_path_, path, [&](int i) { return bindings_[i].path; });
  if (path.find('.') != std::string_view::npos) {
    for (const Entry* e = from; e != to; ++e) out.push_back(&bindings_[e->second]);
    return out;
  }
  if (from == to) return out;
  // A name bound many times (a file of thousands of functions that each bind
  // `model`): its bindings in one scope through a (hash, scope, index) index,
  // built on the first such lookup, instead of a pass over all of them for each
  // lookup, which was quadratic in such a file. Most runs are short: scanned.
  constexpr std::ptrdiff_t kScanAtMost = 32;
  const std::uint64_t h = from->first;
  if (to - from > kScanAtMost && bindings_by_scope_.empty()) {
    for (std::size_t i = 0; i < bindings_.size(); ++i)
      bindings_by_scope_.push_back({name_hash(bindings_[i].path), bindings_[i].scope, static_cast<int>(i)});
    std::sort(bindings_by_scope_.begin(), bindings_by_scope_.end());
  }
  // innermost enclosing function scope that binds the name; class bodies are
  // not visible from methods (Python's rule), but are from the class body itself.
  int scope = regions_[region].scope;
  bool first = true;
  while (scope >= 0) {
    const Region& r = regions_[scope];
    if (first || r.kind != Region::Kind::Class) {
      if (to - from <= kScanAtMost) {
        for (const Entry* e = from; e != to; ++e)
          if (bindings_[e->second].scope == scope) out.push_back(&bindings_[e->second]);
      } else {  // this scope's bindings of the hash, in file order; a colliding name is skipped
        for (auto e = std::lower_bound(bindings_by_scope_.begin(), bindings_by_scope_.end(), ScopedBinding{h, scope, INT_MIN});
             e != bindings_by_scope_.end() && e->hash == h && e->scope == scope; ++e)
          if (bindings_[e->index].path == path) out.push_back(&bindings_[e->index]);
      }
      if (!out.empty()) return out;
    }
    first = false;
    if (r.parent < 0) break;
    scope = regions_[r.parent].scope;
  }
  return out;
}

TSNode SemanticModel::single_assignment(TSNode expr) const {
  std::string path = path_of(expr);
  if (path.empty()) return {};
  auto bs = bindings_of(path, region_of(expr));
  if (bs.size() != 1 || bs[0]->kind != Binding::Kind::Assign) return {};
  if (node_eq(bs[0]->target, expr)) return {};
  return bs[0]->value;
}

Value SemanticModel::value_of(TSNode expr) const { return value_rec(expr, 0); }

TSNode SemanticModel::assigned_to(TSNode value) const {
  if (assigned_index_.empty()) {  // built on first use: start byte of each bound value -> bindings
    for (std::size_t i = 0; i < bindings_.size(); ++i)
      if (bindings_[i].kind == Binding::Kind::Assign && !node_is_null(bindings_[i].value))
        assigned_index_.emplace(node_start_byte(bindings_[i].value), static_cast<int>(i));
    if (assigned_index_.empty()) assigned_index_.emplace(UINT32_MAX, -1);
  }
  auto [lo, hi] = assigned_index_.equal_range(node_start_byte(value));
  for (auto it = lo; it != hi; ++it)
    if (it->second >= 0 && node_eq(bindings_[it->second].value, value)) return bindings_[it->second].target;
  return {};
}

Value SemanticModel::argparse_value(std::string_view dest, int depth) const {
  std::string key(dest);
  if (auto m = argparse_memo_.find(key); m != argparse_memo_.end()) return m->second;
  Value v = argparse_uncached(key, depth);
  argparse_memo_[key] = v;
  return v;
}

Value SemanticModel::argparse_uncached(const std::string& key, int depth) const {
  // parser-level defaults always win (argparse docs); several of them: unknown
  if (auto sd = argparse_set_defaults_.find(key); sd != argparse_set_defaults_.end()) {
    return sd->second.size() == 1 ? value_rec(sd->second[0], depth + 1) : Value::unknown();
  }
  auto it = argparse_.find(key);
  if (it == argparse_.end()) return Value::unknown();
  // several options may write one dest (`--pin-mem` / `--no-pin-mem`): only an
  // agreed default is known
  std::optional<Value> agreed;
  for (int ci : it->second) {
    const CallSite& add = calls_[ci];
    Value v;
    TSNode def = argument(add, "default");
    TSNode action = argument(add, "action");
    if (!node_is_null(def)) {
      v = value_rec(def, depth + 1);
    } else if (!node_is_null(action)) {
      Value a = value_rec(action, depth + 1);
      if (a.kind == Value::Kind::Str && a.s == "store_true") v = Value::boolean(false);
      else if (a.kind == Value::Kind::Str && a.s == "store_false") v = Value::boolean(true);
    } else {
      v = Value::none();
    }
    if (!v.known()) return v;
    if (agreed && (agreed->kind != v.kind || agreed->i != v.i || agreed->f != v.f || agreed->s != v.s))
      return Value::unknown();
    agreed = v;
  }
  return agreed ? *agreed : Value::unknown();
}

Value SemanticModel::value_rec(TSNode expr, int depth) const {
  if (node_is_null(expr) || depth > kMaxDepth) return Value::unknown();
  // memoised per node: names used many times (`max(a, a, a)`) are resolved
  // once, and a cycle (`a = b; b = a`) reads the in-progress Unknown
  MemoKey key{node_start_byte(expr), node_end_byte(expr), node_symbol(expr), 0};
  auto [it, inserted] = value_memo_.try_emplace(key, Value::unknown());
  if (!inserted) return it->second;
  Value v = value_uncached(expr, depth);
  if (v.kind == Value::Kind::Str && v.s.size() > kMaxStringValue) v = Value::unknown();
  value_memo_[key] = v;
  return v;
}

Value SemanticModel::value_uncached(TSNode expr, int depth) const {
  const Kinds& k = kinds();
  TSSymbol s = node_symbol(expr);
  if (s == k.integer) {
    std::string t(text(expr));
    std::erase(t, '_');
    if (t.empty() || t.back() == 'j' || t.back() == 'J' || t.back() == 'l' || t.back() == 'L') return Value::unknown();
    int base = 10;
    std::size_t skip = 0;
    if (t.size() > 2 && t[0] == '0') {
      char p = static_cast<char>(std::tolower(static_cast<unsigned char>(t[1])));
      if (p == 'x') base = 16, skip = 2;
      else if (p == 'o') base = 8, skip = 2;
      else if (p == 'b') base = 2, skip = 2;
    }
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(t.c_str() + skip, &end, base);
    if (errno != 0 || *end != '\0') return Value::unknown();
    return Value::integer(v);
  }
  if (s == k.float_) {
    std::string t(text(expr));
    std::erase(t, '_');
    if (!t.empty() && (t.back() == 'j' || t.back() == 'J')) return Value::unknown();
    char* end = nullptr;
    double v = std::strtod(t.c_str(), &end);
    if (*end != '\0') return Value::unknown();
    return Value::floating(v);
  }
  if (s == k.true_) return Value::boolean(true);
  if (s == k.false_) return Value::boolean(false);
  if (s == k.none) return Value::none();
  if (s == k.string) {
    std::string out;
    for (TSNode c : children(expr)) {
      TSSymbol cs = node_symbol(c);
      if (cs == k.interpolation) return Value::unknown();
      if (cs == k.string_content) out += text(c);
    }
    return Value::string(std::move(out));
  }
  if (s == k.concatenated_string) {
    std::string out;
    for (TSNode part : children(expr)) {
      Value v = value_rec(part, depth + 1);
      if (v.kind != Value::Kind::Str) return Value::unknown();
      out += v.s;
    }
    return Value::string(std::move(out));
  }
  if (s == k.parenthesized_expression) {
    if (ts_node_named_child_count(expr) != 1) return Value::unknown();
    return value_rec(ts_node_named_child(expr, 0), depth + 1);
  }
  if (s == k.unary_operator) {
    Value v = value_rec(field(expr, k.f_argument), depth + 1);
    std::string_view op = text(field(expr, k.f_operator));
    if (!v.is_number()) return Value::unknown();
    if (op == "-") {
      if (v.kind == Value::Kind::Float) return Value::floating(-v.f);
      return v.i == INT64_MIN ? Value::unknown() : Value::integer(-v.i);
    }
    if (op == "+") return v.kind == Value::Kind::Bool ? Value::integer(v.i) : v;
    return Value::unknown();
  }
  if (s == k.not_operator) {
    Value v = value_rec(ts_node_named_child(expr, 0), depth + 1);
    if (!v.known()) return v;
    return Value::boolean(!v.truthy());
  }
  if (s == k.binary_operator) {
    Value l = value_rec(field(expr, k.f_left), depth + 1);
    Value r = value_rec(field(expr, k.f_right), depth + 1);
    std::string_view op = text(field(expr, k.f_operator));
    if (l.kind == Value::Kind::Str && r.kind == Value::Kind::Str && op == "+") return Value::string(l.s + r.s);
    if (!l.is_number() || !r.is_number()) return Value::unknown();
    bool ints = l.kind != Value::Kind::Float && r.kind != Value::Kind::Float;
    if (ints) {
      // Python integers do not overflow; past 64 bits the value is Unknown here
      std::int64_t a = l.i, b = r.i, out = 0;
      if (op == "+") return __builtin_add_overflow(a, b, &out) ? Value::unknown() : Value::integer(out);
      if (op == "-") return __builtin_sub_overflow(a, b, &out) ? Value::unknown() : Value::integer(out);
      if (op == "*") return __builtin_mul_overflow(a, b, &out) ? Value::unknown() : Value::integer(out);
      if ((op == "//" || op == "%") && (b == 0 || (b == -1 && a == INT64_MIN))) return Value::unknown();
      if (op == "//") return Value::integer(a / b - ((a % b != 0) && ((a < 0) != (b < 0))));
      if (op == "%") return Value::integer(((a % b) + b) % b);
      if (op == "/" && b != 0) return Value::floating(static_cast<double>(a) / static_cast<double>(b));
      return Value::unknown();
    }
    double a = l.as_double(), b = r.as_double();
    if (op == "+") return Value::floating(a + b);
    if (op == "-") return Value::floating(a - b);
    if (op == "*") return Value::floating(a * b);
    if (op == "/" && b != 0) return Value::floating(a / b);
    if (op == "//" && b != 0) return Value::floating(std::floor(a / b));
    return Value::unknown();
  }
  if (s == k.conditional_expression) {
    // `a if cond else b`: children are a, cond, b
    if (ts_node_named_child_count(expr) != 3) return Value::unknown();
    Value c = value_rec(ts_node_named_child(expr, 1), depth + 1);
    Value a = value_rec(ts_node_named_child(expr, 0), depth + 1);
    Value b = value_rec(ts_node_named_child(expr, 2), depth + 1);
    if (c.known()) return c.truthy() ? a : b;
    if (a.known() && b.known() && a.kind == b.kind && a.i == b.i && a.f == b.f && a.s == b.s) return a;
    return Value::unknown();
  }
  if (s == k.call) {
    TSNode callee = field(expr, k.f_function);
    if (node_is_null(callee) || node_symbol(callee) != k.identifier) return Value::unknown();
    std::string_view fn = text(callee);
    if (!bindings_of(fn, region_of(expr)).empty()) return Value::unknown();  // shadowed builtin
    const CallSite* call = call_at(expr);
    if (!call || has_unpacked_arguments(*call)) return Value::unknown();
    int n = positional_count(*call);
    if ((fn == "int" || fn == "float" || fn == "str" || fn == "bool") && n == 1) {
      Value v = value_rec(argument(*call, "", 0), depth + 1);
      if (!v.known()) return v;
      if (fn == "int" && v.is_number()) {
        if (v.kind != Value::Kind::Float) return Value::integer(v.i);
        if (!(v.f > -9.2e18 && v.f < 9.2e18)) return Value::unknown();  // out of range, inf or nan
        return Value::integer(static_cast<std::int64_t>(v.f));
      }
      if (fn == "int" && v.kind == Value::Kind::Str) {
        char* end = nullptr;
        errno = 0;
        long long x = std::strtoll(v.s.c_str(), &end, 10);
        return (!v.s.empty() && *end == '\0' && errno == 0) ? Value::integer(x) : Value::unknown();
      }
      if (fn == "float" && v.is_number()) return Value::floating(v.as_double());
      if (fn == "bool") return Value::boolean(v.truthy());
      if (fn == "str" && v.kind == Value::Kind::Str) return v;
      return Value::unknown();
    }
    if ((fn == "min" || fn == "max") && n >= 2) {
      Value best;
      for (int i = 0; i < n; ++i) {
        Value v = value_rec(argument(*call, "", i), depth + 1);
        if (!v.is_number()) return Value::unknown();
        if (!best.known() || (fn == "min" ? v.as_double() < best.as_double() : v.as_double() > best.as_double()))
          best = v;
      }
      return best;
    }
    return Value::unknown();
  }
  if (s == k.identifier || s == k.attribute) {
    std::string path = path_of(expr);
    if (path.empty()) return Value::unknown();
    auto bs = bindings_of(path, region_of(expr));
    if (!bs.empty()) {
      if (bs.size() != 1 || bs[0]->kind != Binding::Kind::Assign || node_is_null(bs[0]->value)) return Value::unknown();
      if (node_eq(bs[0]->target, expr)) return Value::unknown();
      return value_rec(bs[0]->value, depth + 1);
    }
    if (s == k.attribute) {
      TSNode object = field(expr, k.f_object);
      if (node_symbol(object) == k.identifier && is_args_like_name(text(object))) {
        return argparse_value(text(field(expr, k.f_attribute)), depth);
      }
    }
    return Value::unknown();
  }
  return Value::unknown();
}

std::string SemanticModel::env_var_read(TSNode expr) const {
  const Kinds& k = kinds();
  for (int guard = 0; guard < 4 && !node_is_null(expr); ++guard) {
    TSSymbol s = node_symbol(expr);
    if (s == k.subscript) {
      if (canonical_name(field(expr, k.f_value)) != "os.environ") return {};
      Value v = value_of(field(expr, k.f_subscript));
      return v.kind == Value::Kind::Str ? v.s : std::string();
    }
    if (s != k.call) return {};
    const CallSite* c = call_at(expr);
    if (!c) return {};
    if (c->canonical == "os.environ.get" || c->canonical == "os.getenv") {
      Value v = value_of(argument(*c, "key", 0));
      return v.kind == Value::Kind::Str ? v.s : std::string();
    }
    if (c->method == "int" || c->method == "str") {
      expr = argument(*c, "", 0);
      continue;
    }
    return {};
  }
  return {};
}

bool SemanticModel::is_rank_value(TSNode expr) const { return rank_rec(expr, 0); }

bool SemanticModel::rank_rec(TSNode expr, int depth) const {
  if (node_is_null(expr) || depth > kMaxDepth) return false;
  const Kinds& k = kinds();
  TSSymbol s = node_symbol(expr);
  if (s == k.parenthesized_expression && ts_node_named_child_count(expr) == 1)
    return rank_rec(ts_node_named_child(expr, 0), depth + 1);
  std::string env = env_var_read(expr);
  if (!env.empty()) return env == "RANK" || env == "LOCAL_RANK" || env == "SLURM_PROCID" || env == "SLURM_LOCALID";
  if (s == k.call) {
    const CallSite* c = call_at(expr);
    if (!c) return false;
    if (c->method == "get_rank" || c->method == "get_local_rank" || c->method == "get_node_local_rank") return true;
    if (c->method == "int" && positional_count(*c) == 1) return rank_rec(argument(*c, "", 0), depth + 1);
    return false;
  }
  if (s == k.identifier || s == k.attribute) {
    if (is_rank_name(last_name(expr))) return true;
    TSNode v = single_assignment(expr);
    return !node_is_null(v) && rank_rec(v, depth + 1);
  }
  return false;
}

template <typename F>
bool SemanticModel::memoized(std::uint8_t query, TSNode node, F&& compute) const {
  MemoKey key{node_start_byte(node), node_end_byte(node), node_symbol(node), query};
  auto [it, inserted] = memo_.try_emplace(key, 2);
  if (!inserted) return it->second == 1;  // known, or a cycle in progress (false)
  bool result = compute();
  memo_[key] = result ? 1 : 0;
  return result;
}

bool SemanticModel::is_world_size_value(TSNode expr) const { return world_rec(expr, 0); }

bool SemanticModel::world_rec(TSNode expr, int depth) const {
  if (node_is_null(expr)) return false;
  return memoized(1, expr, [&] { return world_rec_uncached(expr, depth); });
}

bool SemanticModel::world_rec_uncached(TSNode expr, int depth) const {
  if (node_is_null(expr) || depth > kMaxDepth) return false;
  const Kinds& k = kinds();
  TSSymbol s = node_symbol(expr);
  if (s == k.parenthesized_expression && ts_node_named_child_count(expr) == 1)
    return world_rec(ts_node_named_child(expr, 0), depth + 1);
  std::string env = env_var_read(expr);
  if (!env.empty()) return env == "WORLD_SIZE" || env == "SLURM_NTASKS" || env == "LOCAL_WORLD_SIZE";
  if (s == k.call) {
    const CallSite* c = call_at(expr);
    if (!c) return false;
    if (c->method == "get_world_size" || c->canonical == "torch.cuda.device_count" ||
        c->method == "device_count" || c->method == "get_local_world_size")
      return true;
    if ((c->method == "int" || c->method == "len") && positional_count(*c) == 1)
      return world_rec(argument(*c, "", 0), depth + 1);
    return false;
  }
  if (s == k.identifier || s == k.attribute) {
    if (is_world_size_name(last_name(expr))) return true;
    std::string path = path_of(expr);
    for (const Binding* b : bindings_of(path, region_of(expr))) {
      if (b->kind == Binding::Kind::Assign && !node_eq(b->target, expr) && world_rec(b->value, depth + 1))
        return true;
    }
  }
  return false;
}

bool SemanticModel::divides_by_world_size(TSNode expr, TSNode* division) const {
  return divides_rec(expr, 0, division);
}

bool SemanticModel::divides_rec(TSNode expr, int depth, TSNode* division) const {
  if (node_is_null(expr)) return false;
  bool result = memoized(2, expr, [&] { return divides_rec_uncached(expr, depth, nullptr); });
  // The division node: one more uncached step at this level; it recurses through
  // the memoized answers, so it stays linear.
  if (result && division) divides_rec_uncached(expr, depth, division);
  return result;
}

bool SemanticModel::divides_rec_uncached(TSNode expr, int depth, TSNode* division) const {
  if (node_is_null(expr) || depth > kMaxDepth) return false;
  const Kinds& k = kinds();
  TSSymbol s = node_symbol(expr);
  if (s == k.parenthesized_expression && ts_node_named_child_count(expr) == 1)
    return divides_rec(ts_node_named_child(expr, 0), depth + 1, division);
  if (s == k.binary_operator || s == k.augmented_assignment) {
    std::string_view op = text(field(expr, k.f_operator));
    // the divisor is the world size, or a product with it as a factor: `total // (world_size * accum)`
    auto world_factor = [&](TSNode d) {
      for (int guard = 0; guard < 8 && !node_is_null(d); ++guard) {
        if (world_rec(d, 0)) return true;
        TSSymbol ds = node_symbol(d);
        if (ds == k.parenthesized_expression && ts_node_named_child_count(d) == 1) {
          d = ts_node_named_child(d, 0);
        } else if (ds == k.binary_operator && text(field(d, k.f_operator)) == "*") {
          if (world_rec(field(d, k.f_right), 0)) return true;
          d = field(d, k.f_left);
        } else if (ds == k.identifier || ds == k.attribute) {
          d = single_assignment(d);  // `tokens_per_micro = micro * ctx * world_size`
        } else {
          return false;
        }
      }
      return false;
    };
    if ((op == "/" || op == "//" || op == "/=" || op == "//=") && world_factor(field(expr, k.f_right))) {
      if (division) *division = expr;
      return true;
    }
    if (s == k.augmented_assignment) return false;
    return divides_rec(field(expr, k.f_left), depth + 1, division);
  }
  if (s == k.call) {
    const CallSite* c = call_at(expr);
    if (!c) return false;
    static constexpr std::array<std::string_view, 6> wrappers = {"int", "max", "min", "round", "ceil", "floor"};
    if (std::find(wrappers.begin(), wrappers.end(), c->method) == wrappers.end()) return false;
    for (int i = 0, n = positional_count(*c); i < n; ++i)
      if (divides_rec(argument(*c, "", i), depth + 1, division)) return true;
    return false;
  }
  if (s == k.identifier || s == k.attribute) {
    std::string path = path_of(expr);
    for (const Binding* b : bindings_of(path, region_of(expr))) {
      if (node_eq(b->target, expr)) continue;
      if ((b->kind == Binding::Kind::Assign || b->kind == Binding::Kind::Augmented) &&
          divides_rec(b->value, depth + 1, division))
        return true;
    }
  }
  return false;
}

bool SemanticModel::may_be_indexed_device(TSNode expr) const { return indexed_device_rec(expr, 0); }

bool SemanticModel::indexed_device_rec(TSNode expr, int depth) const {
  if (node_is_null(expr)) return true;
  return memoized(3, expr, [&] { return indexed_device_rec_uncached(expr, depth); });
}

bool SemanticModel::indexed_device_rec_uncached(TSNode expr, int depth) const {
  if (node_is_null(expr) || depth > kMaxDepth) return true;
  const Kinds& k = kinds();
  TSSymbol s = node_symbol(expr);
  if (s == k.parenthesized_expression && ts_node_named_child_count(expr) == 1)
    return indexed_device_rec(ts_node_named_child(expr, 0), depth + 1);
  if (s == k.integer) return true;
  if (s == k.string) {
    for (TSNode c : children(expr)) {
      if (node_symbol(c) != k.string_content) continue;
      std::string_view t = text(c);
      return t.rfind("cuda:", 0) == 0;  // "cuda:1", f"cuda:{rank}"; "cuda"/"cpu" are not indexed
    }
    return false;
  }
  if (is_rank_value(expr)) return true;
  if (s == k.conditional_expression && ts_node_named_child_count(expr) == 3) {
    return indexed_device_rec(ts_node_named_child(expr, 0), depth + 1) ||
           indexed_device_rec(ts_node_named_child(expr, 2), depth + 1);
  }
  if (s == k.call) {
    const CallSite* c = call_at(expr);
    if (!c) return true;
    if (c->canonical == "torch.device") {
      if (positional_count(*c) >= 2 || !node_is_null(argument(*c, "index"))) return true;
      return indexed_device_rec(argument(*c, "type", 0), depth + 1);
    }
    return true;  // some helper returns the device: unknown
  }
  if (s == k.identifier || s == k.attribute) {
    if (!canonical_name(expr).empty()) return false;  // a module constant such as torch.float16
    std::string path = path_of(expr);
    auto bs = bindings_of(path, region_of(expr));
    if (bs.empty()) {
      Value v = value_of(expr);  // argparse default
      if (v.kind == Value::Kind::Str) return v.s.rfind("cuda:", 0) == 0;
      return true;
    }
    for (const Binding* b : bs) {
      if (node_eq(b->target, expr)) continue;
      if (b->kind != Binding::Kind::Assign || node_is_null(b->value)) return true;
      if (indexed_device_rec(b->value, depth + 1)) return true;
    }
    return false;
  }
  return true;
}

// --- guards -------------------------------------------------------------------

namespace {
constexpr GuardMask kNeutral = 0x80;  // single-process check inside an `or`
}

GuardMask SemanticModel::classify_condition(TSNode cond, bool negated) const {
  return static_cast<GuardMask>(classify_rec(cond, negated, 0) & ~kNeutral);
}

// classify_condition's recursion: `c` under `neg` negations, `depth` levels down.
GuardMask SemanticModel::classify_rec(TSNode c, bool neg, int depth) const {
  const Kinds& k = kinds();
  if (node_is_null(c) || depth > kMaxDepth) return 0;
  TSSymbol s = node_symbol(c);
  if (s == k.parenthesized_expression && ts_node_named_child_count(c) == 1)
    return classify_rec(ts_node_named_child(c, 0), neg, depth + 1);
  if (s == k.not_operator) {
    TSNode arg = ts_node_named_child(c, 0);
    std::string name = lower(last_name(arg));
    if (!neg && (contains(name, "distributed") || contains(name, "ddp") || name == "is_dist")) return kNeutral;
    return classify_rec(arg, !neg, depth + 1);
  }
  if (s == k.boolean_operator) {
    std::string_view op = text(field(c, k.f_operator));
    GuardMask a = classify_rec(field(c, k.f_left), neg, depth + 1);
    GuardMask b = classify_rec(field(c, k.f_right), neg, depth + 1);
    bool conj = (op == "and") != neg;  // De Morgan for the negated branch
    if (conj) return static_cast<GuardMask>((a | b) & ~kNeutral);
    if (a & kNeutral) return static_cast<GuardMask>(b & ~kNeutral);
    if (b & kNeutral) return static_cast<GuardMask>(a & ~kNeutral);
    // `step % log_every == 0 or last_batch`: either side rare makes a rare branch
    constexpr GuardMask rare = kGuardPeriodic | kGuardFinalStep | kGuardMainProcess;
    if ((a & rare) && (b & rare)) return static_cast<GuardMask>(((a | b) & rare) | (a & b));
    return static_cast<GuardMask>(a & b);
  }
  if (s == k.comparison_operator) {
    // operands are the named children; operators are the anonymous ones
    // (two operands have one operator token between them, or two for `not in`
    // and `is not`; a chain such as `a < b < c` has more operands: not classified)
    NodeList operands;
    std::string_view first_op;
    std::string joined;  // the operator tokens joined by spaces, when there are several
    int op_count = 0;
    for (TSNode ch : children(c, false)) {
      if (ts_node_is_named(ch)) {
        operands.push_back(ch);
      } else if (op_count++ == 0) {
        first_op = text(ch);
      } else {
        if (op_count == 2) joined = std::string(first_op);
        joined.append(" ").append(text(ch));
      }
    }
    if (operands.size() != 2 || op_count == 0) return 0;
    const std::string_view op = op_count == 1 ? first_op : std::string_view(joined);
    bool eq = op == "==" || op == "in" || op == "is";
    bool ne = op == "!=" || op == "not in" || op == "is not";
    bool positive = (eq && !neg) || (ne && neg);
    // periodic: a modulo on either side
    auto has_mod = [&](TSNode x) {
      for (int guard = 0; guard < 8 && !node_is_null(x); ++guard) {
        TSSymbol xs = node_symbol(x);
        if (xs == k.parenthesized_expression && ts_node_named_child_count(x) == 1) {
          x = ts_node_named_child(x, 0);
          continue;
        }
        if (xs != k.binary_operator) return false;
        if (text(field(x, k.f_operator)) == "%") {
          return node_symbol(field(x, k.f_left)) != k.string;  // not "%d" % x
        }
        x = field(x, k.f_left);
      }
      return false;
    };
    if (has_mod(operands[0]) || has_mod(operands[1])) {
      // `rank % ngpus_per_node == 0`: the first process of each node, not a step interval
      TSNode m = has_mod(operands[0]) ? operands[0] : operands[1];
      while (node_symbol(m) == k.parenthesized_expression && ts_node_named_child_count(m) == 1)
        m = ts_node_named_child(m, 0);
      if (node_symbol(m) == k.binary_operator && is_rank_value(field(m, k.f_left)))
        return positive ? (kGuardMainProcess | kGuardRankDependent) : kGuardRankDependent;
      return positive ? kGuardPeriodic : 0;
    }
    GuardMask g = 0;
    bool r0 = is_rank_value(operands[0]), r1 = is_rank_value(operands[1]);
    if (r0 || r1) {
      g |= kGuardRankDependent;
      TSNode other = r0 ? operands[1] : operands[0];
      Value v = value_of(other);
      if (v.kind == Value::Kind::Int && v.i == 0 && positive) g |= kGuardMainProcess;
      if (v.kind == Value::Kind::Int && v.i == -1 && positive) return kNeutral;
      TSSymbol os = node_symbol(other);
      if ((os == k.tuple || os == k.list || os == k.set_comprehension || ts_node_named_child_count(other) > 0) &&
          (op == "in") && !neg) {
        bool all_le_zero = ts_node_named_child_count(other) > 0;
        for (TSNode element : children(other)) {
          Value e = value_of(element);
          if (e.kind != Value::Kind::Int || e.i > 0) all_le_zero = false;
        }
        if (all_le_zero) g |= kGuardMainProcess;
      }
      return g;
    }
    if (is_world_size_value(operands[0]) || is_world_size_value(operands[1])) {
      TSNode other = is_world_size_value(operands[0]) ? operands[1] : operands[0];
      Value v = value_of(other);
      if (v.kind == Value::Kind::Int && v.i == 1 && ((op == "==" && !neg) || (op == "<=" && !neg))) return kNeutral;
    }
    // final iteration: `i == len(loader) - 1`, `step == max_steps`, `i + 1 == n`
    if ((op == "==" || op == ">=" || op == ">") && !neg) {
      for (TSNode x : operands) {
        std::string t = lower(text(x));
        if (contains(t, "len(") || contains(t, "- 1") || contains(t, "-1") || contains(t, "last") ||
            contains(t, "final") || contains(t, "max_") || contains(t, "total") || contains(t, "num_steps") ||
            contains(t, "num_iter") || contains(t, "max_iter"))
          return kGuardFinalStep;
      }
    }
    return 0;
  }
  if (s == k.binary_operator && text(field(c, k.f_operator)) == "%") {
    return neg ? kGuardPeriodic : 0;  // `if step % n:` runs on most steps
  }
  if (s == k.call) {
    std::string_view name = last_name(field(c, k.f_function));
    if (is_main_process_name(name)) return neg ? kGuardRankDependent : (kGuardMainProcess | kGuardRankDependent);
    return 0;
  }
  if (s == k.identifier || s == k.attribute) {
    std::string_view name = last_name(c);
    if (is_main_process_name(name)) return neg ? kGuardRankDependent : (kGuardMainProcess | kGuardRankDependent);
    // an opt-in flag that is off unless the user turns it on
    Value flag = value_of(c);
    if (flag.known() && flag.truthy() == neg) return kGuardOffByDefault;
    std::string l = lower(name);
    if (is_rank_value(c)) return neg ? (kGuardMainProcess | kGuardRankDependent) : kGuardRankDependent;
    if (!neg && (contains(l, "last") || contains(l, "final"))) return kGuardFinalStep;
    return 0;
  }
  return 0;
}

GuardMask SemanticModel::enclosing_guards(TSNode node) const {
  GuardMask g = 0;
  for (int r = region_of(node); r > 0; r = regions_[r].parent) {
    const Region& reg = regions_[r];
    if (reg.kind == Region::Kind::Function || reg.kind == Region::Kind::Class) break;
    if (reg.kind == Region::Kind::Branch) g |= reg.guard;
  }
  return g;
}

// --- training loops ----------------------------------------------------------------

bool SemanticModel::training_call(const CallSite& c) const {
  if (c.method == "backward") return true;
  if (c.method != "step" || node_is_null(c.receiver)) return false;
  std::string name = lower(last_name(c.receiver));
  if (contains(name, "sched")) return false;
  if (contains(name, "optim") || name == "opt" || name.rfind("opt_", 0) == 0 || contains(name, "scaler"))
    return true;
  TSNode v = single_assignment(c.receiver);
  if (!node_is_null(v) && node_symbol(v) == kinds().call) {
    const CallSite* ctor = call_at(v);
    if (ctor && ((ctor->canonical.rfind("torch.optim.", 0) == 0 && !contains(ctor->canonical, "lr_scheduler")) ||
                 contains(ctor->canonical, "GradScaler")))
      return true;
  }
  return false;
}

std::vector<int> SemanticModel::resolve_local_function(const CallSite& c) const {
  std::vector<int> out;
  if (node_is_null(c.callee) || c.method.empty()) return out;
  auto it = functions_by_name_.find(c.method);
  if (it == functions_by_name_.end()) return out;
  const Kinds& k = kinds();
  bool plain = node_symbol(c.callee) == k.identifier;
  bool on_self = false;
  if (!plain && node_symbol(c.receiver) == k.identifier) {
    std::string_view r = text(c.receiver);
    on_self = r == "self" || r == "cls";
  }
  if (!plain && !on_self) return out;
  // A name defined several times resolves to one definition: the last one
  // before the call, else the first after it (a call inside a function body
  // runs after the module has defined everything). One target keeps the call
  // graph linear when a file repeats its definitions.
  std::uint32_t at = node_start_byte(c.node);
  int before = -1, after = -1;
  for (int f : it->second) {
    const Region& fr = regions_[functions_[f].region];
    bool is_method = fr.parent >= 0 && regions_[fr.parent].kind == Region::Kind::Class;
    if (is_method != on_self) continue;
    if (node_start_byte(functions_[f].node) < at) before = f;
    else if (after < 0) after = f;
  }
  if (before >= 0) out.push_back(before);
  else if (after >= 0) out.push_back(after);
  return out;
}

int SemanticModel::innermost_loop(int region) const {
  for (int r = region; r >= 0; r = regions_[r].parent) {
    Region::Kind kind = regions_[r].kind;
    if (kind == Region::Kind::Loop) return r;
    if (kind == Region::Kind::Function || kind == Region::Kind::Class || kind == Region::Kind::Module) return -1;
  }
  return -1;
}

namespace {
int function_of(std::span<const Region> regions, int region) {
  int scope = regions[region].scope;
  return regions[scope].kind == Region::Kind::Function ? regions[scope].function : -1;
}
}  // namespace

void SemanticModel::analyse_loops() {
  step_loop_.assign(regions_.size(), 0);
  training_loop_.assign(regions_.size(), 0);
  for (Region& r : regions_) {
    if (r.kind == Region::Kind::Branch) r.guard = classify_condition(r.condition, r.negated);
  }
  std::vector<std::uint8_t> trains_direct(functions_.size(), 0), trains_any(functions_.size(), 0);
  callers_.assign(functions_.size(), {});
  std::vector<std::pair<int, std::vector<int>>> local_calls;  // call index -> callee functions

  // Marks what a training call (or a call of a training function) at `region`
  // implies; returns the enclosing function if its flags changed, else -1.
  auto mark = [&](int region, bool direct) {
    int loop = innermost_loop(region);
    int f = function_of(regions_, region);
    bool changed = false;
    if (direct) {
      if (loop >= 0) {
        step_loop_[loop] = 1;
      } else if (f >= 0 && !trains_direct[f]) {
        trains_direct[f] = 1;
        changed = true;
      }
    }
    for (int r = loop; r >= 0; r = regions_[r].parent) {
      Region::Kind kind = regions_[r].kind;
      if (kind == Region::Kind::Function || kind == Region::Kind::Class) break;
      if (kind != Region::Kind::Loop) continue;
      if (training_loop_[r]) break;  // its enclosing loops are marked already
      training_loop_[r] = 1;
    }
    if (f >= 0 && !trains_any[f]) {
      trains_any[f] = 1;
      changed = true;
    }
    return changed ? f : -1;
  };

  std::vector<int> work;  // functions whose flags changed: their callers need another look
  for (std::size_t i = 0; i < calls_.size(); ++i) {
    const CallSite& c = calls_[i];
    if (training_call(c)) {
      trains_ = true;
      int f = mark(c.region, true);
      if (f >= 0) work.push_back(f);
    }
    auto targets = resolve_local_function(c);
    if (!targets.empty()) {
      for (int t : targets) callers_[t].push_back(static_cast<int>(i));
      local_calls.emplace_back(static_cast<int>(i), std::move(targets));
    }
  }
  std::unordered_map<int, const std::vector<int>*> targets_of;
  for (const auto& [ci, targets] : local_calls) targets_of[ci] = &targets;
  // propagate up the call graph; each function's flags change at most twice
  while (!work.empty()) {
    int g = work.back();
    work.pop_back();
    for (int ci : callers_[g]) {
      bool direct = false, any = false;
      for (int t : *targets_of[ci]) direct |= trains_direct[t] != 0, any |= trains_any[t] != 0;
      if (!any && !direct) continue;
      int f = mark(calls_[ci].region, direct);
      if (f >= 0) work.push_back(f);
    }
  }
}

bool SemanticModel::runs_every_step(TSNode node, GuardMask exempt) const {
  std::vector<int> visiting;
  bool cycle = false;
  return runs_every_step_from(region_of(node), exempt, 0, visiting, cycle);
}

bool SemanticModel::runs_every_step_from(int region, GuardMask exempt, int depth, std::vector<int>& visiting,
                                         bool& cycle) const {
  if (depth > 256) return false;  // call chains deeper than this are not followed
  for (int r = region; r >= 0; r = regions_[r].parent) {
    const Region& reg = regions_[r];
    switch (reg.kind) {
      case Region::Kind::Branch:
        if (reg.guard & exempt) return false;
        break;
      case Region::Kind::Loop:
        if (step_loop_[r]) return true;
        if (training_loop_[r]) return false;  // an epoch loop: runs once per epoch
        break;
      case Region::Kind::Function: {
        // memoised per (function, exempt): each function's call sites are
        // examined once per query kind, however the call graph branches
        std::uint64_t key = (static_cast<std::uint64_t>(reg.function) << 8) | exempt;
        if (auto m = step_memo_.find(key); m != step_memo_.end()) return m->second;
        if (std::find(visiting.begin(), visiting.end(), reg.function) != visiting.end()) {
          cycle = true;  // answers that met this cycle are provisional
          return false;
        }
        visiting.push_back(reg.function);
        bool any = false, saw_cycle = false;
        for (int ci : callers_[reg.function]) {
          bool inner_cycle = false;
          if (runs_every_step_from(calls_[ci].region, exempt, depth + 1, visiting, inner_cycle)) {
            any = true;
            break;
          }
          saw_cycle |= inner_cycle;
        }
        visiting.pop_back();
        if (any || !saw_cycle) step_memo_[key] = any;
        cycle |= saw_cycle && !any;
        return any;
      }
      case Region::Kind::Class:
      case Region::Kind::Module:
        return false;
      case Region::Kind::With:
        break;
    }
  }
  return false;
}

bool SemanticModel::in_training_loop(TSNode node) const {
  std::vector<int> visiting;
  std::unordered_map<int, bool> memo;
  std::function<bool(int, int)> rec = [&](int region, int depth) -> bool {
    if (depth > kMaxDepth) return false;
    for (int r = region; r >= 0; r = regions_[r].parent) {
      const Region& reg = regions_[r];
      if (reg.kind == Region::Kind::Loop && training_loop_[r]) return true;
      if (reg.kind == Region::Kind::Class || reg.kind == Region::Kind::Module) return false;
      if (reg.kind == Region::Kind::Function) {
        if (auto m = memo.find(reg.function); m != memo.end()) return m->second;
        if (std::find(visiting.begin(), visiting.end(), reg.function) != visiting.end()) return false;
        visiting.push_back(reg.function);
        bool any = false;
        for (int ci : callers_[reg.function]) any = any || rec(calls_[ci].region, depth + 1);
        visiting.pop_back();
        memo[reg.function] = any;  // linear in the call graph (a cycle may answer false early)
        return any;
      }
    }
    return false;
  };
  return rec(region_of(node), 0);
}

}  // namespace ddplint
