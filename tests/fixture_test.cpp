// Closed-world fixture test. Every Python file, launch script (*.sh,
// *.slurm, ...), Jupyter notebook and Markdown file (but the folders' README.md) under fixtures/ and examples/
// is linted; each finding must be marked on the line where it starts with
// `# expect: CODE[, CODE...]` (in a notebook, on the cell's line: the marks
// are read from its virtual source), and each mark must be found. Marks
// count: two findings of one rule on one line need the code marked twice. A
// finding reported at a severity other than its rule's (a per-finding severity,
// Diagnostic::severity_override) is marked with it: `# expect: DDP503@info`;
// an unmarked one must be at the rule's severity. A first-line
// directive `# fixture-select: CODES` restricts the rules run on that file.
// Opt-in rules (RuleInfo::opt_in) run on the files that name them: those of
// their own folder (fixtures/DDP603/) and those with a mark of their code, so
// their clean look-alikes are checked too; elsewhere the default selection.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "linter/config.hpp"
#include "linter/fixes.hpp"
#include "linter/lint.hpp"
#include "linter/notebook.hpp"
#include "linter/project.hpp"
#include "rules/registry.hpp"

using namespace ddplint;
namespace fs = std::filesystem;

namespace {

using Finding = std::pair<std::uint32_t, std::string>;  // 1-based row, code

std::vector<std::string> codes_after(std::string_view line, std::string_view marker) {
  auto at = line.find(marker);
  if (at == std::string_view::npos) return {};
  std::string_view rest = line.substr(at + marker.size());
  auto hash = rest.find('#');  // a further comment (e.g. a noqa) ends the list
  return split_codes(rest.substr(0, hash));
}

std::vector<fs::path> python_files(const fs::path& root) {
  std::vector<fs::path> out;
  if (!fs::is_directory(root)) return out;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file() && (e.path().extension() == ".py" || has_shell_extension(e.path().filename().string()) ||
                                has_notebook_extension(e.path().filename().string()) ||
                                (has_markdown_extension(e.path().filename().string()) &&
                                 e.path().filename() != "README.md")))
      out.push_back(e.path());  // Python scripts, launch scripts, Markdown with shell blocks (not the folders' READMEs)
  std::sort(out.begin(), out.end());
  return out;
}

// The project facts of a fixture (fixtures/ is one project, each folder of
// fixtures/projects/ another: they carry their own pyproject.toml), as the CLI computes them.
// A launch script's facts are those of the Python scripts it starts.
const ProjectFacts* facts_of(const fs::path& path) {
  if (has_notebook_extension(path.filename().string())) return nullptr;  // as the CLI: no project facts
  static ProjectSet projects;
  static std::vector<std::shared_ptr<const Project>> kept;  // the facts stay valid for the whole test
  auto project = projects.project_of(path);
  if (!project) return nullptr;
  if (std::find(kept.begin(), kept.end(), project) == kept.end()) kept.push_back(project);
  fs::path absolute = fs::absolute(path).lexically_normal();
  if (language_of(path.string(), "") == Language::Shell) {
    std::string error;
    auto bytes = read_file(path.string(), error);
    return bytes ? project->launch_facts_for(absolute, *bytes) : nullptr;
  }
  return project->facts_for(absolute);
}

// The rule options the CLI lints `path` with, where a fixture needs them: the
// torch releases its project declares (fixtures/projects/torch_*).
RuleOptions options_of(const fs::path& path) {
  static ConfigResolver resolver(rules::all());
  RuleOptions options;
  if (auto torch = resolver.torch_declared_for(path)) options.torch = *torch;
  return options;
}

