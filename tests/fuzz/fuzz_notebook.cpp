// libFuzzer harness 5: bytes -> a Jupyter notebook (linter/notebook): read,
// linted as its virtual source with every output format, fixed, written back.
// Properties: no crash; a refused notebook says why; the virtual source maps
// every finding into a cell that holds it; the notebook written with its own
// source reads back to the same virtual source; --fix's notebook reads back
// with as many cells, and its IPython lines as they were.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "linter/fixes.hpp"
#include "linter/notebook.hpp"
#include "linter/output.hpp"
#include "rules/registry.hpp"
#include "tests/fuzz/fuzz_limits.hpp"

using namespace ddplint;

namespace {
void fail(const char* what) {
  std::fprintf(stderr, "fuzz_notebook: property violated: %s\n", what);
  std::abort();
}

// Reads `bytes`, which must be a notebook.
Notebook must_read(const std::string& bytes, const char* what) {
  std::string error;
  std::optional<Notebook> nb = Notebook::parse(bytes, error);
  if (!nb) fail(what);
  return std::move(*nb);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > fuzz::kMaxInputBytes) return -1;
  std::string bytes(reinterpret_cast<const char*>(data), size);
  std::string error;
  std::optional<Notebook> nb = Notebook::parse(bytes, error);
  if (!nb) {
    if (error.empty()) fail("a refused notebook without a reason");
    return 0;
  }
  if (nb->source().size() != (nb->index()->cells.empty() ? 0 : nb->index()->cells.back().end))
    fail("the cells do not cover the virtual source");
  // the notebook written with its own cells reads back the same
  Notebook again = must_read(nb->write(nb->source(), *nb->index()), "an unchanged notebook written back does not read");
  if (again.source() != nb->source()) fail("an unchanged notebook written back reads differently");

  SourceFile source("fuzz.ipynb", nb->source());
  source.set_notebook(nb->index());
  if (source.check_decodable() != DecodeError::None) return 0;
  RuleSelection all;
  LintResult r = lint(source, rules::all(), all);
  for (const Diagnostic& d : r.diagnostics) {
    const NotebookIndex::Cell* cell = nb->index()->cell_of(d.start);
    if (cell == nullptr || d.start < cell->start || d.start > cell->end) fail("a finding outside every cell");
    CellPosition p = cell_position(source, d.end, d.start);
    if (p.cell != cell->number) fail("a finding's end in another cell");
  }
  (void)format_text(source, r.diagnostics, false);
  (void)format_full(source, r.diagnostics, false);
  (void)format_grouped(source, r.diagnostics, false);
  (void)format_github(source, r.diagnostics);
  for (const Diagnostic& d : r.diagnostics) {
    (void)to_json(source, d);
    (void)sarif_result(source, d, 0, "fuzz.ipynb", 0);
  }
  FixOutcome fixed = fix_source(std::move(source), rules::all(), all, true);
  if (!fixed.changed) return 0;
  const NotebookIndex& moved = *fixed.source.notebook();
  std::string written = nb->write(fixed.source.text(), moved);
  Notebook back = must_read(written, "a fixed notebook does not read back");
  if (back.index()->cells.size() != nb->index()->cells.size()) fail("a fixed notebook has other cells");
  // every IPython line is still in its cell, as it was
  auto doc = nlohmann::ordered_json::parse(written);
  for (const NotebookIndex::Cell& cell : moved.cells) {
    const auto& src = doc["cells"][cell.json_index]["source"];
    std::string text;
    if (src.is_string()) text = src.get<std::string>();
    else for (const auto& line : src) text += line.get<std::string>();
    for (const NotebookIndex::Magic& m : cell.magics)
      if (text.find(m.text) == std::string::npos) fail("an IPython line changed by --fix");
  }
  (void)nb->diff(fixed.source.text(), moved, "fuzz.ipynb");
  return 0;
}
