// The notebook view (linter/notebook.hpp): cells joined into one virtual
// source, the way back to (cell, row, column), IPython lines blanked, cell
// magics left out, malformed notebooks refused, fixes written back in shape.
#include <doctest/doctest.h>

#include <algorithm>

#include "linter/fixes.hpp"
#include "linter/notebook.hpp"
#include "linter/output.hpp"
#include "rules/registry.hpp"

using namespace ddplint;
using json = nlohmann::ordered_json;

namespace {
// An nbformat 4 notebook with `cells` (each a cell object).
std::string notebook_of(const json& cells) {
  json nb = {{"cells", cells}, {"metadata", json::object()}, {"nbformat", 4}, {"nbformat_minor", 5}};
  return nb.dump(1) + "\n";
}
json code_cell(const json& source) {
  return {{"cell_type", "code"}, {"execution_count", nullptr}, {"metadata", json::object()},
          {"outputs", json::array()}, {"source", source}};
}
json markdown_cell(const std::string& text) {
  return {{"cell_type", "markdown"}, {"metadata", json::object()}, {"source", text}};
}
Notebook parsed(const std::string& bytes) {
  std::string error;
  std::optional<Notebook> nb = Notebook::parse(bytes, error);
  INFO(error);
  REQUIRE(nb);
  return std::move(*nb);
}
std::string error_of(std::string_view bytes) {
  std::string error;
  std::optional<Notebook> nb = Notebook::parse(bytes, error);
  CHECK(!nb);
  return error;
}
}  // namespace

TEST_CASE("notebook: code cells joined, each ending in a line end; Markdown cells not read") {
  Notebook nb = parsed(notebook_of(json::array({markdown_cell("# Title\nimport x"), code_cell(json::array({"a = 1\n", "b = 2"})),
                                                code_cell("c = 3\n"), code_cell("")})));
  CHECK(nb.source() == "a = 1\nb = 2\nc = 3\n\n");
  const NotebookIndex& ix = *nb.index();
  REQUIRE(ix.cells.size() == 3);
  // numbered among all cells, the Markdown one too (1-based)
  CHECK(ix.cells[0].number == 2);
  CHECK(ix.cells[1].number == 3);
  CHECK(ix.cells[2].number == 4);
  CHECK(ix.cells[0].added_newline);
  CHECK_FALSE(ix.cells[1].added_newline);
  CHECK(ix.cells[0].list_source);
  CHECK_FALSE(ix.cells[1].list_source);
}

TEST_CASE("notebook: every byte maps back to its cell, row in the cell and column") {
  Notebook nb = parsed(notebook_of(json::array({code_cell("x = 1\nyé = 2\n"), markdown_cell("m"), code_cell("z = 3\nw = 4")})));
  SourceFile f("n.ipynb", nb.source());
  f.set_notebook(nb.index());
  std::string_view s = f.text();
  auto at = [&](std::string_view needle) {
    auto p = cell_position(f, static_cast<std::uint32_t>(s.find(needle)));
    return std::to_string(p.cell) + ":" + std::to_string(p.position.row) + ":" + std::to_string(p.position.column);
  };
  CHECK(at("x") == "1:1:1");
  CHECK(at("= 2") == "1:2:4");  // code-point columns: é is one
  CHECK(at("z") == "3:1:1");
  CHECK(at("w = 4") == "3:2:1");
  // an end offset past its cell is kept in the start's cell (its last line end)
  auto y = static_cast<std::uint32_t>(s.find("yé"));
  auto w = static_cast<std::uint32_t>(s.find("w"));
  CellPosition clipped = cell_position(f, w, y);
  CHECK(clipped.cell == 1);
  CHECK(clipped.position.row == 2);
}

TEST_CASE("notebook: IPython lines are blanked to same-length statements, only at the top level") {
  std::string cell =
      "%matplotlib inline\n"
      "!pip install x\n"
      "files = !ls\n"
      "obj?\n"
      "for f in files:\n"
      "    !cp $f /tmp\n"
      "total = (a\n"
      "         % b)\n"           // Python's modulo on a continued line: kept
      "s = '''\n"
      "%d items\n"              // inside a string: kept
      "'''\n"
      "%time f(1, \\\n"
      "   2)\n"                 // a magic continued with `\`
      "y = 1  # why?\n";        // a `?` in a comment is Python
  Notebook nb = parsed(notebook_of(json::array({code_cell(cell)})));
  auto blank = [](std::size_t indent, std::size_t n) {  // a magic of n bytes after its indentation
    return std::string(indent, ' ') + "..." + std::string(n - 3, ' ') + "\n";
  };
  std::string expected = blank(0, 18) + blank(0, 14) + blank(0, 11) + blank(0, 4) + "for f in files:\n" +
                         blank(4, 11) + "total = (a\n         % b)\ns = '''\n%d items\n'''\n" + blank(0, 12) +
                         "     \ny = 1  # why?\n";
  CHECK(nb.source() == expected);
  CHECK(nb.source().size() == cell.size());
  CHECK(nb.index()->cells[0].magics.size() == 7);
  // the blanked source parses: no syntax error from the magics
  SourceFile f("n.ipynb", nb.source());
  f.set_notebook(nb.index());
  LintResult r = lint(f, rules::all(), RuleSelection({"DDP001"}, {}), RuleOptions{}, false);
  CHECK(r.diagnostics.empty());
}

