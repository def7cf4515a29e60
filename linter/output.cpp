#include "linter/output.hpp"

#include <algorithm>
#include <cstdio>

#include "linter/notebook.hpp"

namespace ddplint {

namespace {
// The row and column shown for byte `offset`: in a notebook, inside its cell
// (`cell` receives the cell's number; 0 for any other file). An end offset
// (`within` = the finding's start) is kept in the start's cell.
Position shown_position(const SourceFile& file, std::uint32_t offset, std::uint32_t& cell,
                        std::optional<std::uint32_t> within = std::nullopt) {
  if (!file.notebook()) {
    cell = 0;
    return file.lines().position(offset);
  }
  CellPosition c = cell_position(file, offset, within);
  cell = c.cell;
  return c.position;
}

// `row:col`, or `cell N:row:col` in a notebook (Ruff's form:
// https://github.com/astral-sh/ruff/issues/6673, `test.ipynb:cell 1:2:8`).
std::string shown_where(const SourceFile& file, std::uint32_t offset) {
  std::uint32_t cell = 0;
  Position p = shown_position(file, offset, cell);
  std::string where = std::to_string(p.row) + ":" + std::to_string(p.column);
  return cell == 0 ? where : "cell " + std::to_string(cell) + ":" + where;
}
}  // namespace

std::string display_path(std::string_view path) { return printable(path); }

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += ch;
    }
  }
  return out;
}

std::string short_message(std::string_view message) {
  constexpr std::size_t kMax = 100;
  // the clause before the first `: ` or `; ` outside backticks, quotes and brackets
  auto clause_end = [](std::string_view m, bool commas) {
    int depth = 0;
    char quote = 0;
    for (std::size_t i = 0; i + 1 < m.size(); ++i) {
      char c = m[i];
      if (quote) {
        if (c == quote) quote = 0;
      } else if (c == '`' || c == '"') {
        quote = c;
      } else if (c == '(' || c == '[' || c == '{') {
        ++depth;
      } else if (c == ')' || c == ']' || c == '}') {
        depth = std::max(0, depth - 1);
      } else if (depth == 0 && m[i + 1] == ' ' && (c == ':' || c == ';' || (commas && c == ','))) {
        return i;
      }
    }
    return m.size();
  };
  std::string out(message.substr(0, clause_end(message, false)));
  if (out.size() <= kMax) return out;
  // then without parenthesised asides (` (0, given by run.sh:2)`)
  std::string plain;
  int depth = 0;
  char quote = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    char c = out[i];
    if (quote == 0 && depth == 0 && (c == '`' || c == '"')) quote = c;
    else if (quote != 0 && c == quote) quote = 0;
    else if (quote == 0 && c == '(' && i > 0 && out[i - 1] == ' ') {
      ++depth;
      plain.pop_back();  // the space before the aside
      continue;
    } else if (quote == 0 && depth > 0 && c == ')') {
      --depth;
      continue;
    }
    if (depth == 0) plain += c;
  }
  if (plain.size() <= kMax) return plain;
  // then its first comma clause
  std::string first(std::string_view(plain).substr(0, clause_end(plain, true)));
  if (first.size() <= kMax) return first;
  // then cut at a word, marked
  std::size_t cut = first.rfind(' ', kMax - 3);
  if (cut == std::string::npos) cut = kMax - 3;
  return first.substr(0, cut) + "...";
}

