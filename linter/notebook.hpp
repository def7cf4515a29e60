// Jupyter notebooks (`*.ipynb`): the code cells read as one virtual Python
// source, the way back from its bytes to (cell, line, column), and the
// notebook written again with fixed cells.
#pragma once

#include <nlohmann/json.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "linter/diagnostic.hpp"
#include "linter/source.hpp"

namespace ddplint {

/// True for a Jupyter notebook file name (`*.ipynb`).
bool has_notebook_extension(std::string_view file_name);

/// Where each code cell of a notebook lies in its virtual source
/// (Notebook::source()). Cells follow one another, each ending in a line end.
struct NotebookIndex {
  /// A line of IPython that is not Python (`%magic`, `!shell`, `obj?`), blanked
  /// in the virtual source: its bytes there and the original bytes (same length).
  struct Magic {
    std::uint32_t start = 0, end = 0;  ///< bytes of the line, its line end excluded
    std::string text;                  ///< what the notebook holds there
  };
  /// One code cell that is read.
  struct Cell {
    std::uint32_t number = 0;      ///< 1-based, among all the notebook's cells (Markdown ones too), as Ruff counts
    std::size_t json_index = 0;    ///< index in the notebook's `cells` array
    std::uint32_t start = 0;       ///< first byte in the virtual source
    std::uint32_t end = 0;         ///< one past its last byte, its final line end included
    bool added_newline = false;    ///< the cell's text did not end in "\n": the last byte is not the notebook's
    bool list_source = false;      ///< `source` is a list of lines (else one string)
    std::vector<Magic> magics;     ///< its blanked IPython lines, in order
    /// The 1-based line of the notebook file (its JSON) holding each of the
    /// cell's rows (the line of the `source` string it starts in); empty when
    /// unknown (after edits, until the notebook is read again).
    std::vector<std::uint32_t> file_lines;
  };
  std::vector<Cell> cells;

  /// The cell holding byte `offset` (the last cell for offsets past the end);
  /// null when no cell is read.
  const Cell* cell_of(std::uint32_t offset) const;
  /// Whether `edit` may be applied: it stays inside one cell, keeps the cell's
  /// last line end, and touches no IPython line.
  bool editable(const Edit& edit) const;
  /// This index after `edits` (sorted, non-overlapping, each editable) are applied.
  NotebookIndex after(std::span<const Edit> edits) const;
};

/// A position as shown for a notebook: the cell's number and the 1-based row
/// and code-point column inside the cell, and the line of the notebook file
/// where that row is written (0: unknown).
struct CellPosition {
  std::uint32_t cell = 0;
  Position position;
  std::uint32_t file_line = 0;
};

/// The cell position of byte `offset` of a notebook's virtual source (`file`
/// must carry its index: file.notebook()). An offset past its cell's end (a
/// finding that would run into the next cell) is clipped to `within`'s cell
/// when `within` is given.
CellPosition cell_position(const SourceFile& file, std::uint32_t offset,
                           std::optional<std::uint32_t> within = std::nullopt);

/// A notebook read from nbformat 4 JSON: the document, and the virtual Python
/// source of its code cells with the index that maps it back.
class Notebook {
 public:
  /// Reads a notebook. The code cells' sources (a string or a list of
  /// strings) are joined into one virtual source, each cell ending in "\n";
  /// IPython lines (`%line magic`, `!shell`, `?help`/`obj?`, `x = !cmd`, a
  /// line magic or shell alias automagic runs without its `%` where the line
  /// cannot be Python (`pip install x`, `cd data`), and
  /// the lines they continue with `\`) are blanked to a same-length Python
  /// statement (`...` padded with spaces, or `0`), at the top level only (not
  /// inside brackets or strings); a cell whose first line is a cell magic
  /// (`%%bash`) is not read, nor are Markdown and raw cells. A cell whose first
  /// non-blank line is indented (IPython removes that indentation before it
  /// runs the cell) follows a line `if True:` that belongs to no cell. On failure
  /// returns std::nullopt with `error` saying what is wrong ("not JSON: ...",
  /// "not nbformat 4 ...", "no `cells` list", "cell 3: `source` is not a
  /// string or a list of strings").
  static std::optional<Notebook> parse(std::string_view bytes, std::string& error);

  /// The virtual Python source.
  const std::string& source() const { return source_; }
  /// Its index (shared with the SourceFile that lints it).
  const std::shared_ptr<const NotebookIndex>& index() const { return index_; }

  /// The notebook with each read cell's source taken from `fixed` (a virtual
  /// source laid out as `index` says), written as Jupyter writes it: indent
  /// as the original (1 when on one line), keys in their order, non-ASCII
  /// kept, a final newline; a `source` list stays a list of lines, each but
  /// the last ending in "\n". Outputs, metadata and other cells unchanged.
  std::string write(std::string_view fixed, const NotebookIndex& index) const;

  /// A unified diff per changed cell, headed `--- a/PATH:cell N` / `+++
  /// b/PATH:cell N` (Ruff's `--diff` names the cell the same way); "" when no
  /// cell changed.
  std::string diff(std::string_view fixed, const NotebookIndex& index, const std::string& path) const;

 private:
  // The text of cell `cell` of a virtual source laid out as `index`, as the notebook holds it.
  static std::string cell_text(std::string_view text, const NotebookIndex::Cell& cell);
  nlohmann::ordered_json doc_;
  std::string source_;
  std::shared_ptr<const NotebookIndex> index_;
  int indent_ = 1;
};

}  // namespace ddplint