TEST_CASE("notebook: a cell whose first line is a cell magic is left out") {
  Notebook nb = parsed(notebook_of(json::array({code_cell("%%bash\nls\n"), code_cell("%%writefile t.py\nimport torch\n"),
                                                code_cell("a = 1\n")})));
  CHECK(nb.source() == "a = 1\n");
  REQUIRE(nb.index()->cells.size() == 1);
  CHECK(nb.index()->cells[0].number == 3);
}

TEST_CASE("notebook: malformed notebooks are refused with what is wrong") {
  CHECK(error_of("{not json").starts_with("not a notebook: not JSON ("));
  CHECK(error_of("[1, 2]") == "not a notebook: the JSON is not an object");
  CHECK(error_of(R"({"cells": [], "nbformat": 3})") == "not nbformat 4: `nbformat` is 3, only 4 is read");
  CHECK(error_of(R"({"worksheets": []})") == "not nbformat 4: no `nbformat` version and no `cells` list");
  // no version, but nbformat 4's top-level `cells`: read as 4 (a code cell without 4's `source` is still refused)
  CHECK(parsed(R"({"cells": [{"cell_type": "code", "source": "x = 1"}], "metadata": {"orig_nbformat": 4}})").source() == "x = 1\n");
  CHECK(error_of(R"({"cells": [{"cell_type": "code", "input": "x = 1"}]})") ==
        "cell 1: `source` is not a string or a list of strings");
  CHECK(error_of(R"({"nbformat": 4})") == "not a notebook: no `cells` list");
  CHECK(error_of(R"({"nbformat": 4, "cells": {}})") == "not a notebook: no `cells` list");
  CHECK(error_of(R"({"nbformat": 4, "cells": [{"cell_type": "code", "source": 7}]})") ==
        "cell 1: `source` is not a string or a list of strings");
  CHECK(error_of(R"({"nbformat": 4, "cells": [{"cell_type": "code", "source": ["a\n", 1]}]})") ==
        "cell 1: `source` is a list with an element that is not a string");
  CHECK(error_of(R"({"nbformat": 4, "cells": [3]})") == "cell 1: not a cell (an object with a `cell_type`)");
  // nesting that would exhaust the parser's stack is refused before parsing
  CHECK(error_of(std::string(100000, '[')).find("nested more than") != std::string::npos);
}

TEST_CASE("notebook: an edit stays in one cell, keeps its last line end and leaves IPython lines alone") {
  Notebook nb = parsed(notebook_of(json::array({code_cell("a = 1\n!ls\nb = 2\n"), code_cell("c = 3")})));
  const NotebookIndex& ix = *nb.index();
  // "a = 1\n" 0-6, "!ls" 6-9 (blanked), "\n", "b = 2\n" 10-16; cell 2: "c = 3" 16-21, "\n" added
  CHECK(ix.editable({0, 1, "z"}));
  CHECK_FALSE(ix.editable({4, 8, ""}));       // into the magic line
  CHECK_FALSE(ix.editable({7, 7, "x"}));      // an insertion inside it
  CHECK_FALSE(ix.editable({6, 6, "x"}));      // text before it on its line
  CHECK(ix.editable({6, 6, "import os\n"}));  // a line before it
  CHECK_FALSE(ix.editable({14, 17, ""}));     // across the cells
  CHECK_FALSE(ix.editable({15, 16, ""}));     // the cell's last line end
  CHECK(ix.editable({16, 16, "# c\n"}));      // the start of the next cell is that cell's
  CHECK_FALSE(ix.editable({20, 22, ""}));     // the added line end of the last cell
  // moved by edits: the cells and the magic follow
  std::vector<Edit> edits = {{0, 1, "zz"}, {16, 16, "# c\n"}};
  NotebookIndex moved = ix.after(edits);
  std::string fixed = apply_edits(nb.source(), edits);
  CHECK(moved.cells[0].start == 0);
  CHECK(moved.cells[0].end == 17);
  CHECK(moved.cells[1].start == 17);
  CHECK(moved.cells[0].magics[0].start == 7);
  std::string written = nb.write(fixed, moved);
  json doc = json::parse(written);
  CHECK(doc["cells"][0]["source"] == "zz = 1\n!ls\nb = 2\n");  // the magic as it was
  CHECK(doc["cells"][1]["source"] == "# c\nc = 3");            // no line end added
}