// The source the CLI lints for `path`: its bytes, or a notebook's virtual
// source with its index; std::nullopt and `error` set when it cannot be read.
std::optional<SourceFile> source_of(const fs::path& path, std::string& error) {
  auto bytes = read_file(path.string(), error);
  if (!bytes) return std::nullopt;
  if (!has_notebook_extension(path.filename().string())) return SourceFile(path.string(), std::move(*bytes));
  std::optional<Notebook> nb = Notebook::parse(*bytes, error);
  if (!nb) return std::nullopt;
  SourceFile source(path.string(), nb->source());
  source.set_notebook(nb->index());
  return source;
}

std::string check_file(const fs::path& path) {
  std::string error;
  std::optional<SourceFile> read = source_of(path, error);
  if (!read) return "cannot read: " + error;
  std::string text(read->text());  // the marks: a notebook's on its cells' lines
  std::map<Finding, int> expected;  // each mark, with how many times it is written
  std::map<Finding, std::string> marked_severity;  // `CODE@info`: the severity it is reported at
  std::vector<std::string> select;
  std::istringstream in(text);
  std::string line;
  for (std::uint32_t row = 1; std::getline(in, line); ++row) {
    if (row <= 3 && line.find("# fixture-select:") != std::string::npos) select = codes_after(line, "# fixture-select:");
    for (auto& mark : codes_after(line, "# expect:")) {
      std::string code = mark.substr(0, mark.find('@'));
      if (code.size() < mark.size()) marked_severity[Finding{row, code}] = mark.substr(code.size() + 1);
      ++expected[Finding{row, code}];
    }
  }
  std::vector<std::string> named;  // the codes this file is about: its folder's and its marks'
  named.push_back(path.parent_path().filename().string());
  for (const auto& [f, n] : expected) named.push_back(f.second);
  std::vector<std::string> opt_in;
  for (const Rule& r : rules::all())
    if (r.info.opt_in && std::find(named.begin(), named.end(), r.info.code) != named.end())
      opt_in.emplace_back(r.info.code);
  RuleSelection selection(select, {});
  if (!opt_in.empty()) selection.add_layer({}, opt_in, {});
  SourceFile& source = *read;
  LintResult result = lint(source, rules::all(), selection, options_of(path), true, facts_of(path));
  if (!result.error.empty()) return "not linted: " + result.error;
  std::map<Finding, int> actual;
  std::map<Finding, std::string> messages;
  std::ostringstream diff;
  for (const Diagnostic& d : result.diagnostics) {
    Finding f{source.lines().position(d.start).row, std::string(d.rule->code)};
    ++actual[f];
    messages[f] = d.message;
    std::string want = marked_severity.contains(f) ? marked_severity.at(f) : std::string(to_string(d.rule->severity));
    std::string got(to_string(d.severity()));
    if (expected.contains(f) && got != want)
      diff << "  " << path.string() << ":" << f.first << ": " << f.second << " reported at " << got << ", marked "
           << want << "\n";
  }
  for (const auto& [f, n] : expected) {
    int got = actual.contains(f) ? actual.at(f) : 0;
    if (got < n) diff << "  " << path.string() << ":" << f.first << ": missing " << f.second << (got > 0 ? " (found " + std::to_string(got) + " of " + std::to_string(n) + ")" : "") << "\n";
  }
  for (const auto& [f, n] : actual) {
    int want = expected.contains(f) ? expected.at(f) : 0;
    if (n > want)
      diff << "  " << path.string() << ":" << f.first << ": unexpected " << f.second
           << (want > 0 ? " (" + std::to_string(n) + " on the line, " + std::to_string(want) + " marked)" : "") << " ("
           << messages[f] << ")\n";
  }
  return diff.str();
}

std::size_t count_code(const LintResult& r, std::string_view code) {
  return static_cast<std::size_t>(std::count_if(r.diagnostics.begin(), r.diagnostics.end(),
                                                [&](const Diagnostic& d) { return d.rule->code == code; }));
}

