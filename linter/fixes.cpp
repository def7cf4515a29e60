#include "linter/fixes.hpp"

#include <tuple>

#include <set>

#include <map>

#include <algorithm>
#include <dtl/dtl.hpp>

#include "linter/notebook.hpp"

namespace ddplint {

std::vector<Edit> applicable_edits(std::span<const Diagnostic> diagnostics, bool include_unsafe) {
  std::vector<const Fix*> fixes;
  for (const Diagnostic& d : diagnostics) {
    if (!d.fix || d.fix->edits.empty()) continue;
    if (d.fix->applicability == Fix::Applicability::Unsafe && !include_unsafe) continue;
    fixes.push_back(&*d.fix);
  }
  auto first = [](const Fix* f) {
    std::uint32_t m = f->edits.front().start;
    for (const Edit& e : f->edits) m = std::min(m, e.start);
    return m;
  };
  std::stable_sort(fixes.begin(), fixes.end(), [&](const Fix* a, const Fix* b) { return first(a) < first(b); });
  std::vector<Edit> taken;
  // the ranges taken, start -> end: disjoint and never touching, so the only
  // one that can meet an edit is the last starting at or before its end
  // (O(log n) per edit; a scan of all taken edits was quadratic: 300,000
  // fixes took minutes; found by hostile testing)
  std::map<std::uint32_t, std::uint32_t> ranges;
  auto meets_taken = [&](const Edit& e) {
    auto it = ranges.upper_bound(e.end);
    if (it == ranges.begin()) return false;
    --it;
    // overlapping or touching ranges (an insertion at the other's boundary included)
    return e.start <= it->second && it->first <= e.end;
  };
  for (const Fix* fix : fixes) {
    std::vector<Edit> mine = fix->edits;
    std::sort(mine.begin(), mine.end(), [](const Edit& a, const Edit& b) { return a.start < b.start; });
    bool clash = false;
    for (std::size_t i = 1; i < mine.size(); ++i) clash |= mine[i].start < mine[i - 1].end;
    for (const Edit& e : mine) clash = clash || meets_taken(e);
    if (clash) continue;
    for (const Edit& e : mine) ranges[e.start] = std::max(ranges[e.start], e.end);
    taken.insert(taken.end(), mine.begin(), mine.end());
  }
  std::sort(taken.begin(), taken.end(), [](const Edit& a, const Edit& b) { return a.start < b.start; });
  return taken;
}

std::string apply_edits(std::string_view text, std::span<const Edit> edits) {
  std::string out;
  out.reserve(text.size() + 64);
  std::uint32_t at = 0;
  for (const Edit& e : edits) {
    if (e.start < at || e.end < e.start || e.end > text.size()) continue;  // not sorted or out of range: skipped
    out.append(text.substr(at, e.start - at));
    out.append(e.replacement);
    at = e.end;
  }
  out.append(text.substr(std::min<std::size_t>(at, text.size())));
  return out;
}

FixOutcome fix_source(SourceFile source, std::span<const Rule> rules, const RuleSelection& selection,
                      bool include_unsafe, const RuleOptions& options, const ProjectFacts* project,
                      const RuleSelection* fixable) {
  FixOutcome out{std::move(source), {}, {}, 0, false};
  // the findings of rules whose fixes may not apply lose their fix
  auto relint = [&] {
    out.remaining = lint(out.source, rules, selection, options, true, project);
    if (fixable != nullptr)
      for (Diagnostic& d : out.remaining.diagnostics)
        if (d.fix && !fixable->enabled(d.rule->code)) d.fix.reset();
  };
  relint();
  for (int pass = 0; pass < kMaxFixPasses; ++pass) {
    if (!out.remaining.error.empty()) break;
    bool syntax_error = std::any_of(out.remaining.diagnostics.begin(), out.remaining.diagnostics.end(),
                                    [](const Diagnostic& d) { return d.rule->code == "DDP001"; });
    if (syntax_error) break;  // a file that does not parse gets no fixes
    std::shared_ptr<const NotebookIndex> cells = out.source.notebook();
    if (cells) {
      // a notebook: a fix that would cross cells or touch an IPython line is not applied
      for (Diagnostic& d : out.remaining.diagnostics)
        if (d.fix && !std::all_of(d.fix->edits.begin(), d.fix->edits.end(),
                                  [&](const Edit& e) { return cells->editable(e); }))
          d.fix.reset();
    }
    // a noqa rule's fixes (DDP002) judge the file's final state: they wait until no other
    // fix applies, since another fix can make a finding that a noqa it would remove then
    // silences (DDP102's pin_memory=True makes the DDP107 that a `# noqa: DDP107` is for)
    std::vector<Diagnostic> others;
    bool noqa_fixes = false;
    for (const Diagnostic& d : out.remaining.diagnostics) {
      bool noqa_rule = std::any_of(rules.begin(), rules.end(),
                                   [&](const Rule& r) { return &r.info == d.rule && r.check_noqa != nullptr; });
      if (noqa_rule) noqa_fixes = noqa_fixes || d.fix.has_value();
      else others.push_back(d);
    }
    std::vector<Edit> edits = applicable_edits(others, include_unsafe);
    if (edits.empty() && noqa_fixes) edits = applicable_edits(out.remaining.diagnostics, include_unsafe);
    if (edits.empty()) break;
    // count the findings whose fix went in: their edits are all among `edits`
    std::set<std::tuple<std::uint32_t, std::uint32_t, std::string_view>> applied;
    for (const Edit& t : edits) applied.emplace(t.start, t.end, t.replacement);
    for (const Diagnostic& d : out.remaining.diagnostics) {
      if (!d.fix || d.fix->edits.empty()) continue;
      bool all_in = std::all_of(d.fix->edits.begin(), d.fix->edits.end(), [&](const Edit& e) {
        return applied.count({e.start, e.end, std::string_view(e.replacement)}) > 0;
      });
      if (!all_in) continue;
      ++out.fixed[d.rule->code];
      ++out.fixed_total;
    }
    std::string text = apply_edits(out.source.text(), edits);
    if (text == out.source.text()) break;
    out.source = SourceFile(out.source.path(), std::move(text));
    if (cells) out.source.set_notebook(std::make_shared<const NotebookIndex>(cells->after(edits)));
    out.changed = true;
    relint();
  }
  return out;
}

namespace {
// Lines of `text`, each with its line terminator (so a missing final newline is kept).
std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') {
      lines.emplace_back(text.substr(start, i + 1 - start));
      start = i + 1;
    }
  }
  if (start < text.size()) lines.emplace_back(text.substr(start));
  return lines;
}
}  // namespace

std::string unified_diff(std::string_view before, std::string_view after, const std::string& path) {
  if (before == after) return "";
  std::vector<std::string> a = split_lines(before), b = split_lines(after);
  dtl::Diff<std::string, std::vector<std::string>> diff(a, b);
  diff.onHuge();
  diff.compose();
  diff.composeUnifiedHunks();
  // each line keeps its own terminator; a last line without one is marked as diff does
  std::string out = "--- a/" + path + "\n+++ b/" + path + "\n";
  for (const auto& hunk : diff.getUniHunks()) {
    out += "@@ -" + std::to_string(hunk.a) + "," + std::to_string(hunk.b) + " +" + std::to_string(hunk.c) + "," +
           std::to_string(hunk.d) + " @@\n";
    auto emit = [&](const auto& elems) {
      for (const auto& e : elems) {
        char mark = e.second.type == dtl::SES_ADD ? '+' : e.second.type == dtl::SES_DELETE ? '-' : ' ';
        out += mark;
        out += e.first;
        if (e.first.empty() || e.first.back() != '\n') out += "\n\\ No newline at end of file\n";
      }
    };
    emit(hunk.common[0]);
    emit(hunk.change);
    emit(hunk.common[1]);
  }
  return out;
}

}  // namespace ddplint