TEST_CASE("notebook: written back as Jupyter writes it, the source kept in its shape") {
  json outputs = json::array({{{"name", "stdout"}, {"output_type", "stream"}, {"text", json::array({"µs\n"})}}});
  json first = code_cell(json::array({"x = 1\n", "y = 2"}));
  first["outputs"] = outputs;
  first["execution_count"] = 7;
  std::string bytes = notebook_of(json::array({first, markdown_cell("é"), code_cell(json::array({"k = 0\n"}))}));
  Notebook nb = parsed(bytes);
  // nothing changed: the same bytes (indent 1, non-ASCII kept, final newline)
  CHECK(nb.write(nb.source(), *nb.index()) == bytes);
  std::vector<Edit> edits = {{4, 5, "10\n"}};  // x = 10\n (a line added)
  std::string fixed = apply_edits(nb.source(), edits);
  json doc = json::parse(nb.write(fixed, nb.index()->after(edits)));
  CHECK(doc["cells"][0]["source"] == json::array({"x = 10\n", "\n", "y = 2"}));
  CHECK(doc["cells"][0]["outputs"] == outputs);
  CHECK(doc["cells"][0]["execution_count"] == 7);
  CHECK(doc["cells"][2]["source"] == json::array({"k = 0\n"}));
  std::string diff = nb.diff(fixed, nb.index()->after(edits), "n.ipynb");
  CHECK(diff.starts_with("--- a/n.ipynb:cell 1\n+++ b/n.ipynb:cell 1\n"));
}

TEST_CASE("notebook: output formats show the cell") {
  std::string bytes = notebook_of(json::array(
      {markdown_cell("# t"),
       code_cell(json::array({"import torch\n", "from torch.utils.data import DataLoader\n"})),
       code_cell(json::array({"model = torch.nn.Linear(2, 2).cuda()\n", "loader = DataLoader(ds, batch_size=4)\n"}))}));
  Notebook nb = parsed(bytes);
  // the line of the notebook file where the finding's row is written
  auto loader_line = static_cast<std::int64_t>(std::count(bytes.begin(), bytes.begin() + bytes.find("loader = "), '\n') + 1);
  SourceFile f("n.ipynb", nb.source());
  f.set_notebook(nb.index());
  LintResult r = lint(f, rules::all(), RuleSelection({"DDP101"}, {}), RuleOptions{}, false);
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(format_text(f, r.diagnostics, false).starts_with("n.ipynb:cell 3:2:10: DDP101 "));
  json j = to_json(f, r.diagnostics[0]);
  CHECK(j["cell"] == 3);
  CHECK(j["location"] == json{{"row", 2}, {"column", 10}});
  CHECK(format_grouped(f, r.diagnostics, false).find("  cell 3:2:10 DDP101") != std::string::npos);
  CHECK(format_full(f, r.diagnostics, false).find("2 | loader = DataLoader") != std::string::npos);
  json sarif = sarif_result(f, r.diagnostics[0], 0, "n.ipynb", 0);
  // SARIF's region is the file's lines (the JSON's), the cell's rows are properties
  CHECK(sarif["locations"][0]["physicalLocation"]["region"] == json{{"startLine", loader_line}, {"endLine", loader_line}});
  CHECK(sarif["properties"]["cell"] == 3);
  CHECK(sarif["properties"]["cellRegion"]["startLine"] == 2);
  CHECK(format_github(f, r.diagnostics).find(",line=" + std::to_string(loader_line) + "::cell 3:2:10: DDP101") !=
        std::string::npos);
}

TEST_CASE("notebook: each row knows the line of the file where it is written") {
  std::string bytes = notebook_of(json::array({markdown_cell("m"), code_cell(json::array({"a = 1\n", "\n", "b = [\n", "]"})),
                                               code_cell("x = 1\ny = 2\n")}));
  Notebook nb = parsed(bytes);
  auto line_of = [&](std::string_view needle) {
    return static_cast<std::uint32_t>(std::count(bytes.begin(), bytes.begin() + bytes.find(needle), '\n') + 1);
  };
  const auto& cells = nb.index()->cells;
  REQUIRE(cells.size() == 2);
  CHECK(cells[0].file_lines ==
        std::vector<std::uint32_t>{line_of("\"a = 1"), line_of("\"a = 1") + 1, line_of("\"b = ["), line_of("\"]\"")});
  // a string source is one line of the file
  CHECK(cells[1].file_lines == std::vector<std::uint32_t>{line_of("\"x = 1"), line_of("\"x = 1")});
  // unknown after edits, until read again
  std::vector<Edit> none;
  CHECK(nb.index()->after(none).cells[0].file_lines.empty());
}
