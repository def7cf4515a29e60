// The registry: unique codes and names, docs with every heading, doc examples
// that fire and "use instead" examples that do not, fixtures for every rule.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>
#include <set>

#include "linter/lint.hpp"
#include "linter/project.hpp"
#include "rules/registry.hpp"

using namespace ddplint;
namespace fs = std::filesystem;

namespace {
// The first ```python block after `heading` in `doc`, or for a rule with no
// Python check (a launch-script rule) the first ```sh block.
std::string code_block_after(std::string_view doc, std::string_view heading, bool shell = false) {
  auto h = doc.find(heading);
  if (h == std::string_view::npos) return {};
  std::string_view fence = shell ? "```sh\n" : "```python\n";
  auto open = doc.find(fence, h);
  if (open == std::string_view::npos) return {};
  open += fence.size();
  auto close = doc.find("```", open);
  return std::string(doc.substr(open, close - open));
}

// Findings of `rule` alone on `src`. A launch script's example is linted as
// `run.sh` in a project whose `train.py` is a DDP script (the scripts the
// examples start), with that project's facts.
int count_code(const Rule& rule, const std::string& src, bool shell = false) {
  RuleSelection only({std::string(rule.info.code)}, {});
  if (!shell) {
    SourceFile f("doc.py", src);
    if (rule.check_noqa == nullptr) return static_cast<int>(lint(f, rules::all(), only).diagnostics.size());
    // a noqa rule judges the other rules' findings: every rule runs, its own findings are counted
    RuleSelection with_all({"ALL", std::string(rule.info.code)}, {});
    auto found = lint(f, rules::all(), with_all).diagnostics;
    return static_cast<int>(std::count_if(found.begin(), found.end(), [&](const Diagnostic& d) { return d.rule == &rule.info; }));
  }
  struct DocProject {  // removed when the test program ends
    fs::path path = fs::temp_directory_path() / ("ddplint_doc_project_" + std::to_string(::getpid()));
    DocProject() {
      fs::create_directories(path);
      std::ofstream(path / "pyproject.toml") << "[project]\nname = \"doc\"\n";
      std::ofstream(path / "train.py") << "import os\nimport torch\nimport torch.distributed as dist\n"
                                          "dist.init_process_group(\"nccl\")\n"
                                          "torch.cuda.set_device(int(os.environ[\"LOCAL_RANK\"]))\n";
    }
    ~DocProject() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  };
  static const DocProject project_dir;
  const fs::path& dir = project_dir.path;
  fs::path run = dir / "run.sh";
  ProjectSet projects;
  auto project = projects.project_of(run);
  const ProjectFacts* facts = project ? project->launch_facts_for(run, src) : nullptr;
  SourceFile f(run.string(), src);
  return static_cast<int>(lint(f, rules::all(), only, RuleOptions{}, true, facts).diagnostics.size());
}
}  // namespace

TEST_CASE("codes and names are unique, sorted, kebab-case") {
  std::set<std::string_view> codes, names;
  std::string_view prev;
  for (const Rule& r : rules::all()) {
    CHECK(codes.insert(r.info.code).second);
    CHECK(names.insert(r.info.name).second);
    CHECK(prev < r.info.code);
    prev = r.info.code;
    CHECK(r.info.code.size() == 6);
    for (char c : r.info.name) {
      bool kebab = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
      CHECK(kebab);
    }
    bool has_check = r.check != nullptr || r.check_launch != nullptr || r.check_noqa != nullptr;
    CHECK(has_check);
    CHECK_FALSE(r.info.summary.empty());
  }
}

TEST_CASE("each rule lives in rules/<CODE>_<name>.cpp with rules/<CODE>_<name>.md, and every such file is a rule") {
  // The build lists the rules from these file names (CMakeLists.txt, `# --- rules ---`).
  fs::path dir = fs::path(DDPLINT_SOURCE_DIR) / "rules";
  std::set<std::string> expected;
  for (const Rule& r : rules::all()) {
    CAPTURE(r.info.code);
    std::string stem = std::string(r.info.code) + "_" + std::string(r.info.name);
    for (char& c : stem)
      if (c == '-') c = '_';
    CHECK(fs::is_regular_file(dir / (stem + ".cpp")));
    CHECK(fs::is_regular_file(dir / (stem + ".md")));
    expected.insert(stem + ".cpp");
    expected.insert(stem + ".md");
  }
  CHECK(expected.size() == 2 * rules::all().size());
  std::size_t found = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string name = e.path().filename().string();
    if (name.rfind("DDP", 0) != 0) continue;
    CAPTURE(name);
    CHECK(expected.count(name) == 1);  // no rule file or doc without its rule
    ++found;
  }
  CHECK(found == expected.size());
}

