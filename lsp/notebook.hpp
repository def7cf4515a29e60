// Notebook documents for the language server (LSP 3.17 "Notebook Document
// Synchronization"): a notebook's cells, each a text document of its own, read
// together as one notebook (linter/notebook.hpp) and linted as one source.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "linter/lint.hpp"
#include "linter/notebook.hpp"
#include "lsp/document.hpp"

namespace ddplint::lsp {

/// One open notebook: its cells in order, each with its text document (a code
/// cell whose languageId is `python` is read; other cells are kept for their
/// place in the numbering).
class NotebookDocument {
 public:
  /// From the params of `notebookDocument/didOpen`. Throws nlohmann's
  /// exceptions on params without the required fields.
  explicit NotebookDocument(const nlohmann::json& params);

  const std::string& uri() const { return uri_; }
  std::int64_t version() const { return version_; }
  /// Applies the params of `notebookDocument/didChange`: cells added, removed
  /// or changed in kind, and edits to their text (positions in `enc`).
  /// Returns the URIs of the cells it no longer has.
  std::vector<std::string> change(const nlohmann::json& params, PositionEncoding enc);
  /// The URIs of the cells, in order.
  std::vector<std::string> cell_uris() const;
  /// The text document of cell `uri`; null when it is not one of this notebook's.
  const Document* cell(const std::string& uri) const;

  /// The findings of the code cells read together, each placed in its cell:
  /// `diagnostics` holds them with byte offsets in that cell's text (a finding
  /// never runs past its cell), by cell, in the order of cell_uris().
  struct Lint {
    std::vector<std::vector<Diagnostic>> by_cell;
    std::string error;  ///< non-empty when the cells could not be linted
  };
  Lint lint(std::span<const Rule> rules, const RuleSelection& selection, const RuleOptions& options) const;

 private:
  struct Cell {
    std::string uri;
    int kind = 2;  ///< NotebookCellKind: 1 Markup, 2 Code
    std::unique_ptr<Document> doc;  ///< null until its text document is opened
    std::string language;
  };
  void open_text(const nlohmann::json& item);
  std::string uri_;
  std::int64_t version_ = 0;
  std::vector<Cell> cells_;
};

}  // namespace ddplint::lsp
