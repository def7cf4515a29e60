// Applying fixes: choosing a non-overlapping set and rewriting the text.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "linter/diagnostic.hpp"

namespace ddplint {

/// The edits of every fix among `diagnostics` that may be applied together, in
/// document order: safe fixes (and unsafe ones too if `include_unsafe`), each
/// taken whole or not at all, skipping a fix whose edits overlap or touch an
/// edit already taken (two insertions at one offset would have no defined
/// order). The result is sorted by offset and non-overlapping.
std::vector<Edit> applicable_edits(std::span<const Diagnostic> diagnostics, bool include_unsafe);

/// `text` with `edits` applied. `edits` must be sorted by offset and must not
/// overlap (as applicable_edits returns them); offsets are bytes of `text`.
std::string apply_edits(std::string_view text, std::span<const Edit> edits);

}  // namespace ddplint