TEST_CASE("every rule has documentation with the headings, and its examples behave") {
  for (const Rule& r : rules::all()) {
    CAPTURE(r.info.code);
    for (auto h : {"## What it does", "## Why is this bad", "## Example", "## Use instead", "## References"})
      CHECK(r.info.docs.find(h) != std::string_view::npos);
    // DDP0xx are about the files and the linter itself (syntax errors, noqa), not PyTorch
    bool links_pytorch = r.info.docs.find("pytorch.org") != std::string_view::npos || r.info.code.rfind("DDP0", 0) == 0;
    CHECK(links_pytorch);
    bool shell = r.check == nullptr && r.check_noqa == nullptr;  // a launch-script rule: its examples are shell
    std::string example = code_block_after(r.info.docs, "## Example", shell);
    std::string instead = code_block_after(r.info.docs, "## Use instead", shell);
    REQUIRE_FALSE(example.empty());
    REQUIRE_FALSE(instead.empty());
    CHECK(count_code(r, example, shell) >= 1);
    CHECK(count_code(r, instead, shell) == 0);
  }
}

TEST_CASE("every rule has at least 4 flagged and 4 clean fixtures") {
  for (const Rule& r : rules::all()) {
    CAPTURE(r.info.code);
    fs::path dir = fs::path(DDPLINT_SOURCE_DIR) / "fixtures" / std::string(r.info.code);
    int flagged = 0, clean = 0;
    if (fs::is_directory(dir)) {
      for (const auto& e : fs::directory_iterator(dir)) {
        std::string name = e.path().filename().string();
        if (name.rfind("flagged_", 0) == 0) ++flagged;
        if (name.rfind("clean_", 0) == 0) ++clean;
      }
    }
    CHECK(flagged >= 4);
    CHECK(clean >= 4);
  }
}

TEST_CASE("the README's rule table lists every rule with its name, severity and opt-in status") {
  std::string error;
  auto readme = read_file(std::string(DDPLINT_SOURCE_DIR) + "/README.md", error);
  REQUIRE(readme);
  for (const Rule& r : rules::all()) {
    CAPTURE(r.info.code);
    std::string row = "| " + std::string(r.info.code) + " | " + std::string(r.info.name) + " | " +
                      std::string(to_string(r.info.severity)) + (r.info.opt_in ? " (opt-in) |" : " |");
    CHECK(readme->find(row) != std::string::npos);
  }
}

TEST_CASE("line endings: LF, CRLF and lone CR (old Mac) give the same findings at the same rows and columns") {
  // Python reads source with universal newlines; tree-sitter-python took a
  // lone \r for a space, which ran a CR-only file's statements together into
  // a false DDP001.
  auto findings = [](const std::string& text) {
    SourceFile f("t.py", text);
    auto r = lint(f, rules::all(), RuleSelection{});
    REQUIRE(r.error.empty());
    std::vector<std::string> out;
    for (const Diagnostic& d : r.diagnostics) {
      Position p = f.lines().position(d.start);
      out.push_back(std::string(d.rule->code) + "@" + std::to_string(p.row) + ":" + std::to_string(p.column) +
                    (d.fix ? " with a fix" : ""));
    }
    return out;
  };
  auto replace_newlines = [](std::string text, std::string_view with) {
    std::string out;
    for (char c : text) {
      if (c == '\n') out.append(with);
      else out.push_back(c);
    }
    return out;
  };
  int examples = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(DDPLINT_SOURCE_DIR) / "examples")) {
    if (entry.path().extension() != ".py") continue;
    std::string error;
    auto text = read_file(entry.path().string(), error);
    REQUIRE(text);
    CAPTURE(entry.path().string());
    auto lf = findings(*text);
    CHECK(!lf.empty());
    for (const std::string& f : lf) CHECK(f.rfind("DDP001@", 0) != 0);
    CHECK(findings(replace_newlines(*text, "\r\n")) == lf);
    CHECK(findings(replace_newlines(*text, "\r")) == lf);
    ++examples;
  }
  CHECK(examples >= 5);
  // a fix offered only for a one-line default: a lone \r ends the line too
  std::string multi_line_default = "import os, argparse\np = argparse.ArgumentParser()\n"
                                   "p.add_argument(\"--local_rank\", default=(0\n))\nprint(p.parse_args().local_rank)\n";
  auto lf = findings(multi_line_default);
  CHECK(lf == std::vector<std::string>{"DDP206@3:16"});
  CHECK(findings(replace_newlines(multi_line_default, "\r\n")) == lf);
  CHECK(findings(replace_newlines(multi_line_default, "\r")) == lf);
}
