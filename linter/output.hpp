// Output formats: functions of a file's sorted findings plus the file itself.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "linter/diagnostic.hpp"
#include "linter/source.hpp"

namespace ddplint {

/// Text format, one finding a line: `path:row:col: CODE message` (1-based row,
/// code-point column). With `color`, ANSI colours for path, code and severity.
std::string format_text(const SourceFile& file, const std::vector<Diagnostic>& diagnostics, bool color);

/// JSON object of one finding, with exactly the fields documented in the README:
/// code, name, severity, message, filename, location, end_location, fix, url.
nlohmann::ordered_json to_json(const SourceFile& file, const Diagnostic& d);

}  // namespace ddplint
