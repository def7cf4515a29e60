// SourceFile and LineIndex: the bytes of one Python file and the mapping from
// byte offsets to the positions users and editors see.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ddplint {

struct NotebookIndex;  // linter/notebook.hpp

/// True for a UTF-8 continuation byte (10xxxxxx): not the start of a code point.
inline bool is_utf8_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

/// True if `needle` occurs in `hay`. A needle with a byte that is rare in
/// source text (an upper-case letter, a digit, most punctuation) is found by
/// looking for that byte with memchr and comparing; others with glibc's
/// memmem. The first is several times cheaper than memmem for `NCCL` or
/// `CUDA_VISIBLE_DEVICES`; memmem is faster for `torch` on the standard
/// library, and both beat std::string_view::find, which stops at every
/// occurrence of the needle's first byte (measured with callgrind on
/// bench/ddplint_bench --lint-only and bench/speed.py --only 2).
bool contains_text(std::string_view hay, std::string_view needle);

/// A 1-based position as shown to users: `row` is the line number, `column`
/// counts Unicode code points from the start of the line (a tab is one).
struct Position {
  std::uint32_t row = 1;
  std::uint32_t column = 1;
  friend bool operator==(const Position&, const Position&) = default;
  friend auto operator<=>(const Position&, const Position&) = default;
};

/// Maps byte offsets of one buffer to rows and columns. Built in one pass over
/// the bytes; lookups are O(log lines). Line ends are `\n`, `\r\n` or a lone
/// `\r` (as Python accepts them).
class LineIndex {
 public:
  explicit LineIndex(std::string_view text);

  /// 1-based row and code-point column of byte `offset` (clamped to the text).
  /// O(distance from the previous call's offset) for offsets increasing along
  /// one line, O(column) otherwise.
  Position position(std::uint32_t offset) const;
  /// 0-based line number holding byte `offset`.
  std::uint32_t line_of(std::uint32_t offset) const;
  /// Byte offset where 0-based `line` starts.
  std::uint32_t line_start(std::uint32_t line) const { return starts_[line]; }
  /// Byte offset of the end of 0-based `line`, excluding its line terminator.
  std::uint32_t line_end(std::uint32_t line) const;
  /// Number of lines (a final line without terminator counts).
  std::uint32_t line_count() const { return static_cast<std::uint32_t>(starts_.size()); }
  /// Column of `offset` in UTF-16 code units from its line start (LSP's default encoding).
  std::uint32_t utf16_column(std::uint32_t offset) const;

 private:
  std::string_view text_;
  std::vector<std::uint32_t> starts_;
  std::uint32_t bom_ = 0;  // a leading BOM is not a column
  // position()'s last answer, to go on from (not safe for concurrent calls,
  // like SourceFile::lines(): a source belongs to one thread)
  mutable std::uint32_t memo_line_ = UINT32_MAX, memo_offset_ = 0, memo_column_ = 1;
};

/// Why a file's bytes cannot be linted as Python source.
enum class DecodeError { None, Binary, InvalidUtf8, TooLarge };

/// One Python source file: its bytes, the path as given by the user, and its
/// line index. The bytes are owned; `text()` views stay valid for the object's
/// lifetime (the object is not copyable, only movable).
class SourceFile {
 public:
  /// Builds a source from bytes already in memory (a file, stdin or an editor
  /// buffer). `path` is the name shown in findings.
  SourceFile(std::string path, std::string bytes);
  SourceFile(SourceFile&&) noexcept = default;
  SourceFile& operator=(SourceFile&&) noexcept = default;
  SourceFile(const SourceFile&) = delete;
  SourceFile& operator=(const SourceFile&) = delete;

  const std::string& path() const { return path_; }
  std::string_view text() const { return bytes_; }
  /// The line index, built on first use (a file the prefilter skips never
  /// needs one). Not safe to call for the first time from two threads at once;
  /// a SourceFile belongs to one thread at a time.
  const LineIndex& lines() const {
    if (!index_) index_.emplace(std::string_view(bytes_));
    return *index_;
  }
  /// Bytes of a leading UTF-8 byte-order mark (0 or 3); parsing starts after it.
  std::uint32_t bom_length() const { return bom_; }

