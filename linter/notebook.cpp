#include "linter/notebook.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "linter/fixes.hpp"

namespace ddplint {

bool has_notebook_extension(std::string_view name) {
  constexpr std::string_view ext = ".ipynb";
  if (name.size() <= ext.size()) return false;
  std::string_view tail = name.substr(name.size() - ext.size());
  return std::equal(tail.begin(), tail.end(), ext.begin(),
                    [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; });
}

const NotebookIndex::Cell* NotebookIndex::cell_of(std::uint32_t offset) const {
  if (cells.empty()) return nullptr;
  auto it = std::upper_bound(cells.begin(), cells.end(), offset,
                             [](std::uint32_t o, const Cell& c) { return o < c.start; });
  return it == cells.begin() ? &cells.front() : &*(it - 1);
}

bool NotebookIndex::editable(const Edit& e) const {
  const Cell* c = cell_of(e.start);
  if (c == nullptr || e.start < c->start || e.end < e.start || c->end == c->start) return false;
  if (e.end > c->end - 1) return false;  // the cell's last line end stays (it separates the cells)
  for (const Magic& m : c->magics) {
    if (e.start < m.end && e.end > m.start) return false;  // overlaps the IPython line
    if (e.start == e.end && m.start < e.start && e.start <= m.end) return false;  // an insertion into it
    if (e.start == e.end && e.start == m.start && !e.replacement.ends_with('\n')) return false;  // text before it on its line
  }
  return true;
}

NotebookIndex NotebookIndex::after(std::span<const Edit> edits) const {
  // p moves by the size change of every edit before it; an insertion at p
  // itself moves it only when `insertion_before` (the text goes before p)
  auto moved = [&](std::uint32_t p, bool insertion_before) {
    std::int64_t delta = 0;
    for (const Edit& e : edits) {
      if (e.end > p || (e.start == p && e.end == p && !insertion_before)) continue;
      delta += static_cast<std::int64_t>(e.replacement.size()) - (static_cast<std::int64_t>(e.end) - e.start);
    }
    return static_cast<std::uint32_t>(static_cast<std::int64_t>(p) + delta);
  };
  NotebookIndex out = *this;
  for (Cell& c : out.cells) {
    c.file_lines.clear();  // the file is written anew: its lines are known when it is read again
    // an insertion at a cell's start is the cell's (its end is the next cell's start)
    c.start = moved(c.start, false);
    c.end = moved(c.end, false);
    for (Magic& m : c.magics) {
      m.start = moved(m.start, true);
      m.end = moved(m.end, false);
    }
  }
  return out;
}

CellPosition cell_position(const SourceFile& file, std::uint32_t offset, std::optional<std::uint32_t> within) {
  const NotebookIndex* index = file.notebook().get();
  const NotebookIndex::Cell* cell = index ? index->cell_of(within.value_or(offset)) : nullptr;
  if (cell == nullptr) return {0, file.lines().position(offset)};
  if (within && cell->end > cell->start && offset > cell->end - 1) offset = cell->end - 1;  // not into the next cell
  Position p = file.lines().position(offset);
  p.row -= file.lines().line_of(cell->start);
  std::uint32_t file_line = p.row - 1 < cell->file_lines.size() ? cell->file_lines[p.row - 1] : 0;
  return {cell->number, p, file_line};
}

namespace {
// Deepest nesting of arrays and objects in `text` (outside strings): nlohmann's
// parser recurses once per level, so a hostile file could exhaust the stack.
std::size_t json_depth(std::string_view text) {
  std::size_t depth = 0, deepest = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}
constexpr std::size_t kMaxJsonDepth = 256;  // nbformat 4 needs about 6; outputs a few more

// Where a line of a cell stands in Python's reading of the cell so far.
struct LexState {
  int depth = 0;          // open brackets
  char quote = 0;         // inside a string opened by this quote
  bool triple = false;    // ... a triple-quoted one
  bool continued = false; // the line before ended in `\`
};

// Scans one line (without its line end), updating `s`; returns whether a `?`
// occurs in code (not in a string or comment): Python has no such token, IPython's help does.
bool scan_line(std::string_view line, LexState& s) {
  bool question = false, comment = false;
  for (std::size_t i = 0; i < line.size();) {
    char c = line[i];
    if (s.quote != 0) {
      if (c == '\\') {
        i += 2;
      } else if (c == s.quote && (!s.triple || line.substr(i, 3) == std::string(3, c))) {
        i += s.triple ? 3 : 1;
        s.quote = 0;
      } else {
        ++i;
      }
      continue;
    }
    if (c == '#') {
      comment = true;
      break;
    }
    if (c == '"' || c == '\'') {
      s.triple = line.substr(i, 3) == std::string(3, c);
      s.quote = c;
      i += s.triple ? 3 : 1;
      continue;
    }
    if (c == '(' || c == '[' || c == '{') ++s.depth;
    if ((c == ')' || c == ']' || c == '}') && s.depth > 0) --s.depth;
    question |= c == '?';
    ++i;
  }
  bool backslash = !comment && !line.empty() && line.back() == '\\';
  if (s.quote != 0 && !s.triple && !backslash) s.quote = 0;  // a one-line string ends with its line
  s.continued = backslash;
  return question;
}

// `files = !ls` or `out = %timeit -o f()`: names, `=`, then a magic or shell escape.
bool assigns_magic(std::string_view t) {
  std::size_t i = 0;
  auto name_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == ','; };
  while (i < t.size() && (name_char(t[i]) || t[i] == ' ' || t[i] == '\t')) ++i;
  if (i == 0 || i >= t.size() || t[i] != '=') return false;
  ++i;
  while (i < t.size() && (t[i] == ' ' || t[i] == '\t')) ++i;
  return i < t.size() && (t[i] == '!' || t[i] == '%');
}

// A line magic written without its `%`, which IPython runs as one while
// automagic is on (its default): `pip install x`, `cd data`, `load_ext
// autoreload`, and the shell aliases IPython defines on POSIX (`ls -l`).
// Only where the line cannot be Python: the name, blanks, then a word, a path
// or an option (`pip install`, `cd ..`, `ls -l`), not an operator or a
// keyword that would continue an expression (`pip = 3`, `cd if x else y`).
bool automagic(std::string_view t) {
  static constexpr std::string_view kNames[] = {
      // line magics people type without `%`
      "pip", "conda", "mamba", "micromamba", "cd", "pwd", "env", "set_env", "load_ext", "reload_ext",
      "autoreload", "matplotlib", "pylab", "timeit", "run", "who", "whos", "reset", "history", "pushd",
      "popd", "bookmark", "store", "config", "xmode", "precision", "pdb", "alias", "unalias", "rehashx",
      // IPython's default shell aliases on POSIX
      "cat", "cp", "ldir", "lf", "lk", "ll", "ls", "lx", "mkdir", "mv", "rm", "rmdir", "clear", "less",
      "man", "more"};
  std::size_t i = 0;
  while (i < t.size() && (std::isalnum(static_cast<unsigned char>(t[i])) || t[i] == '_')) ++i;
  std::string_view name = t.substr(0, i);
  if (std::find(std::begin(kNames), std::end(kNames), name) == std::end(kNames)) return false;
  std::size_t blanks = i;
  while (i < t.size() && (t[i] == ' ' || t[i] == '\t')) ++i;
  if (i == blanks || i >= t.size()) return false;  // `pwd` alone, or `ls` alone, is a Python name too
  std::string_view rest = t.substr(i);
  std::size_t word = 0;
  while (word < rest.size() && (std::isalnum(static_cast<unsigned char>(rest[word])) || rest[word] == '_')) ++word;
  if (word > 0) {
    for (std::string_view keyword : {"if", "else", "and", "or", "not", "in", "is", "for", "async", "await", "lambda"})
      if (rest.substr(0, word) == keyword) return false;
    return true;
  }
  const char c = rest[0];
  if (c == '-') return rest.size() > 1 && (rest[1] == '-' || std::isalpha(static_cast<unsigned char>(rest[1])));
  return c == '/' || c == '~' || c == '$' || (c == '.' && rest.size() > 1 && (rest[1] == '.' || rest[1] == '/'));
}

// Where the strings of each cell's `source` are written in a notebook's JSON
// text (valid, as nlohmann read it): per cell of `cells`, the 1-based line of
// each string (one for a string source; none where a key is spelled with
// escapes). A walk over the text's structure, never deeper than the parser went.
class SourceLines {
 public:
  explicit SourceLines(std::string_view text) : t_(text) {}
  std::vector<std::vector<std::uint32_t>> read() {
    std::vector<std::vector<std::uint32_t>> cells;
    members([&](std::string_view key) {
      if (key != "cells" || peek() != '[') return skip();
      elements([&] {
        std::vector<std::uint32_t>& lines = cells.emplace_back();
        if (peek() != '{') return skip();
        members([&](std::string_view cell_key) {
          if (cell_key != "source") return skip();
          if (peek() == '"') {
            lines.push_back(line_);
            return skip();
          }
          if (peek() != '[') return skip();
          elements([&] {
            if (peek() == '"') lines.push_back(line_);
            skip();
          });
        });
      });
    });
    return cells;
  }

