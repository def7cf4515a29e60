// Names and what they stand for: dotted paths, canonical (import-resolved) names,
// calls and their arguments, the region of a node, and the bindings of a name.
#include "linter/model/internal.hpp"
#include "linter/node_access.hpp"

#include <algorithm>
#include <array>
#include <climits>
#include <cstring>

namespace ddplint {

using namespace model_detail;

namespace {

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

int SemanticModel::class_region(TSNode class_definition) const {
  if (node_is_null(class_definition)) return -1;
  int r = region_of(field(class_definition, kinds().f_body));
  while (r > 0 && !(regions_[r].kind == Region::Kind::Class && node_eq(regions_[r].node, class_definition)))
    r = regions_[r].parent;
  return r > 0 ? r : -1;
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

bool SemanticModel::mentions_in_code(std::string_view word) const {
  if (word.empty()) return false;
  const Kinds& k = kinds();
  std::string_view all = source_.text();
  TSNode root = regions_[0].node;
  for (std::size_t at = all.find(word); at != std::string_view::npos; at = all.find(word, at + 1)) {
    TSNode n = ts_node_descendant_for_byte_range(root, static_cast<std::uint32_t>(at),
                                                 static_cast<std::uint32_t>(at + word.size()));
    bool prose = false;
    for (TSNode p = n; !node_is_null(p); p = ts_node_parent(p)) {
      TSSymbol s = node_symbol(p);
      if (s == k.comment) {
        prose = true;
        break;
      }
      if (s == k.string) {
        TSNode parent = ts_node_parent(p);
        prose = !node_is_null(parent) && node_symbol(parent) == k.expression_statement &&
                ts_node_named_child_count(parent) == 1;
        break;
      }
    }
    if (!prose) return true;
  }
  return false;
}

}  // namespace ddplint
