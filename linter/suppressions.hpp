// `# noqa` suppressions: per line and per file.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <optional>
#include <string_view>

#include "linter/diagnostic.hpp"
#include "linter/source.hpp"
#include "linter/syntax.hpp"

namespace ddplint {

class SemanticModel;
class LaunchModel;

/// One noqa directive of a file, and what it suppressed in the lint (for
/// the unused-noqa rule, DDP002).
struct NoqaUse {
  std::uint32_t comment_start = 0, comment_end = 0;  ///< the comment's bytes
  std::uint32_t directive_start = 0;  ///< the `#` that starts the directive (`# noqa`, `# ddplint: noqa`)
  bool file_level = false;            ///< `# ddplint: noqa...`
  bool blanket = false;               ///< no codes: silences everything
  bool used = false;                  ///< suppressed some finding
  struct Code {
    std::string code;  ///< upper-cased (`ddp401` is DDP401)
    std::uint32_t start = 0, end = 0;  ///< its bytes in the file
    bool used = false;                 ///< suppressed a finding
  };
  std::vector<Code> codes;
};

/// What a rule's check_noqa sees: the file's directives after the lint, and
/// which rules ran on it (a code of a rule that did not run is neither used
/// nor unused: unknown).
struct NoqaReport {
  const std::vector<NoqaUse>& uses;
  std::span<const Rule> rules;
  const std::vector<bool>& ran;  ///< per rule of `rules`: it ran on this file
  std::string_view text;         ///< the file's text
};

/// The noqa comments of one file.
/// - `# noqa` on a line silences every finding that starts on that line;
/// - `# noqa: DDP401, DDP402` silences those codes there;
/// - `# ddplint: noqa` anywhere in the file silences the file (as Ruff's
///   `# ruff: noqa`), and `# ddplint: noqa: DDP101` silences that code in the file.
/// Codes match in any case (`ddp401` is DDP401); unknown codes are ignored.
struct Suppressions {
  struct Entry {
    bool all = false;
    std::vector<std::string> codes;
  };
  Entry file;
  std::unordered_map<std::uint32_t, Entry> lines;  ///< keyed by 0-based line
  /// Every directive, in file order; suppresses() marks what each one silenced.
  std::vector<NoqaUse> uses;

  /// Collects the suppressions from the model's comment nodes (never from strings).
  static Suppressions collect(const SemanticModel& model);
  /// The same for a shell script: from its `#` comments (the header block is
  /// the comments before the first command, shebang and `#SBATCH` lines included).
  static Suppressions collect(const LaunchModel& model);
  /// True if `d` is silenced on 0-based `line`; marks the directive (and code) that silenced it as used.
  bool suppresses(const Diagnostic& d, std::uint32_t line);

 private:
  std::unordered_map<std::uint32_t, std::vector<std::size_t>> uses_by_line_;  // line -> indices into uses
  std::vector<std::size_t> file_uses_;
  friend struct SuppressionsBuilder;
};

/// A noqa directive found in a comment, with where its codes are.
struct NoqaDirective {
  /// Byte range of one listed code, relative to the comment's first byte.
  struct Code {
    std::string_view code;
    std::uint32_t start = 0;
    std::uint32_t end = 0;
  };
  std::uint32_t hash = 0;   ///< offset of the directive's `#` in the comment
  /// offset where the code list starts (after `:` and spaces); 0 for a blanket `# noqa`
  std::uint32_t codes_start = 0;
  bool blanket = false;     ///< `# noqa` / `# noqa:` with no code: silences everything
  /// the listed codes in order: letters then digits, up to the first word that
  /// is not a code (`# noqa: DDP101 tiny loader` lists DDP101); empty when
  /// blanket, or when `# noqa:` is followed by no code (then it silences nothing)
  std::vector<Code> codes;
};

/// Finds the noqa directive in one comment's text (`# type: ignore  # noqa: X`
/// counts), or std::nullopt. `file_level` selects the `# ddplint: noqa` form.
std::optional<NoqaDirective> find_noqa(std::string_view comment, bool file_level);

/// Parses one comment's text. Returns true and fills `entry` if it holds a
/// noqa directive; `file_level` selects the `ddplint: noqa` form.
bool parse_noqa(std::string_view comment, bool file_level, Suppressions::Entry& entry);

/// The edit that silences `code` on 0-based `line` of `source` (parsed into
/// `tree`), as a "disable for this line" action would make it:
/// - a line whose comment already lists codes (`# noqa: A`) gets `, CODE`
///   after the last one, so the list stays valid;
/// - a line with another comment gets `  # noqa: CODE` after it;
/// - any other line gets `  # noqa: CODE` after its last non-blank byte.
/// std::nullopt when no comment can go there: the line ends inside a string
/// that continues on the next line, ends with a `\` continuation, is blank,
/// already has a blanket `# noqa`, or already lists `code`.
std::optional<Edit> noqa_edit(const SourceFile& source, const SyntaxTree& tree, std::uint32_t line,
                              std::string_view code);

/// The 0-based line where a `# noqa` for a finding that starts on `line` goes:
/// `line` itself, or, when it ends inside a string that runs on (a
/// triple-quoted string) or with a `\` continuation, the line where that ends
/// (as Ruff places noqa for multi-line strings and continuations). Suppression
/// reads a directive on either line.
std::uint32_t comment_line(const SourceFile& source, const SyntaxTree& tree, std::uint32_t line);

/// The edits that silence each of `diagnostics` where it starts, as
/// `--add-noqa` writes them (Ruff's `--add-noqa`): one edit per line, a
/// `  # noqa: A, B` comment or the codes added to the line's own list, in
/// code order, each code once (noqa_edit). Lines where no comment can go (a
/// string running on past the line, a `\` continuation) get none. Running it
/// again on the edited text gives no edit: every finding is then silenced.
std::vector<Edit> add_noqa_edits(const SourceFile& source, const std::vector<Diagnostic>& diagnostics);

/// The comment node covering byte `offset`, or a null node.
TSNode comment_at(const SyntaxTree& tree, std::uint32_t offset);

}  // namespace ddplint
