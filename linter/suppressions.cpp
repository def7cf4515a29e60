#include "linter/suppressions.hpp"

#include <algorithm>
#include <cctype>

#include "linter/semantic_model.hpp"

namespace ddplint {

namespace {
bool iequal_prefix(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  return true;
}
void skip_space(std::string_view& s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
}
}  // namespace

bool parse_noqa(std::string_view comment, bool file_level, Suppressions::Entry& entry) {
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
    if (s.empty() || s.front() != ':') {
      entry.all = true;
      return true;
    }
    s.remove_prefix(1);
    std::vector<std::string> codes;
    for (;;) {
      skip_space(s);
      std::size_t n = 0;
      while (n < s.size() && std::isalnum(static_cast<unsigned char>(s[n]))) ++n;
      if (n == 0) break;
      codes.emplace_back(s.substr(0, n));
      s.remove_prefix(n);
      skip_space(s);
      if (!s.empty() && s.front() == ',') s.remove_prefix(1);
    }
    if (codes.empty()) {
      entry.all = true;  // `# noqa:` with nothing after it: Ruff treats it as blanket
    } else {
      entry.codes.insert(entry.codes.end(), codes.begin(), codes.end());
    }
    return true;
  }
  return false;
}

Suppressions Suppressions::collect(const SemanticModel& model) {
  Suppressions out;
  const LineIndex& lines = model.source().lines();
  for (TSNode c : model.comments()) {
    std::string_view text = model.text(c);
    std::uint32_t start = ts_node_start_byte(c);
    if (start < model.header_end()) {
      Entry file;
      if (parse_noqa(text, true, file)) {
        out.file.all |= file.all;
        out.file.codes.insert(out.file.codes.end(), file.codes.begin(), file.codes.end());
        continue;
      }
    }
    Entry line;
    if (parse_noqa(text, false, line)) {
      Entry& e = out.lines[lines.line_of(start)];
      e.all |= line.all;
      e.codes.insert(e.codes.end(), line.codes.begin(), line.codes.end());
    }
  }
  return out;
}

bool Suppressions::suppresses(const Diagnostic& d, std::uint32_t line) const {
  auto has = [&](const Entry& e) {
    return e.all || std::find(e.codes.begin(), e.codes.end(), d.rule->code) != e.codes.end();
  };
  if (has(file)) return true;
  auto it = lines.find(line);
  return it != lines.end() && has(it->second);
}

}  // namespace ddplint