namespace {
// `path:row:col: CODE [*] [severity] message`: [*] when --fix applies the
// finding's fix (a safe one), as Ruff marks it; severity in words, so it
// survives without colour (CI logs, pre-commit).
std::string finding_line(const SourceFile& file, const Diagnostic& d, bool color, std::string_view message,
                         bool with_path, bool unsafe_fixes) {
  const char* bold = color ? "\x1b[1m" : "";
  const char* reset = color ? "\x1b[0m" : "";
  const char* cyan = color ? "\x1b[36m" : "";
  const char* sev = "";
  if (color)
    sev = d.severity() == Severity::Error ? "\x1b[1;31m" : d.severity() == Severity::Warning ? "\x1b[1;33m" : "\x1b[1;34m";
  std::uint32_t cell = 0;
  Position p = shown_position(file, d.start, cell);
  std::string out;
  if (with_path) {
    out += bold;
    out += display_path(file.path());
    out += reset;
    out += cyan;
    out += ':';
    out += reset;
    if (cell != 0) {
      out += "cell " + std::to_string(cell);
      out += cyan;
      out += ':';
      out += reset;
    }
    out += std::to_string(p.row);
    out += cyan;
    out += ':';
    out += reset;
    out += std::to_string(p.column);
    out += cyan;
    out += ':';
    out += reset;
    out += ' ';
  }
  out += sev;
  out += d.rule->code;
  out += reset;
  if (d.fix && (d.fix->applicability == Fix::Applicability::Safe || unsafe_fixes)) out += " [*]";
  out += " [";
  out += sev;
  out += to_string(d.severity());
  out += reset;
  out += "] ";
  out += message;
  out += '\n';
  return out;
}
}  // namespace

std::string format_text(const SourceFile& file, const std::vector<Diagnostic>& diagnostics, bool color,
                        bool unsafe_fixes) {
  std::string out;
  for (const Diagnostic& d : diagnostics) out += finding_line(file, d, color, d.message, true, unsafe_fixes);
  return out;
}

std::string format_concise(const SourceFile& file, const std::vector<Diagnostic>& diagnostics, bool color,
                        bool unsafe_fixes) {
  std::string out;
  for (const Diagnostic& d : diagnostics) out += finding_line(file, d, color, short_message(d.message), true, unsafe_fixes);
  return out;
}

nlohmann::ordered_json to_json(const SourceFile& file, const Diagnostic& d) {
  std::uint32_t cell = 0, end_cell = 0;
  Position start = shown_position(file, d.start, cell);
  Position end = shown_position(file, d.end, end_cell, d.start);
  nlohmann::ordered_json j;
  j["code"] = d.rule->code;
  j["name"] = d.rule->name;
  j["severity"] = to_string(d.severity());
  j["message"] = d.message;
  j["short_message"] = short_message(d.message);
  j["filename"] = file.path();
  // a notebook's finding names its cell, and its rows count from the cell's
  // first line, as Ruff's JSON does (https://github.com/astral-sh/ruff/pull/7664)
  if (cell != 0) j["cell"] = cell;
  j["location"] = {{"row", start.row}, {"column", start.column}};
  j["end_location"] = {{"row", end.row}, {"column", end.column}};
  if (d.fix) {
    nlohmann::ordered_json edits = nlohmann::ordered_json::array();
    for (const Edit& e : d.fix->edits) {
      std::uint32_t ca = 0, cb = 0;
      Position a = shown_position(file, e.start, ca, d.start), b = shown_position(file, e.end, cb, d.start);
      edits.push_back({{"content", e.replacement},
                       {"location", {{"row", a.row}, {"column", a.column}}},
                       {"end_location", {{"row", b.row}, {"column", b.column}}}});
    }
    j["fix"] = {{"applicability", d.fix->applicability == Fix::Applicability::Safe ? "safe" : "unsafe"},
                {"message", d.fix->description},
                {"edits", std::move(edits)}};
  } else {
    j["fix"] = nullptr;
  }
  if (d.rule->url.empty()) j["url"] = nullptr;
  else j["url"] = d.rule->url;
  return j;
}

