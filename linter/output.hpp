// Output formats: functions of a file's sorted findings plus the file itself.
#pragma once

#include <nlohmann/json.hpp>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "linter/diagnostic.hpp"
#include "linter/source.hpp"

namespace ddplint {

/// Text format, one finding a line: `path:row:col: CODE [*] [severity] message`
/// (1-based row, code-point column; `[*]` when --fix applies the finding's
/// fix: a safe one, or any with `unsafe_fixes`, as --unsafe-fixes makes it). With `color`, ANSI colours for path, code and severity.
/// In every format, a notebook's finding (file.notebook()) is placed in its
/// cell: `path:cell N:row:col`, rows counted from the cell's first line.
std::string format_text(const SourceFile& file, const std::vector<Diagnostic>& diagnostics, bool color,
                        bool unsafe_fixes = false);

/// `concise` format: as format_text, with short_message() for the message.
std::string format_concise(const SourceFile& file, const std::vector<Diagnostic>& diagnostics, bool color,
                        bool unsafe_fixes = false);

/// A finding's message in at most about 100 bytes, for one-line output: the
/// clause before its first `: ` or `; ` (messages read "what: why; instead"),
/// without parenthesised asides if still longer, then its first comma
/// clause, and only then cut at a word and marked `...`.
std::string short_message(std::string_view message);

/// `path` for a terminal: control bytes (newline, escape, ...) written as
/// `\xNN`, so that a file name cannot move the cursor, recolour the terminal
/// or split a finding's line (found by hostile testing). Other bytes as they are.
std::string display_path(std::string_view path);

/// Any text from the user (a rule code or name on the command line) for an
/// error message: control bytes written as `\xNN`, as display_path() writes them.
std::string printable(std::string_view text);

/// JSON object of one finding, with exactly the fields documented in the README:
/// code, name, severity, message, short_message, filename, location,
/// end_location, fix, url; and `cell` (its number) for a notebook's finding.
nlohmann::ordered_json to_json(const SourceFile& file, const Diagnostic& d);

/// `full` format: the text line, then the source line(s) with the finding's
/// range underlined (`^`), then the fix as a `= help:` line.
std::string format_full(const SourceFile& file, const std::vector<Diagnostic>& diagnostics, bool color,
                        bool unsafe_fixes = false);

/// `grouped` format: the path on its own line, then `  row:col CODE [*] [severity] message`
/// lines, then a blank line. Empty when there is no finding.
std::string format_grouped(const SourceFile& file, const std::vector<Diagnostic>& diagnostics, bool color,
                        bool unsafe_fixes = false);

/// `github` format: one GitHub Actions workflow command per finding
/// (`::warning title=...,file=...,line=...,col=...,endLine=...,endColumn=...::message`),
/// escaped as the Actions toolkit escapes (data: % CR LF; properties also : ,).
/// Severity: error -> error, warning -> warning, info -> notice.
std::string format_github(const SourceFile& file, const std::vector<Diagnostic>& diagnostics);

/// GitHub's escaping of a workflow command's message (`%`, CR, LF).
std::string github_escape_data(std::string_view s);
/// GitHub's escaping of a workflow command's property value (also `:` and `,`).
std::string github_escape_property(std::string_view s);

/// One finding's SARIF 2.1.0 `result` object. `uri` is the file's path
/// relative to the repository root (forward slashes, percent-encoded), with
/// uriBaseId `%SRCROOT%`; columns are Unicode code points (the run's
/// columnKind), end column exclusive. `occurrence` counts earlier findings of
/// the same rule on identical line text in the file: it keeps the
/// partialFingerprints of repeated lines distinct. A notebook's finding has
/// the lines of the `.ipynb` where its rows are written as its region (none
/// when unknown), its cell and in-cell region as `properties`, and no fix.
nlohmann::ordered_json sarif_result(const SourceFile& file, const Diagnostic& d, std::size_t rule_index,
                                    const std::string& uri, std::size_t occurrence);

/// A SARIF 2.1.0 log with one run: the tool (every rule in `rules`, with id,
/// name, short and full descriptions, help text and Markdown, helpUri and
/// default level) and `results`. `root_uri` (a `file://` URI ending in `/`) is
/// what `%SRCROOT%` stands for.
nlohmann::ordered_json sarif_log(std::span<const Rule> rules, nlohmann::ordered_json results, const std::string& root_uri);

/// Writes a JSON document whose one array is given element by element, so that
/// a run's findings need not all be held: the output is byte for byte
/// `document.dump(2)` (invalid UTF-8 replaced) with the elements pushed in the
/// array at `array_pointer` (which must hold an empty array in `document`).
/// Nothing is written before the first push() or finish(); call finish() once.
class StreamedJsonArray {
 public:
  /// `out` must stay open until finish(); `array_pointer` e.g. "" (the
  /// document is the array) or "/runs/0/results". Throws nlohmann's
  /// out_of_range if the pointer does not name an array of `document`.
  StreamedJsonArray(std::FILE* out, nlohmann::ordered_json document, const std::string& array_pointer);
  /// Appends one element.
  void push(const nlohmann::ordered_json& element);
  /// Writes the rest of the document and a final newline.
  void finish();

 private:
  void start();
  std::FILE* out_;
  std::string prefix_, suffix_, indent_;  // text around the array's elements; their indentation
  bool started_ = false, any_ = false;
};

/// A path as a relative URI reference: `/` separators, each byte outside
/// RFC 3986's unreserved set and `/` percent-encoded.
std::string uri_path_encode(std::string_view path);

}  // namespace ddplint
