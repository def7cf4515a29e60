// `# noqa` suppressions: per line and per file.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "linter/diagnostic.hpp"

namespace ddplint {

class SemanticModel;

/// The noqa comments of one file.
/// - `# noqa` on a line silences every finding that starts on that line;
/// - `# noqa: DDP401, DDP402` silences those codes there;
/// - `# ddplint: noqa` in the file's header comment block (comments before the
///   first statement other than the module docstring) silences the file, and
///   `# ddplint: noqa: DDP101` silences that code in the file.
/// Codes are matched exactly and case-sensitively; unknown codes are ignored.
struct Suppressions {
  struct Entry {
    bool all = false;
    std::vector<std::string> codes;
  };
  Entry file;
  std::unordered_map<std::uint32_t, Entry> lines;  ///< keyed by 0-based line

  /// Collects the suppressions from the model's comment nodes (never from strings).
  static Suppressions collect(const SemanticModel& model);
  /// True if `d` is silenced.
  bool suppresses(const Diagnostic& d, std::uint32_t line) const;
};

/// Parses one comment's text. Returns true and fills `entry` if it holds a
/// noqa directive; `file_level` selects the `ddplint: noqa` form.
bool parse_noqa(std::string_view comment, bool file_level, Suppressions::Entry& entry);

}  // namespace ddplint
