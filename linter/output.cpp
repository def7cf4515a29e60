#include "linter/output.hpp"

namespace ddplint {

std::string format_text(const SourceFile& file, const std::vector<Diagnostic>& diagnostics, bool color) {
  std::string out;
  const char* bold = color ? "\x1b[1m" : "";
  const char* reset = color ? "\x1b[0m" : "";
  const char* cyan = color ? "\x1b[36m" : "";
  for (const Diagnostic& d : diagnostics) {
    Position p = file.lines().position(d.start);
    const char* sev = "";
    if (color) {
      sev = d.rule->severity == Severity::Error ? "\x1b[1;31m" : d.rule->severity == Severity::Warning ? "\x1b[1;33m" : "\x1b[1;34m";
    }
    out += bold;
    out += file.path();
    out += reset;
    out += cyan;
    out += ':';
    out += reset;
    out += std::to_string(p.row);
    out += cyan;
    out += ':';
    out += reset;
    out += std::to_string(p.column);
    out += cyan;
    out += ':';
    out += reset;
    out += ' ';
    out += sev;
    out += d.rule->code;
    out += reset;
    out += ' ';
    out += d.message;
    out += '\n';
  }
  return out;
}

nlohmann::ordered_json to_json(const SourceFile& file, const Diagnostic& d) {
  Position start = file.lines().position(d.start);
  Position end = file.lines().position(d.end);
  nlohmann::ordered_json j;
  j["code"] = d.rule->code;
  j["name"] = d.rule->name;
  j["severity"] = to_string(d.rule->severity);
  j["message"] = d.message;
  j["filename"] = file.path();
  j["location"] = {{"row", start.row}, {"column", start.column}};
  j["end_location"] = {{"row", end.row}, {"column", end.column}};
  if (d.fix) {
    nlohmann::ordered_json edits = nlohmann::ordered_json::array();
    for (const Edit& e : d.fix->edits) {
      Position a = file.lines().position(e.start), b = file.lines().position(e.end);
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

}  // namespace ddplint