 private:
  char peek() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t' || t_[i_] == '\r' || t_[i_] == '\n')) line_ += t_[i_++] == '\n';
    return i_ < t_.size() ? t_[i_] : '\0';
  }
  std::string_view string() {  // at a '"': the raw text between the quotes
    std::size_t start = ++i_;
    while (i_ < t_.size() && t_[i_] != '"') i_ += t_[i_] == '\\' ? 2 : 1;
    std::string_view raw = t_.substr(start, std::min(i_, t_.size()) - start);
    ++i_;
    return raw;
  }
  void skip() {  // one value
    char c = peek();
    if (c == '"') (void)string();
    else if (c == '{') members([&](std::string_view) { skip(); });
    else if (c == '[') elements([&] { skip(); });
    else while (i_ < t_.size() && !std::strchr(",]} \t\r\n", t_[i_])) ++i_;
  }
  template <class F> void members(F&& member) {  // at a '{'
    ++i_;
    while (peek() == '"') {
      std::string_view key = string();
      if (peek() == ':') ++i_;
      member(key);
      if (peek() == ',') ++i_;
    }
    if (peek() == '}') ++i_;
  }
  template <class F> void elements(F&& element) {  // at a '['
    ++i_;
    while (peek() != ']' && i_ < t_.size()) {
      element();
      if (peek() == ',') ++i_;
      else break;
    }
    if (peek() == ']') ++i_;
  }
  std::string_view t_;
  std::size_t i_ = 0;
  std::uint32_t line_ = 1;
};

