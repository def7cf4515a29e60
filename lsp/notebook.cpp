#include "lsp/notebook.hpp"

#include <algorithm>

namespace ddplint::lsp {

using json = nlohmann::json;

namespace {
TextPosition position_of(const json& p) {
  return {p.at("line").get<std::uint32_t>(), p.at("character").get<std::uint32_t>()};
}
}  // namespace

NotebookDocument::NotebookDocument(const json& params) {
  const json& nb = params.at("notebookDocument");
  uri_ = nb.at("uri").get<std::string>();
  version_ = nb.value("version", std::int64_t{0});
  for (const json& c : nb.at("cells"))
    cells_.push_back({c.at("document").get<std::string>(), c.value("kind", 2), nullptr, ""});
  if (params.contains("cellTextDocuments"))
    for (const json& item : params.at("cellTextDocuments")) open_text(item);
}

void NotebookDocument::open_text(const json& item) {
  std::string uri = item.at("uri").get<std::string>();
  for (Cell& c : cells_) {
    if (c.uri != uri) continue;
    c.language = item.value("languageId", "");
    c.doc = std::make_unique<Document>(uri, uri, item.value("version", std::int64_t{0}), item.at("text").get<std::string>());
  }
}

std::vector<std::string> NotebookDocument::change(const json& params, PositionEncoding enc) {
  std::vector<std::string> removed;
  const json& nb = params.at("notebookDocument");
  if (nb.contains("version")) version_ = nb.at("version").get<std::int64_t>();
  const json& change = params.at("change");
  if (!change.contains("cells")) return removed;
  const json& cells = change.at("cells");
  if (cells.contains("structure")) {
    const json& structure = cells.at("structure");
    const json& array = structure.at("array");
    std::size_t start = std::min<std::size_t>(array.at("start").get<std::size_t>(), cells_.size());
    std::size_t count = std::min<std::size_t>(array.at("deleteCount").get<std::size_t>(), cells_.size() - start);
    for (std::size_t k = start; k < start + count; ++k) removed.push_back(cells_[k].uri);
    cells_.erase(cells_.begin() + static_cast<std::ptrdiff_t>(start),
                 cells_.begin() + static_cast<std::ptrdiff_t>(start + count));
    std::vector<Cell> added;
    if (array.contains("cells"))
      for (const json& c : array.at("cells")) added.push_back({c.at("document").get<std::string>(), c.value("kind", 2), nullptr, ""});
    cells_.insert(cells_.begin() + static_cast<std::ptrdiff_t>(start), std::make_move_iterator(added.begin()),
                  std::make_move_iterator(added.end()));
    if (structure.contains("didOpen"))
      for (const json& item : structure.at("didOpen")) open_text(item);
    // a cell moved is removed and added again: it is not gone
    std::erase_if(removed, [&](const std::string& uri) {
      return std::any_of(cells_.begin(), cells_.end(), [&](const Cell& c) { return c.uri == uri; });
    });
  }
  if (cells.contains("data"))
    for (const json& c : cells.at("data"))
      for (Cell& mine : cells_)
        if (mine.uri == c.at("document").get<std::string>()) mine.kind = c.value("kind", mine.kind);
  if (cells.contains("textContent")) {
    for (const json& content : cells.at("textContent")) {
      std::string uri = content.at("document").at("uri").get<std::string>();
      auto it = std::find_if(cells_.begin(), cells_.end(), [&](const Cell& c) { return c.uri == uri && c.doc; });
      if (it == cells_.end()) continue;
      for (const json& edit : content.at("changes")) {
        const std::string& text = edit.at("text").get_ref<const std::string&>();
        if (edit.contains("range"))
          it->doc->replace(position_of(edit.at("range").at("start")), position_of(edit.at("range").at("end")), text, enc);
        else
          it->doc->replace_all(text);
      }
      if (content.at("document").contains("version"))
        it->doc->set_version(content.at("document").at("version").get<std::int64_t>());
    }
  }
  return removed;
}

std::vector<std::string> NotebookDocument::cell_uris() const {
  std::vector<std::string> out;
  for (const Cell& c : cells_) out.push_back(c.uri);
  return out;
}

const Document* NotebookDocument::cell(const std::string& uri) const {
  for (const Cell& c : cells_)
    if (c.uri == uri) return c.doc ? c.doc.get() : nullptr;
  return nullptr;
}

NotebookDocument::Lint NotebookDocument::lint(std::span<const Rule> rules, const RuleSelection& selection,
                                              const RuleOptions& options) const {
  Lint out;
  out.by_cell.resize(cells_.size());
  // the cells as an nbformat 4 notebook: read as the command line reads a .ipynb
  nlohmann::ordered_json cells = nlohmann::ordered_json::array();
  for (const Cell& c : cells_) {
    bool code = c.kind == 2 && c.doc && c.language == "python";
    cells.push_back({{"cell_type", code ? "code" : "markdown"}, {"source", code ? std::string(c.doc->text()) : ""}});
  }
  nlohmann::ordered_json doc = {{"cells", std::move(cells)}, {"nbformat", 4}};
  std::optional<Notebook> nb = Notebook::parse(doc.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace), out.error);
  if (!nb) return out;
  SourceFile source(uri_, nb->source());
  source.set_notebook(nb->index());
  LintResult result = ddplint::lint(source, rules, selection, options);
  out.error = result.error;
  for (Diagnostic& d : result.diagnostics) {
    const NotebookIndex::Cell* cell = nb->index()->cell_of(d.start);
    if (cell == nullptr || cell->json_index >= cells_.size()) continue;
    std::uint32_t size = cell->end - cell->start - (cell->added_newline ? 1 : 0);
    auto inside = [&](std::uint32_t offset) { return std::min(offset - std::min(offset, cell->start), size); };
    d.start = inside(d.start);
    d.end = std::max(d.start, inside(d.end));
    if (d.fix) {
      // a fix that stays in the cell, off its IPython lines, in the cell's offsets
      bool editable = std::all_of(d.fix->edits.begin(), d.fix->edits.end(),
                                  [&](const Edit& e) { return nb->index()->editable(e) && e.end <= cell->start + size; });
      if (editable) {
        for (Edit& e : d.fix->edits) {
          e.start -= cell->start;
          e.end -= cell->start;
        }
      } else {
        d.fix.reset();
      }
    }
    out.by_cell[cell->json_index].push_back(std::move(d));
  }
  return out;
}

}  // namespace ddplint::lsp