namespace {
const char* reset_if(bool color) { return color ? "\x1b[0m" : ""; }

// The text of 0-based `line` without its terminator.
std::string_view line_text(const SourceFile& file, std::uint32_t line) {
  const LineIndex& lines = file.lines();
  std::uint32_t a = lines.line_start(line), b = lines.line_end(line);
  if (line == 0) a = std::max(a, file.bom_length());
  return file.text().substr(a, b - a);
}


// Padding that lines up under `prefix` (tabs kept, one space per code point otherwise).
std::string pad_under(std::string_view prefix) {
  std::string out;
  for (unsigned char c : prefix) {
    if (c == '\t') out += '\t';
    else if (!is_utf8_continuation(c)) out += ' ';
  }
  return out;
}

std::size_t code_points(std::string_view s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += is_utf8_continuation(c) ? 0 : 1;
  return n;
}

std::string sarif_level(Severity s) {
  switch (s) {
    case Severity::Error: return "error";
    case Severity::Warning: return "warning";
    case Severity::Info: return "note";
  }
  return "warning";
}

// FNV-1a, 64 bits: a stable fingerprint of a finding's rule, file and line text.
std::uint64_t fnv1a(std::string_view s, std::uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// The first paragraph of a rule's "What it does" section, as one line.
std::string first_paragraph(std::string_view docs) {
  std::size_t at = docs.find("## What it does");
  if (at == std::string_view::npos) return {};
  std::string_view rest = docs.substr(docs.find('\n', at) + 1);
  std::size_t end = rest.find("\n\n");
  std::string out(rest.substr(0, end));
  for (char& c : out)
    if (c == '\n') c = ' ';
  return out;
}
}  // namespace

namespace {
// A source line longer than this (bytes) is shown as a window of at most this
// many bytes, with kSnippetContext bytes either side of the finding.
constexpr std::size_t kMaxSnippetBytes = 240;
constexpr std::size_t kSnippetContext = 60;
}  // namespace

std::string format_full(const SourceFile& file, const std::vector<Diagnostic>& diagnostics, bool color,
                        bool unsafe_fixes) {
  std::string out;
  const char* blue = color ? "\x1b[1;34m" : "";
  const char* red = color ? "\x1b[1;31m" : "";
  const char* reset = reset_if(color);
  for (const Diagnostic& d : diagnostics) {
    out += finding_line(file, d, color, d.message, true, unsafe_fixes);
    const LineIndex& lines = file.lines();
    std::uint32_t first = lines.line_of(d.start), last = lines.line_of(d.end > d.start ? d.end - 1 : d.start);
    // a notebook's lines are numbered in their cell, and a range stays in its cell
    std::uint32_t row_base = 0;
    if (const NotebookIndex* cells = file.notebook().get(); cells && cells->cell_of(d.start)) {
      const NotebookIndex::Cell& cell = *cells->cell_of(d.start);
      row_base = lines.line_of(cell.start);
      if (cell.end > cell.start) last = std::min(last, lines.line_of(cell.end - 1));
    }
    std::string number = std::to_string(last + 1 - row_base);
    std::string gutter(number.size() + 1, ' ');
    out += gutter + blue + "|" + reset + "\n";
    std::uint32_t shown_last = std::min(last, first + 4);  // at most 5 lines of a long range
    for (std::uint32_t l = first; l <= shown_last; ++l) {
      std::string_view line = line_text(file, l);
      std::uint32_t ls = lines.line_start(l) + (l == 0 ? file.bom_length() : 0);
      std::uint32_t a = l == first ? d.start - std::min(d.start, ls) : 0;
      std::uint32_t b = l == last ? d.end - std::min(d.end, ls) : static_cast<std::uint32_t>(line.size());
      a = std::min<std::uint32_t>(a, static_cast<std::uint32_t>(line.size()));
      b = std::clamp<std::uint32_t>(b, a, static_cast<std::uint32_t>(line.size()));
      // a long line is shown as a window around the finding: a snippet per
      // finding of a 1 MB line made the report quadratic (found by hostile testing)
      std::string window;
      std::string_view text = line;
      if (line.size() > kMaxSnippetBytes) {
        std::size_t from = a > kSnippetContext ? a - kSnippetContext : 0;
        std::size_t to = std::min<std::size_t>(line.size(), std::max<std::size_t>(b, a + 1) + kSnippetContext);
        to = std::min(to, from + kMaxSnippetBytes);
        while (from > 0 && is_utf8_continuation(static_cast<unsigned char>(line[from]))) --from;
        while (to < line.size() && is_utf8_continuation(static_cast<unsigned char>(line[to]))) ++to;
        std::string_view pre = from > 0 ? "..." : "";
        window = std::string(pre) + std::string(line.substr(from, to - from)) + (to < line.size() ? "..." : "");
        b = static_cast<std::uint32_t>(pre.size() + std::min<std::size_t>(b, to) - from);
        a = static_cast<std::uint32_t>(pre.size() + a - from);
        text = window;
      }
      std::string n = std::to_string(l + 1 - row_base);
      out += std::string(number.size() - n.size(), ' ') + blue + n + " |" + reset + " " + std::string(text) + "\n";
      std::size_t width = std::max<std::size_t>(1, code_points(text.substr(a, b - a)));
      out += gutter + blue + "|" + reset + " " + pad_under(text.substr(0, a)) + red + std::string(width, '^') + reset + "\n";
    }
    if (shown_last < last) out += gutter + blue + "|" + reset + " ...\n";
    out += gutter + blue + "|" + reset + "\n";
    if (d.fix) {
      out += gutter + "= help: " + d.fix->description +
             (d.fix->applicability == Fix::Applicability::Unsafe ? " (unsafe fix: --fix --unsafe-fixes)" : "") + "\n";
    }
    out += "\n";
  }
  return out;
}

std::string format_grouped(const SourceFile& file, const std::vector<Diagnostic>& diagnostics, bool color,
                        bool unsafe_fixes) {
  if (diagnostics.empty()) return "";
  const char* bold = color ? "\x1b[1m" : "";
  const char* reset = reset_if(color);
  std::string out = std::string(bold) + display_path(file.path()) + reset + ":\n";
  std::size_t width = 0;
  for (const Diagnostic& d : diagnostics) width = std::max(width, shown_where(file, d.start).size());
  for (const Diagnostic& d : diagnostics) {
    std::string where = shown_where(file, d.start);
    out += "  " + where + std::string(width - where.size(), ' ') + " " + finding_line(file, d, color, d.message, false, unsafe_fixes);
  }
  out += "\n";
  return out;
}

std::string github_escape_data(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '%') out += "%25";
    else if (c == '\r') out += "%0D";
    else if (c == '\n') out += "%0A";
    else out += c;
  }
  return out;
}