std::string_view strip_cr(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}
}  // namespace

std::optional<Notebook> Notebook::parse(std::string_view bytes, std::string& error) {
  if (json_depth(bytes) > kMaxJsonDepth) {
    error = "not a notebook: JSON nested more than " + std::to_string(kMaxJsonDepth) + " levels deep";
    return std::nullopt;
  }
  Notebook nb;
  try {
    nb.doc_ = nlohmann::ordered_json::parse(bytes);
  } catch (const nlohmann::ordered_json::exception& e) {
    std::string what = e.what();
    if (std::size_t close = what.find("] "); what.starts_with("[json.exception") && close != std::string::npos)
      what.erase(0, close + 2);
    error = "not a notebook: not JSON (" + what + ")";
    return std::nullopt;
  }
  const auto& doc = nb.doc_;
  if (!doc.is_object()) {
    error = "not a notebook: the JSON is not an object";
    return std::nullopt;
  }
  auto version = doc.find("nbformat");
  auto cells = doc.find("cells");
  // Some exporters leave out the version (notebooks saved by Meta's Bento keep
  // only `orig_nbformat` in their metadata); a top-level `cells` list is the
  // nbformat 4 shape (3 keeps its cells under `worksheets`), and VS Code opens
  // such files, so they are read as 4. A cell that is not 4's shape is still refused below.
  bool unversioned_v4 = version == doc.end() && cells != doc.end() && cells->is_array();
  if (!unversioned_v4 && (version == doc.end() || !version->is_number_integer() || version->get<std::int64_t>() != 4)) {
    error = version == doc.end() ? "not nbformat 4: no `nbformat` version and no `cells` list"
                                 : "not nbformat 4: `nbformat` is " + version->dump() + ", only 4 is read";
    return std::nullopt;
  }
  if (cells == doc.end() || !cells->is_array()) {
    error = "not a notebook: no `cells` list";
    return std::nullopt;
  }
  auto index = std::make_shared<NotebookIndex>();
  std::vector<std::vector<std::uint32_t>> string_lines = SourceLines(bytes).read();
  for (std::size_t k = 0; k < cells->size(); ++k) {
    const auto& cell = (*cells)[k];
    std::string where = "cell " + std::to_string(k + 1) + ": ";
    if (!cell.is_object() || !cell.contains("cell_type") || !(*cell.find("cell_type")).is_string()) {
      error = where + "not a cell (an object with a `cell_type`)";
      return std::nullopt;
    }
    if (cell["cell_type"] != "code") continue;  // Markdown and raw cells are not Python
    auto source = cell.find("source");
    std::string text;
    bool list = false;
    std::vector<std::size_t> string_ends;  // where each string of `source` ends in `text`
    if (source != cell.end() && source->is_string()) {
      text = source->get<std::string>();
      string_ends.push_back(text.size());
    } else if (source != cell.end() && source->is_array()) {
      list = true;
      for (const auto& line : *source) {
        if (!line.is_string()) {
          error = where + "`source` is a list with an element that is not a string";
          return std::nullopt;
        }
        text += line.get_ref<const std::string&>();
        string_ends.push_back(text.size());
      }
    } else {
      error = where + "`source` is not a string or a list of strings";
      return std::nullopt;
    }
    if (text.starts_with("%%")) continue;  // a cell magic: the cell is not Python (%%bash, %%writefile)
    if (nb.source_.size() + text.size() + 10 > kMaxSourceBytes) {  // and an `if True:` line
      error = "notebook's code is larger than 256 MiB";
      return std::nullopt;
    }
    NotebookIndex::Cell c;
    c.number = static_cast<std::uint32_t>(k + 1);
    c.json_index = k;
    c.list_source = list;
    // IPython removes a cell's leading blank lines, then the indentation of its
    // first line from every line (inputtransformer2.leading_indent): an
    // indented cell runs. Here it becomes the body of an `if True:` written
    // between the cells, so that its lines keep their columns.
    {
      std::size_t first = 0;
      while (first < text.size()) {
        std::size_t eol = text.find('\n', first);
        std::string_view line = std::string_view(text).substr(first, eol == std::string::npos ? std::string::npos : eol - first);
        if (line.find_first_not_of(" \t\r") != std::string_view::npos || eol == std::string::npos) break;
        first = eol + 1;
      }
      if (first < text.size() && (text[first] == ' ' || text[first] == '\t')) nb.source_ += "if True:\n";
    }
    c.start = static_cast<std::uint32_t>(nb.source_.size());
    // blank the IPython lines, at the top level of the cell's Python only
    LexState state;
    bool magic_continues = false;
    for (std::size_t at = 0; at < text.size();) {
      std::size_t eol = text.find('\n', at);
      std::size_t next = eol == std::string::npos ? text.size() : eol + 1;
      std::string_view line = strip_cr(std::string_view(text).substr(at, next - at - (eol == std::string::npos ? 0 : 1)));
      std::size_t indent = line.find_first_not_of(" \t");
      std::string_view body = indent == std::string_view::npos ? std::string_view() : line.substr(indent);
      bool statement_start = state.depth == 0 && state.quote == 0 && !state.continued;
      bool magic = magic_continues;
      if (!magic && statement_start && !body.empty()) {
        LexState probe = state;
        magic = body.starts_with('%') || body.starts_with('!') || body.starts_with('?') || assigns_magic(body) || automagic(body) ||
                scan_line(line, probe);
      }
      std::string out(line);
      if (magic) {
        if (magic_continues) {
          std::fill(out.begin(), out.end(), ' ');  // the rest of a magic continued with `\`
        } else {
          std::size_t n = line.size() - indent;  // keep the indentation: a statement in its block
          out.replace(indent, n, n >= 3 ? "..." + std::string(n - 3, ' ') : "0" + std::string(n - 1, ' '));
        }
        magic_continues = line.ends_with('\\');
        auto start = static_cast<std::uint32_t>(nb.source_.size());
        c.magics.push_back({start, start + static_cast<std::uint32_t>(line.size()), std::string(line)});
      } else {
        scan_line(line, state);
      }
      nb.source_ += out;
      nb.source_ += text.substr(at + line.size(), next - at - line.size());  // the line end as it is
      at = next;
    }
    // each row's line in the file: the line of the string it starts in
    if (k < string_lines.size() && string_lines[k].size() == string_ends.size() && !string_ends.empty()) {
      for (std::size_t row_start = 0;;) {
        std::size_t s = std::upper_bound(string_ends.begin(), string_ends.end(), row_start) - string_ends.begin();
        c.file_lines.push_back(string_lines[k][std::min(s, string_ends.size() - 1)]);
        std::size_t eol = text.find('\n', row_start);
        if (eol == std::string::npos || eol + 1 >= text.size()) break;
        row_start = eol + 1;
      }
    }
    if (!nb.source_.ends_with('\n') || nb.source_.size() == c.start) {
      nb.source_ += '\n';
      c.added_newline = true;
    }
    c.end = static_cast<std::uint32_t>(nb.source_.size());
    index->cells.push_back(std::move(c));
  }
  // Jupyter writes one space of indentation; keep another a file was written with
  std::size_t nl = bytes.find('\n');
  if (nl != std::string_view::npos) {
    std::size_t spaces = 0;
    while (nl + 1 + spaces < bytes.size() && bytes[nl + 1 + spaces] == ' ') ++spaces;
    if (spaces > 0 && spaces <= 8) nb.indent_ = static_cast<int>(spaces);
  }
  nb.index_ = std::move(index);
  return nb;
}

