#include "linter/suppressions.hpp"

#include "linter/launch_model.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "linter/semantic_model.hpp"

namespace ddplint {

namespace {
bool iequal_prefix(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  return true;
}
std::string upper_code(std::string_view code);
void skip_space(std::string_view& s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
}
}  // namespace

std::optional<NoqaDirective> find_noqa(std::string_view comment, bool file_level) {
  // A directive may follow other comment text: `# type: ignore  # noqa: DDP101`.
  for (std::size_t hash = comment.find('#'); hash != std::string_view::npos; hash = comment.find('#', hash + 1)) {
    std::string_view s = comment.substr(hash + 1);
    skip_space(s);
    if (file_level) {
      if (!iequal_prefix(s, "ddplint:")) continue;
      s.remove_prefix(8);
      skip_space(s);
    }
    if (!iequal_prefix(s, "noqa")) continue;
    s.remove_prefix(4);
    // `# noqa` must end there or continue with `:` (then codes); `# noqa-ish` is not a directive
    if (!s.empty() && (std::isalnum(static_cast<unsigned char>(s.front())) || s.front() == '_' || s.front() == '-'))
      continue;
    skip_space(s);
    NoqaDirective out;
    out.hash = static_cast<std::uint32_t>(hash);
    if (s.empty() || s.front() != ':') {
      out.blanket = true;
      return out;
    }
    s.remove_prefix(1);
    skip_space(s);
    out.codes_start = static_cast<std::uint32_t>(s.data() - comment.data());
    for (;;) {
      skip_space(s);
      // a code is letters then digits (Ruff's lex_code: `F401`; here in any case); the list
      // ends at the first word that is not one, so `# noqa: DDP101 loader is tiny` holds one code
      std::size_t letters = 0;
      while (letters < s.size() && std::isalpha(static_cast<unsigned char>(s[letters]))) ++letters;
      std::size_t n = letters;
      while (n < s.size() && std::isdigit(static_cast<unsigned char>(s[n]))) ++n;
      if (letters == 0 || n == letters || (n < s.size() && (std::isalnum(static_cast<unsigned char>(s[n])) || s[n] == '_' || s[n] == '-')))
        break;
      auto at = static_cast<std::uint32_t>(s.data() - comment.data());
      out.codes.push_back({s.substr(0, n), at, at + static_cast<std::uint32_t>(n)});
      s.remove_prefix(n);
      skip_space(s);
      if (!s.empty() && s.front() == ',') s.remove_prefix(1);
    }
    // `# noqa:` with nothing after it: Ruff treats it as blanket; `# noqa: not-a-code`
    // is a directive that silences nothing (Ruff warns of it as invalid)
    out.blanket = out.codes.empty() && (s.empty() || s.front() == '#');
    return out;
  }
  return std::nullopt;
}

bool parse_noqa(std::string_view comment, bool file_level, Suppressions::Entry& entry) {
  std::optional<NoqaDirective> d = find_noqa(comment, file_level);
  if (!d) return false;
  if (d->blanket) entry.all = true;
  for (const NoqaDirective::Code& c : d->codes) entry.codes.push_back(upper_code(c.code));
  return true;
}

TSNode comment_at(const SyntaxTree& tree, std::uint32_t offset) {
  if (!tree) return TSNode{};
  TSNode n = ts_node_descendant_for_byte_range(tree.root(), offset, offset);
  TSSymbol comment = kinds().comment;
  // a comment is a leaf; a zero-width lookup at its end lands on what follows
  for (; !ts_node_is_null(n); n = ts_node_parent(n)) {
    if (ts_node_symbol(n) == comment && ts_node_start_byte(n) <= offset && offset <= ts_node_end_byte(n)) return n;
  }
  return TSNode{};
}

namespace {
bool shell_string_kind(std::string_view t) {
  return t == "string" || t == "raw_string" || t == "string_content" || t == "ansi_c_string" ||
         t == "heredoc_body" || t == "heredoc_content" || t == "heredoc_redirect";
}
}  // namespace

std::uint32_t comment_line(const SourceFile& source, const SyntaxTree& tree, std::uint32_t line) {
  const LineIndex& lines = source.lines();
  if (!tree || line >= lines.line_count()) return line;
  std::string_view text = source.text();
  const bool shell = language_of(tree) == Language::Shell;
  const Kinds& k = kinds();
  for (int guard = 0; guard < 100000 && line + 1 < lines.line_count(); ++guard) {
    std::uint32_t begin = lines.line_start(line), end = lines.line_end(line);
    while (end > begin && (text[end - 1] == ' ' || text[end - 1] == '\t' || text[end - 1] == '\f')) --end;
    if (end <= begin) return line;
    std::uint32_t next = line;
    for (TSNode n = ts_node_descendant_for_byte_range(tree.root(), end - 1, end); !ts_node_is_null(n);
         n = ts_node_parent(n)) {
      bool comment = shell ? std::string_view(ts_node_type(n)) == "comment" : ts_node_symbol(n) == k.comment;
      if (comment) return line;
      bool string = shell ? shell_string_kind(ts_node_type(n)) : (ts_node_symbol(n) == k.string || ts_node_symbol(n) == k.string_content);
      if (string && ts_node_end_byte(n) > end) {
        next = lines.line_of(ts_node_end_byte(n) - 1);  // where the string ends
        break;
      }
    }
    if (next == line && text[end - 1] == '\\') next = line + 1;  // a `\` continuation
    if (next <= line) return line;
    line = next;
  }
  return line;
}

namespace {
// The edit that adds `codes` (none of them listed yet, in order) to the noqa comment of `line`.
std::optional<Edit> noqa_codes_edit(const SourceFile& source, const SyntaxTree& tree, std::uint32_t line,
                                    const std::vector<std::string_view>& codes);
}  // namespace

std::optional<Edit> noqa_edit(const SourceFile& source, const SyntaxTree& tree, std::uint32_t line,
                              std::string_view code) {
  return noqa_codes_edit(source, tree, line, {code});
}

namespace {
std::optional<Edit> noqa_codes_edit(const SourceFile& source, const SyntaxTree& tree, std::uint32_t line,
                                    const std::vector<std::string_view>& wanted) {
  const LineIndex& lines = source.lines();
  if (!tree || line >= lines.line_count()) return std::nullopt;
  std::string_view text = source.text();
  std::uint32_t begin = std::max(lines.line_start(line), line == 0 ? source.bom_length() : 0u);
  std::uint32_t end = lines.line_end(line);
  while (end > begin && (text[end - 1] == ' ' || text[end - 1] == '\t' || text[end - 1] == '\f')) --end;
  if (end <= begin) return std::nullopt;
  std::string list;
  for (std::string_view code : wanted) list += (list.empty() ? "" : ", ") + std::string(code);
  if (list.empty()) return std::nullopt;
  const std::string suffix = "  # noqa: " + list;
  // what covers the line's last byte: a comment, or a string running on past the line
  // (a launch script's tree is tree-sitter-bash's: its kinds by name; a heredoc is a string too)
  const bool shell = language_of(tree) == Language::Shell;
  const Kinds& k = kinds();
  auto is_comment = [&](TSNode n) {
    return shell ? std::string_view(ts_node_type(n)) == "comment" : ts_node_symbol(n) == k.comment;
  };
  auto is_string = [&](TSNode n) {
    if (!shell) return ts_node_symbol(n) == k.string || ts_node_symbol(n) == k.string_content;
    std::string_view t = ts_node_type(n);
    return t == "string" || t == "raw_string" || t == "string_content" || t == "ansi_c_string" ||
           t == "heredoc_body" || t == "heredoc_content" || t == "heredoc_redirect";
  };
  for (TSNode n = ts_node_descendant_for_byte_range(tree.root(), end - 1, end); !ts_node_is_null(n);
       n = ts_node_parent(n)) {
    if (is_comment(n)) {
      std::string_view comment = node_text(n, text);
      auto at = ts_node_start_byte(n);
      if (std::optional<NoqaDirective> d = find_noqa(comment, false)) {
        if (d->blanket) return std::nullopt;
        std::string missing;
        for (std::string_view code : wanted) {
          bool listed = false;
          for (const NoqaDirective::Code& c : d->codes) listed |= upper_code(c.code) == code;
          if (!listed) missing += (missing.empty() ? "" : ", ") + std::string(code);
        }
        if (missing.empty()) return std::nullopt;
        if (d->codes.empty()) {
          // `# noqa: reason` lists no code: the codes go first, the words stay after them
          std::uint32_t first = at + d->codes_start;
          return Edit{first, first, missing + " "};
        }
        std::uint32_t after = at + d->codes.back().end;
        return Edit{after, after, ", " + missing};
      }
      return Edit{end, end, suffix};
    }
    if (is_string(n) && ts_node_end_byte(n) > end) return std::nullopt;
  }
  if (text[end - 1] == '\\') return std::nullopt;
  return Edit{end, end, suffix};
}
}  // namespace

std::vector<Edit> add_noqa_edits(const SourceFile& source, const std::vector<Diagnostic>& diagnostics) {
  std::vector<Edit> edits;
  if (diagnostics.empty()) return edits;
  Language language = language_of(source.path(), source.text());
  SyntaxTree tree = parse_source(source, language);
  // a Python file that does not parse: a comment could land inside an unclosed
  // string and silence the syntax error itself (found by hostile testing)
  if (!tree || (language == Language::Python && ts_node_has_error(tree.root()))) return edits;
  // each finding's comment goes where a comment can go: the line where its
  // string or `\` continuation ends (which suppression reads too)
  std::map<std::uint32_t, std::set<std::string_view>> codes_by_line;
  for (const Diagnostic& d : diagnostics)
    codes_by_line[comment_line(source, tree, source.lines().line_of(d.start))].insert(d.rule->code);
  for (const auto& [line, codes] : codes_by_line)
    if (std::optional<Edit> edit = noqa_codes_edit(source, tree, line, {codes.begin(), codes.end()}))
      edits.push_back(std::move(*edit));
  return edits;
}

namespace {
std::string upper_code(std::string_view code) {
  std::string out(code);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}
}  // namespace

// Adds the directive of one comment: file-wide (`# ddplint: noqa`, anywhere in
// the file, as Ruff's `# ruff: noqa`), else for its line.
struct SuppressionsBuilder {
  static void add_comment(Suppressions& out, std::string_view text, std::uint32_t start, const LineIndex& lines) {
    // a comment may hold both (`# ddplint: noqa: DDP102  # noqa: DDP101`, as --add-noqa extends it)
    for (bool file_level : {true, false})
      if (std::optional<NoqaDirective> d = find_noqa(text, file_level)) add_directive(out, *d, file_level, text, start, lines);
  }

