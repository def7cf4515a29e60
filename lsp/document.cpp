#include "lsp/document.hpp"

#include <algorithm>
#include <utility>

namespace ddplint::lsp {

namespace {

// Bytes of the code point whose lead byte is `c` (1 for a stray continuation byte).
std::uint32_t sequence_length(unsigned char c) {
  if (c >= 0xF0) return 4;
  if (c >= 0xE0) return 3;
  if (c >= 0xC0) return 2;
  return 1;
}

std::uint32_t units_of(unsigned char lead, PositionEncoding enc) {
  switch (enc) {
    case PositionEncoding::Utf8: return sequence_length(lead);
    case PositionEncoding::Utf16: return lead >= 0xF0 ? 2 : 1;
    case PositionEncoding::Utf32: return 1;
  }
  return 1;
}

// tree-sitter's point of a byte offset: rows split at '\n' (and at a lone '\r',
// which parse_python gives the parser as '\n'), columns in bytes.
TSPoint ts_point(std::string_view text, std::uint32_t offset) {
  TSPoint p{0, 0};
  std::uint32_t line_start = 0;
  for (std::uint32_t i = 0; i < offset; ++i) {
    if (text[i] == '\n' || (text[i] == '\r' && (i + 1 == text.size() || text[i + 1] != '\n'))) {
      ++p.row;
      line_start = i + 1;
    }
  }
  p.column = offset - line_start;
  return p;
}
}  // namespace

std::string_view to_string(PositionEncoding e) {
  switch (e) {
    case PositionEncoding::Utf8: return "utf-8";
    case PositionEncoding::Utf16: return "utf-16";
    case PositionEncoding::Utf32: return "utf-32";
  }
  return "utf-16";
}

std::uint32_t offset_at(std::string_view text, const LineIndex& lines, TextPosition p, PositionEncoding enc) {
  if (p.line >= lines.line_count()) return static_cast<std::uint32_t>(text.size());
  std::uint32_t i = lines.line_start(p.line), end = lines.line_end(p.line);
  std::uint32_t units = 0;
  while (i < end) {
    auto c = static_cast<unsigned char>(text[i]);
    std::uint32_t n = std::min(sequence_length(c), end - i);
    std::uint32_t u = units_of(c, enc);
    if (units + u > p.character) break;  // p is at or inside this code point
    units += u;
    i += n;
  }
  return i;
}

TextPosition position_at(std::string_view text, const LineIndex& lines, std::uint32_t offset, PositionEncoding enc) {
  offset = std::min<std::uint32_t>(offset, static_cast<std::uint32_t>(text.size()));
  std::uint32_t line = lines.line_of(offset);
  std::uint32_t units = 0;
  for (std::uint32_t i = lines.line_start(line); i < offset; ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (enc == PositionEncoding::Utf8) ++units;
    else if (!is_utf8_continuation(c)) units += units_of(c, enc);
  }
  return {line, units};
}

Document::Document(std::string uri, std::string path, std::int64_t version, std::string text, Language language)
    : uri_(std::move(uri)), language_(language), version_(version), source_(std::move(path), std::move(text)) {}

void Document::set_text(std::string text) {
  source_ = SourceFile(source_.path(), std::move(text));
  tree_current_ = false;
  lint_.reset();
}

void Document::replace(TextPosition start, TextPosition end, std::string_view replacement, PositionEncoding enc) {
  std::string_view old = source_.text();
  std::uint32_t a = offset_at(old, source_.lines(), start, enc);
  std::uint32_t b = offset_at(old, source_.lines(), end, enc);
  if (a > b) std::swap(a, b);
  TSInputEdit edit{};
  edit.start_byte = a;
  edit.old_end_byte = b;
  edit.new_end_byte = a + static_cast<std::uint32_t>(replacement.size());
  edit.start_point = ts_point(old, a);
  edit.old_end_point = ts_point(old, b);
  std::string next;
  next.reserve(old.size() - (b - a) + replacement.size());
  next.append(old.substr(0, a)).append(replacement).append(old.substr(b));
  edit.new_end_point = ts_point(next, edit.new_end_byte);
  if (tree_reusable_) tree_.edit(edit);
  set_text(std::move(next));
}

void Document::replace_all(std::string text) {
  tree_reusable_ = false;
  set_text(std::move(text));
}

const SyntaxTree& Document::tree() {
  if (!tree_current_ && source_.check_decodable() != DecodeError::None) {
    // not parsed at all: binary, not UTF-8, or too large to parse within
    // bounded memory (a buffer grown by edits; found by hostile testing)
    tree_ = SyntaxTree{};
    tree_reusable_ = false;
    tree_current_ = true;
  }
  if (!tree_current_) {
    // a launch script is parsed afresh each time (small; an incremental
    // tree-sitter-bash parse once kept a finding a fresh parse does not have)
    bool reuse = tree_reusable_ && tree_bom_ == source_.bom_length() && language_ == Language::Python;
    tree_ = parse_source(source_, language_, reuse ? &tree_ : nullptr);
    tree_bom_ = source_.bom_length();
    tree_reusable_ = static_cast<bool>(tree_);
    tree_current_ = true;
  }
  return tree_;
}

const LintResult* Document::cached_lint(std::uint64_t generation) const {
  return lint_ && lint_generation_ == generation ? &*lint_ : nullptr;
}

const LintResult& Document::store_lint(std::uint64_t generation, LintResult result) {
  lint_ = std::move(result);
  lint_generation_ = generation;
  return *lint_;
}

}  // namespace ddplint::lsp