std::string Notebook::cell_text(std::string_view text, const NotebookIndex::Cell& cell) {
  std::uint32_t end = cell.end - (cell.added_newline ? 1 : 0);
  if (cell.start > end || end > text.size()) return {};
  std::string out(text.substr(cell.start, end - cell.start));
  for (const NotebookIndex::Magic& m : cell.magics)
    if (m.start >= cell.start && m.start - cell.start + m.text.size() <= out.size())
      out.replace(m.start - cell.start, m.text.size(), m.text);
  return out;
}

std::string Notebook::write(std::string_view fixed, const NotebookIndex& index) const {
  nlohmann::ordered_json doc = doc_;
  for (std::size_t k = 0; k < index.cells.size() && k < index_->cells.size(); ++k) {
    const NotebookIndex::Cell& cell = index.cells[k];
    std::string text = cell_text(fixed, cell);
    if (text == cell_text(source_, index_->cells[k])) continue;  // an unchanged cell keeps its `source` as it is
    nlohmann::ordered_json& source = doc["cells"][cell.json_index]["source"];
    if (!cell.list_source) {
      source = text;
      continue;
    }
    source = nlohmann::ordered_json::array();
    for (std::size_t at = 0; at < text.size();) {
      std::size_t eol = text.find('\n', at);
      std::size_t next = eol == std::string::npos ? text.size() : eol + 1;
      source.push_back(text.substr(at, next - at));
      at = next;
    }
  }
  return doc.dump(indent_, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

std::string Notebook::diff(std::string_view fixed, const NotebookIndex& index, const std::string& path) const {
  std::string out;
  for (std::size_t k = 0; k < index.cells.size() && k < index_->cells.size(); ++k)
    out += unified_diff(cell_text(source_, index_->cells[k]), cell_text(fixed, index.cells[k]),
                        path + ":cell " + std::to_string(index.cells[k].number));
  return out;
}

}  // namespace ddplint