// Fix properties on one file: each fix alone removes its finding and leaves a
// file without a new syntax error; all safe fixes together do the same, and a
// second pass over the result finds nothing more to fix (idempotent).
std::string check_fixes(const fs::path& path, std::size_t& fixes_checked) {
  std::string error;
  std::optional<SourceFile> read = source_of(path, error);
  if (!read) return "cannot read: " + error;
  SourceFile& source = *read;
  // a copy of `text` laid out as `source` (a notebook keeps its cells)
  auto with_cells = [&](std::string text, const SourceFile& like) {
    SourceFile f(path.string(), std::move(text));
    f.set_notebook(like.notebook());
    return f;
  };
  RuleSelection all;  // every rule, the opt-in ones too: each fix is checked
  std::vector<std::string> every;
  for (const Rule& r : rules::all()) every.emplace_back(r.info.code);
  all.add_layer({}, every, {});
  const ProjectFacts* facts = facts_of(path);
  const RuleOptions options = options_of(path);
  LintResult before = lint(source, rules::all(), all, options, true, facts);
  std::ostringstream out;
  bool had_syntax_error = count_code(before, "DDP001") > 0;
  for (const Diagnostic& d : before.diagnostics) {
    if (!d.fix) continue;
    ++fixes_checked;
    std::vector<Edit> edits = d.fix->edits;
    std::sort(edits.begin(), edits.end(), [](const Edit& a, const Edit& b) { return a.start < b.start; });
    SourceFile fixed(path.string(), apply_edits(source.text(), edits));
    LintResult after = lint(fixed, rules::all(), all, options, true, facts);
    auto row = source.lines().position(d.start).row;
    if (!had_syntax_error && count_code(after, "DDP001") > 0)
      out << "  " << path.string() << ":" << row << ": fix of " << d.rule->code << " makes a syntax error\n";
    if (count_code(after, d.rule->code) >= count_code(before, d.rule->code))
      out << "  " << path.string() << ":" << row << ": fix of " << d.rule->code << " leaves the finding\n";
  }
  // what --fix (and --fix --unsafe-fixes) does: every applicable fix, re-linted until stable
  for (bool unsafe : {false, true}) {
    FixOutcome fixed = fix_source(with_cells(std::string(source.text()), source), rules::all(), all, unsafe,
                                  options, facts);
    if (!fixed.changed) continue;
    if (!had_syntax_error && count_code(fixed.remaining, "DDP001") > 0)
      out << "  " << path.string() << ": all fixes together make a syntax error (unsafe: " << unsafe << ")\n";
    FixOutcome again = fix_source(with_cells(std::string(fixed.source.text()), fixed.source), rules::all(), all,
                                  unsafe, options, facts);
    if (again.changed)
      out << "  " << path.string() << ": a second --fix still changes the file (unsafe: " << unsafe << ")\n";
  }
  return out.str();
}

}  // namespace

TEST_CASE("fixes: each removes its finding without a syntax error; all safe fixes are idempotent") {
  fs::path root(DDPLINT_SOURCE_DIR);
  auto files = python_files(root / "fixtures");
  auto examples = python_files(root / "examples");
  files.insert(files.end(), examples.begin(), examples.end());
  std::size_t fixes = 0;
  for (const auto& f : files) {
    std::string diff = check_fixes(f, fixes);
    CHECK_MESSAGE(diff.empty(), "\n" << diff);
  }
  MESSAGE(fixes << " fixes checked");
  CHECK(fixes >= 20);  // the fixtures exercise the fixes; a silent zero would prove nothing
}

TEST_CASE("fixtures and examples: exactly the marked findings") {
  fs::path root(DDPLINT_SOURCE_DIR);
  auto files = python_files(root / "fixtures");
  auto examples = python_files(root / "examples");
  files.insert(files.end(), examples.begin(), examples.end());
  REQUIRE(files.size() > 0);
  int failed = 0;
  for (const auto& f : files) {
    std::string diff = check_file(f);
    if (!diff.empty()) ++failed;
    CHECK_MESSAGE(diff.empty(), "\n" << diff);
  }
  MESSAGE(files.size() << " files checked, " << failed << " with differences");
}