std::string github_escape_property(std::string_view s) {
  std::string out;
  for (char c : github_escape_data(s)) {
    if (c == ':') out += "%3A";
    else if (c == ',') out += "%2C";
    else out += c;
  }
  return out;
}

std::string format_github(const SourceFile& file, const std::vector<Diagnostic>& diagnostics) {
  std::string out;
  for (const Diagnostic& d : diagnostics) {
    Position a = file.lines().position(d.start), b = file.lines().position(d.end);
    const char* command = d.severity() == Severity::Error ? "error" : d.severity() == Severity::Warning ? "warning" : "notice";
    if (file.notebook()) {
      // a notebook's rows are not the lines of its file: the annotation is on
      // the line of the file where the row is written, and the message says
      // where in which cell
      CellPosition c = cell_position(file, d.start);
      out += "::" + std::string(command) + " title=" + github_escape_property("ddplint (" + std::string(d.rule->code) + ")") +
             ",file=" + github_escape_property(file.path()) +
             (c.file_line != 0 ? ",line=" + std::to_string(c.file_line) : std::string()) + "::" +
             github_escape_data(shown_where(file, d.start) + ": " + std::string(d.rule->code) + " " + d.message) + "\n";
      continue;
    }
    out += "::" + std::string(command) + " title=" + github_escape_property("ddplint (" + std::string(d.rule->code) + ")") +
           ",file=" + github_escape_property(file.path()) + ",line=" + std::to_string(a.row) +
           ",col=" + std::to_string(a.column) + ",endLine=" + std::to_string(b.row) +
           ",endColumn=" + std::to_string(b.column) + "::" +
           github_escape_data(std::string(d.rule->code) + " " + d.message) + "\n";
  }
  return out;
}

