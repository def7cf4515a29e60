// DDP002 unused-noqa: a `# noqa` code of ddplint's that silences nothing (Ruff's RUF100).
#include <string>

#include "linter/suppressions.hpp"
#include "rules/common.hpp"

namespace ddplint::rules {

namespace {
// The edit that drops `removed` codes of `use` from the file's `text`, or
// std::nullopt when no edit is safe: removing every code of a directive that
// comment text follows (`# noqa: DDP401 - reason`) would leave `# noqa: -
// reason`, a blanket directive.
std::optional<Edit> removal(const NoqaUse& use, const std::vector<bool>& removed, std::string_view text) {
  std::string kept;
  for (std::size_t k = 0; k < use.codes.size(); ++k) {
    if (removed[k]) continue;
    if (!kept.empty()) kept += ", ";
    kept += text.substr(use.codes[k].start, use.codes[k].end - use.codes[k].start);
  }
  std::uint32_t first = use.codes.front().start, last = use.codes.back().end;
  if (!kept.empty()) return Edit{first, last, kept};
  // the whole directive goes
  for (std::uint32_t i = last; i < use.comment_end; ++i)
    if (text[i] != ' ' && text[i] != '\t') return std::nullopt;
  std::uint32_t from = use.directive_start;
  while (from > 0 && (text[from - 1] == ' ' || text[from - 1] == '\t')) --from;
  std::uint32_t to = use.comment_end;
  if (from == 0 || text[from - 1] == '\n') {
    // a comment alone on its line: the line goes with it
    if (to < text.size() && text[to] == '\r') ++to;
    if (to < text.size() && text[to] == '\n') ++to;
  }
  return Edit{from, to, ""};
}

void check(const NoqaReport& noqa, RuleContext& ctx) {
  for (const NoqaUse& use : noqa.uses) {
    if (use.blanket || use.codes.empty()) continue;  // a blanket `# noqa` may be another tool's
    std::vector<bool> removed(use.codes.size());
    std::string unused, unknown;
    for (std::size_t k = 0; k < use.codes.size(); ++k) {
      const NoqaUse::Code& c = use.codes[k];
      if (c.used || c.code.rfind("DDP", 0) != 0) continue;  // another tool's code is left alone
      const Rule* rule = nullptr;
      std::size_t index = 0;
      for (std::size_t i = 0; i < noqa.rules.size(); ++i)
        if (noqa.rules[i].info.code == c.code) {
          rule = &noqa.rules[i];
          index = i;
        }
      if (rule != nullptr && !noqa.ran[index]) continue;  // not run here: unused or not, unknown
      std::string& list = rule != nullptr ? unused : unknown;
      if (!list.empty()) list += ", ";
      list += c.code;
      removed[k] = true;
    }
    if (unused.empty() && unknown.empty()) continue;
    std::string what;
    if (!unused.empty()) what += "unused: " + unused;
    if (!unknown.empty()) what += std::string(what.empty() ? "" : "; ") + "unknown: " + unknown;
    std::optional<Fix> fix;
    if (std::optional<Edit> edit = removal(use, removed, noqa.text))
      fix = Fix{Fix::Applicability::Safe, "Remove the unused codes", {std::move(*edit)}};
    ctx.report(use.directive_start, use.codes.back().end,
               std::string(use.file_level ? "file-level `ddplint: noqa`" : "`noqa`") + " directive that silences nothing (" +
                   what + ")",
               std::move(fix));
  }
}
}  // namespace

// needs: only a `noqa` comment can be unused
extern const Rule kRuleDDP002{
    .info = {.code = "DDP002", .name = "unused-noqa", .severity = Severity::Info,
             .summary = "A `# noqa` code of ddplint's that silences no finding",
             .url = "https://docs.astral.sh/ruff/rules/unused-noqa/", .fixable = true, .opt_in = true, .needs = "noqa"},
    .check_noqa = &check};

}  // namespace ddplint::rules
