// Editor buffers for the language server: LSP positions in the negotiated
// encoding, incremental edits, and a syntax tree kept up to date by
// incremental reparsing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "linter/lint.hpp"
#include "linter/source.hpp"
#include "linter/syntax.hpp"

namespace ddplint::lsp {

/// How LSP `Position.character` counts: UTF-8 bytes, UTF-16 code units (the
/// protocol's default) or UTF-32 code points. LSP 3.17, "Position".
enum class PositionEncoding : std::uint8_t { Utf8, Utf16, Utf32 };

/// The protocol's name for an encoding: "utf-8", "utf-16" or "utf-32".
std::string_view to_string(PositionEncoding e);

/// An LSP position: 0-based line and 0-based character offset in the encoding.
struct TextPosition {
  std::uint32_t line = 0;
  std::uint32_t character = 0;
  friend bool operator==(const TextPosition&, const TextPosition&) = default;
};

/// Byte offset of `p` in `text`. Out-of-range input is clamped, as the spec
/// asks: a character past the line's end means the line's end (its
/// terminator excluded), a line past the last means the end of the text, and a
/// character inside a multi-byte or surrogate-pair code point means the start
/// of that code point.
std::uint32_t offset_at(std::string_view text, const LineIndex& lines, TextPosition p, PositionEncoding enc);

/// LSP position of byte `offset` (clamped to the text) in `enc`.
TextPosition position_at(std::string_view text, const LineIndex& lines, std::uint32_t offset, PositionEncoding enc);

/// One open buffer. Owns its text; edits keep its tree reusable so that the
/// next parse is incremental.
class Document {
 public:
  /// `uri` as the client sent it; `path` the file path shown in logs;
  /// `language` the grammar its text is parsed with (from the client's languageId).
  Document(std::string uri, std::string path, std::int64_t version, std::string text,
           Language language = Language::Python);

  /// The language the buffer is linted as.
  Language language() const { return language_; }

  const std::string& uri() const { return uri_; }
  std::int64_t version() const { return version_; }
  void set_version(std::int64_t v) { version_ = v; }
  const SourceFile& source() const { return source_; }
  std::string_view text() const { return source_.text(); }

  /// Replaces the text between `start` and `end` (LSP positions in `enc`,
  /// clamped; swapped if reversed) with `replacement`.
  void replace(TextPosition start, TextPosition end, std::string_view replacement, PositionEncoding enc);
  /// Replaces the whole text (a full-sync change).
  void replace_all(std::string text);

  /// The syntax tree of the current text. Reparses when the text changed since
  /// the last call, incrementally from the previous tree.
  const SyntaxTree& tree();

  /// Cached lint of the current text for settings generation `generation`
  /// (nullptr if the text or the settings changed since it was stored).
  const LintResult* cached_lint(std::uint64_t generation) const;
  /// Stores the lint of the current text for settings generation `generation`.
  const LintResult& store_lint(std::uint64_t generation, LintResult result);

 private:
  void set_text(std::string text);

  std::string uri_;
  Language language_ = Language::Python;
  std::int64_t version_ = 0;
  SourceFile source_;
  SyntaxTree tree_;
  bool tree_current_ = false;
  bool tree_reusable_ = false;       ///< tree_ holds every edit since its parse
  std::uint32_t tree_bom_ = 0;       ///< BOM length the tree was parsed with
  std::optional<LintResult> lint_;
  std::uint64_t lint_generation_ = 0;
};

}  // namespace ddplint::lsp