  static void add_directive(Suppressions& out, const NoqaDirective& directive, bool file_level, std::string_view text,
                            std::uint32_t start, const LineIndex& lines) {
    const NoqaDirective* d = &directive;
    NoqaUse use;
    use.comment_start = start;
    use.comment_end = start + static_cast<std::uint32_t>(text.size());
    use.file_level = file_level;
    use.blanket = d->blanket;
    use.directive_start = start + d->hash;
    for (const NoqaDirective::Code& c : d->codes) use.codes.push_back({upper_code(c.code), start + c.start, start + c.end});
    Suppressions::Entry& e = file_level ? out.file : out.lines[lines.line_of(start)];
    e.all |= use.blanket;
    for (const NoqaUse::Code& c : use.codes) e.codes.push_back(c.code);
    (file_level ? out.file_uses_ : out.uses_by_line_[lines.line_of(start)]).push_back(out.uses.size());
    out.uses.push_back(std::move(use));
  }
};

Suppressions Suppressions::collect(const SemanticModel& model) {
  Suppressions out;
  const LineIndex& lines = model.source().lines();
  for (TSNode c : model.comments()) SuppressionsBuilder::add_comment(out, model.text(c), ts_node_start_byte(c), lines);
  return out;
}

Suppressions Suppressions::collect(const LaunchModel& model) {
  Suppressions out;
  const LineIndex& lines = model.source().lines();
  for (auto [start, end] : model.comments()) SuppressionsBuilder::add_comment(out, model.text(start, end), start, lines);
  return out;
}

bool Suppressions::suppresses(const Diagnostic& d, std::uint32_t line) {
  // the directive that silences it: its own line's first, then the file's
  auto silence = [&](const std::vector<std::size_t>& indices) {
    for (std::size_t i : indices) {
      NoqaUse& use = uses[i];
      if (use.blanket) {
        use.used = true;
        return true;
      }
      for (NoqaUse::Code& c : use.codes)
        if (c.code == d.rule->code) {
          c.used = use.used = true;
          return true;
        }
    }
    return false;
  };
  if (auto it = uses_by_line_.find(line); it != uses_by_line_.end() && silence(it->second)) return true;
  return silence(file_uses_);
}

}  // namespace ddplint