  /// For the virtual source of a Jupyter notebook (linter/notebook.hpp): where
  /// its cells lie, so that output shows `cell N:row:col` and fixes stay in a
  /// cell; null for any other source.
  const std::shared_ptr<const NotebookIndex>& notebook() const { return notebook_; }
  /// Marks this source as a notebook's virtual source laid out as `index`.
  void set_notebook(std::shared_ptr<const NotebookIndex> index) { notebook_ = std::move(index); }

  /// Checks that the bytes can be parsed: at most kMaxSourceBytes, no NUL
  /// byte (binary), valid UTF-8, and, over kTokenCheckBytes, at most
  /// kMaxParseTokens estimated tokens (DecodeError::TooLarge).
  /// On failure `detail` (if given) receives a human-readable location such as
  /// "invalid UTF-8 byte 0xff at line 3".
  DecodeError check_decodable(std::string* detail = nullptr) const;

 private:
  std::string path_;
  std::string bytes_;
  std::uint32_t bom_ = 0;
  mutable std::optional<LineIndex> index_;
  std::shared_ptr<const NotebookIndex> notebook_;
};

/// Largest file ddplint parses, in bytes (tree-sitter offsets are 32-bit; files
/// beyond this are reported, not linted). 256 MiB.
inline constexpr std::size_t kMaxSourceBytes = 256u * 1024u * 1024u;

/// Most tokens (estimated by estimated_tokens) a file over kTokenCheckBytes
/// may have to be parsed: 8 million. Parsing and modelling cost about 254
/// bytes of memory per token (a 16 MiB file of `x=1` lines, 16.8 million
/// tokens, peaked at 4.27 GB: `/usr/bin/time -f %M build/release/ddplint`),
/// so this bounds one file's memory at about 2 GB; ordinary code is about one
/// token per 4 to 5 bytes, so files up to 30 MB or more pass.
inline constexpr std::size_t kMaxParseTokens = 8'000'000;
/// Files up to this size (4 MiB, at most ~1 GB to parse at one token per
/// byte) are not counted.
inline constexpr std::size_t kTokenCheckBytes = 4u * 1024u * 1024u;

/// A quick over-estimate of the number of tokens in `text`: each run of
/// identifier or number characters, each other non-blank byte and each line
/// break counts one (words inside strings and comments count too). O(n).
std::size_t estimated_tokens(std::string_view text);

/// Reads a whole regular file of at most kMaxSourceBytes. Returns std::nullopt
/// and sets `error` (strerror text, "not a regular file" for FIFOs and devices,
/// "is a directory", or "file is larger than 256 MiB") on failure; never blocks
/// on a FIFO.
std::optional<std::string> read_file(const std::string& path, std::string& error);

/// Reads an open stream (standard input) to its end, at most kMaxSourceBytes:
/// std::nullopt and `error` set on a read error or when the input is larger.
std::optional<std::string> read_stream(std::FILE* f, std::string& error);

/// Replaces the contents of the file at `path` with `text`, atomically: the
/// bytes go to a temporary file beside it (same folder, so the rename cannot
/// cross file systems), which takes the original's owner, group, permission
/// bits and extended attributes (POSIX ACLs included) and then replaces it
/// with rename(2). A read-only file, or one with several hard links (which
/// the rename would split), is not written. A symbolic link is followed: its target is
/// replaced. Before the rename the file is read again and must still equal
/// `expected` (it was not changed by someone else since it was linted). On any
/// failure (read-only folder, disk full, changed file) the original is left
/// untouched, the temporary file removed, and false returned with `error` set.
bool write_file_atomically(const std::string& path, std::string_view expected, std::string_view text,
                           std::string& error);

}  // namespace ddplint