std::string uri_path_encode(std::string_view path) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : path) {
    bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
                 c == '_' || c == '~' || c == '/';
    if (plain) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

nlohmann::ordered_json sarif_result(const SourceFile& file, const Diagnostic& d, std::size_t rule_index,
                                    const std::string& uri, std::size_t occurrence) {
  Position a = file.lines().position(d.start), b = file.lines().position(d.end);
  std::string_view text = line_text(file, file.lines().line_of(d.start));
  // the line's text without surrounding blanks: moving code keeps its fingerprint
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  std::uint64_t h = fnv1a(d.rule->code);
  h = fnv1a(uri, fnv1a("\x1f", h));
  h = fnv1a(text, fnv1a("\x1f", h));
  char fingerprint[40];
  std::snprintf(fingerprint, sizeof fingerprint, "%016llx:%zu", static_cast<unsigned long long>(h), occurrence + 1);
  nlohmann::ordered_json region = {{"startLine", a.row}, {"startColumn", a.column}, {"endLine", b.row}, {"endColumn", b.column}};
  if (file.notebook()) {
    // SARIF regions count the lines of the artifact, the notebook's JSON: the
    // region is the lines of the file where the cell's rows are written (no
    // columns: those of the JSON strings are not the code's), and the cell
    // with the rows and columns inside it are properties (as Ruff's JSON gives them)
    CellPosition ca = cell_position(file, d.start), cb = cell_position(file, d.end, d.start);
    nlohmann::ordered_json location = {{"artifactLocation", {{"uri", uri}, {"uriBaseId", "%SRCROOT%"}}}};
    if (ca.file_line != 0)
      location["region"] = {{"startLine", ca.file_line}, {"endLine", std::max(ca.file_line, cb.file_line)}};
    nlohmann::ordered_json result = {
        {"ruleId", d.rule->code},
        {"ruleIndex", rule_index},
        {"level", sarif_level(d.severity())},
        {"message", {{"text", d.message}}},
        {"locations", {{{"physicalLocation", std::move(location)}}}},
        {"partialFingerprints", {{"ddplintLineHash/v1", fingerprint}}},
        {"properties",
         {{"shortMessage", short_message(d.message)},
          {"cell", ca.cell},
          {"cellRegion",
           {{"startLine", ca.position.row}, {"startColumn", ca.position.column}, {"endLine", cb.position.row},
            {"endColumn", cb.position.column}}}}}};
    return result;  // (no `fixes`: their regions would be inside the JSON strings)
  }
  nlohmann::ordered_json result = {
      {"ruleId", d.rule->code},
      {"ruleIndex", rule_index},
      {"level", sarif_level(d.severity())},
      {"message", {{"text", d.message}}},
      {"locations",
       {{{"physicalLocation",
          {{"artifactLocation", {{"uri", uri}, {"uriBaseId", "%SRCROOT%"}}}, {"region", std::move(region)}}}}}},
      {"partialFingerprints", {{"ddplintLineHash/v1", fingerprint}}},
      // the one-line form of the message (short_message), in the result's property bag (SARIF 2.1.0 §3.8)
      {"properties", {{"shortMessage", short_message(d.message)}}}};
  if (d.fix) {
    nlohmann::ordered_json replacements = nlohmann::ordered_json::array();
    for (const Edit& e : d.fix->edits) {
      Position x = file.lines().position(e.start), y = file.lines().position(e.end);
      replacements.push_back({{"deletedRegion", {{"startLine", x.row}, {"startColumn", x.column}, {"endLine", y.row}, {"endColumn", y.column}}},
                              {"insertedContent", {{"text", e.replacement}}}});
    }
    result["fixes"] = {{{"description", {{"text", d.fix->description}}},
                        {"artifactChanges",
                         {{{"artifactLocation", {{"uri", uri}, {"uriBaseId", "%SRCROOT%"}}},
                           {"replacements", std::move(replacements)}}}}}};
  }
  return result;
}

nlohmann::ordered_json sarif_log(std::span<const Rule> rules, nlohmann::ordered_json results, const std::string& root_uri) {
  nlohmann::ordered_json rule_list = nlohmann::ordered_json::array();
  for (const Rule& r : rules) {
    std::string summary(r.info.summary);
    std::string full = first_paragraph(r.info.docs);
    if (full.empty()) full = summary;
    nlohmann::ordered_json rule = {
        {"id", r.info.code},
        {"name", r.info.name},
        {"shortDescription", {{"text", summary}}},
        {"fullDescription", {{"text", full}}},
        {"help", {{"text", summary + " (ddplint --explain " + std::string(r.info.code) + ")"}, {"markdown", r.info.docs}}},
        {"defaultConfiguration", {{"level", sarif_level(r.info.severity)}}},
        {"properties", {{"tags", {"ddplint", "performance", "pytorch"}}}}};
    if (!r.info.url.empty()) rule["helpUri"] = r.info.url;
    rule_list.push_back(std::move(rule));
  }
  nlohmann::ordered_json run = {
      {"tool",
       {{"driver",
         {{"name", "ddplint"},
          {"version", DDPLINT_VERSION},
          {"semanticVersion", DDPLINT_VERSION},
          {"informationUri", "https://pytorch.org/docs/stable/notes/ddp.html"},
          {"rules", std::move(rule_list)}}}}},
      {"originalUriBaseIds", {{"%SRCROOT%", {{"uri", root_uri}}}}},
      {"columnKind", "unicodeCodePoints"},
      {"results", std::move(results)}};
  return {{"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
          {"version", "2.1.0"},
          {"runs", {std::move(run)}}};
}

StreamedJsonArray::StreamedJsonArray(std::FILE* out, nlohmann::ordered_json document, const std::string& array_pointer)
    : out_(out) {
  // dump the document with one sentinel element in the array: the text before
  // its line, its indentation and the text after it frame every element
  static constexpr std::string_view kSentinel = "\"ddplint-streamed-array-sentinel\"";
  nlohmann::ordered_json::json_pointer at(array_pointer);
  document.at(at).push_back("ddplint-streamed-array-sentinel");
  std::string text = document.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  std::size_t s = text.find(kSentinel);
  std::size_t line = text.rfind('\n', s) + 1;
  prefix_ = text.substr(0, line - 1);  // ends with `[`
  indent_ = text.substr(line, s - line);
  suffix_ = text.substr(s + kSentinel.size());  // `\n<spaces>]...`
}

void StreamedJsonArray::start() {
  if (started_) return;
  started_ = true;
  std::fwrite(prefix_.data(), 1, prefix_.size(), out_);
}

void StreamedJsonArray::push(const nlohmann::ordered_json& element) {
  start();
  std::string text = element.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  std::string framed = (any_ ? ",\n" : "\n") + indent_;
  for (char c : text) {
    framed += c;
    if (c == '\n') framed += indent_;  // JSON strings hold no raw newlines: only layout ones
  }
  std::fwrite(framed.data(), 1, framed.size(), out_);
  any_ = true;
}

void StreamedJsonArray::finish() {
  start();
  // an empty array is `[]` on one line, as dump() writes it
  std::string_view rest = suffix_;
  if (!any_) rest.remove_prefix(rest.find(']'));
  std::fwrite(rest.data(), 1, rest.size(), out_);
  std::fputc('\n', out_);
}

}  // namespace ddplint
