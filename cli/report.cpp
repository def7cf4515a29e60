// Stage 5 of a run: formats each file's findings, writes them in input order, and ends the report.
#include "cli/report.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace ddplint::cli {

namespace {
// The rule with `code` among `rules`, or nullptr.
const Rule* rule_with_code(std::span<const Rule> rules, std::string_view code) {
  for (const Rule& r : rules)
    if (r.info.code == code) return &r;
  return nullptr;
}

bool use_color() {
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color && *no_color) return false;
  return ::isatty(STDOUT_FILENO) == 1;
}

std::string plural(std::size_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

// True when the report file `output_file` is one of `paths` (the files to
// lint), or a .py file inside one of their folders, where it would be linted.
bool report_is_linted(const std::string& output_file, const std::vector<std::string>& paths) {
  struct stat out_st {};
  if (::stat(output_file.c_str(), &out_st) != 0 || !S_ISREG(out_st.st_mode)) return false;
  std::error_code ec;
  const std::filesystem::path out_real = std::filesystem::weakly_canonical(output_file, ec);
  for (const std::string& p : paths) {
    if (p == "-") continue;
    struct stat in_st {};
    if (::stat(p.c_str(), &in_st) != 0) continue;
    bool same = S_ISREG(in_st.st_mode) && in_st.st_dev == out_st.st_dev && in_st.st_ino == out_st.st_ino;
    if (!same && S_ISDIR(in_st.st_mode) && out_real.extension() == ".py") {
      // a .py report inside a linted folder would be found and linted there
      const std::filesystem::path dir_real = std::filesystem::weakly_canonical(p, ec);
      auto rel = out_real.lexically_relative(dir_real);
      same = !rel.empty() && *rel.begin() != "..";
    }
    if (same) return true;
  }
  return false;
}
}  // namespace

Report::Report(const CheckOptions& options, std::span<const Rule> rules) : options_(options), rules_(rules) {
  const std::string& format = options_.format;
  color_ = (format == "text" || format == "concise" || format == "full" || format == "grouped") &&
           options_.output_file.empty() && use_color();
  source_root_ = std::filesystem::current_path();
  for (std::filesystem::path p = source_root_; !p.empty(); p = p.parent_path()) {
    std::error_code ec;
    if (std::filesystem::exists(p / ".git", ec)) {
      source_root_ = p;
      break;
    }
    if (p == p.parent_path()) break;
  }
}

bool Report::open(const std::vector<std::string>& paths) {
  const std::string& output_file = options_.output_file;
  if (!output_file.empty()) {
    // opening the report truncates it: it must not be one of the files to lint
    // (`--fix -o train.py train.py` destroyed the source; found by hostile testing)
    if (report_is_linted(output_file, paths)) {
      std::fprintf(stderr, "ddplint: %s: the report file is one of the files to lint; nothing written\n",
                   output_file.c_str());
      return false;
    }
    report_ = std::fopen(output_file.c_str(), "w");
    if (report_ == nullptr) {
      std::fprintf(stderr, "ddplint: %s: cannot write the report: %s\n", output_file.c_str(), std::strerror(errno));
      return false;
    }
  }
  // --fix on standard input: stdout is the source, so the summary goes to stderr whatever happens
  if (options_.fix && std::find(paths.begin(), paths.end(), "-") != paths.end()) summary_to_stderr_ = true;
  if (!options_.diff && !options_.statistics) {
    bool stdin_fixed = options_.fix && std::find(paths.begin(), paths.end(), "-") != paths.end();  // stdout is the source
    if (options_.format == "json") {
      json_stream_.emplace(stdin_fixed ? stderr : report_, nlohmann::ordered_json::array(), "");
    } else if (options_.format == "sarif") {
      std::string root = source_root_.generic_string();
      json_stream_.emplace(report_,
                           sarif_log(rules_, nlohmann::ordered_json::array(),
                                     "file://" + uri_path_encode(root) + (root.back() == '/' ? "" : "/")),
                           "/runs/0/results");
    }
  }
  return true;
}

std::pair<std::string, bool> Report::sarif_uri(const std::string& path) const {
  std::error_code ec;
  std::filesystem::path abs = std::filesystem::absolute(path, ec).lexically_normal();
  std::filesystem::path rel = abs.lexically_relative(source_root_);
  if (!rel.empty() && *rel.begin() != "..") return {uri_path_encode(rel.generic_string()), true};
  return {"file://" + uri_path_encode(abs.generic_string()), false};
}

void Report::format(const SourceFile& shown, const LintResult& result, FileOutcome& o) const {
  const std::string& format = options_.format;
  o.findings = result.diagnostics.size();
  for (const auto& d : result.diagnostics) {
    if (!d.fix) continue;
    if (d.fix->applicability == Fix::Applicability::Safe || options_.unsafe_fixes) ++o.fixable;
    else ++o.hidden_fixable;
  }
  if (options_.statistics) {
    for (const auto& d : result.diagnostics) {
      auto& [n, fixable] = o.stats[d.rule->code];
      ++n;
      if (d.fix && (d.fix->applicability == Fix::Applicability::Safe || options_.unsafe_fixes)) ++fixable;
    }
  } else if (format == "json" || format == "json-lines") {
    for (const auto& d : result.diagnostics) o.json.push_back(to_json(shown, d));
    if (format == "json-lines") {
      for (const auto& item : o.json) o.out += item.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
      o.json.clear();
    }
  } else if (format == "sarif") {
    auto [uri, relative] = sarif_uri(shown.path());
    std::map<std::pair<std::string_view, std::string>, std::size_t> seen;  // (rule, line text) -> count
    for (const auto& d : result.diagnostics) {
      const Rule* rule = rule_with_code(rules_, d.rule->code);
      std::size_t index = rule ? static_cast<std::size_t>(rule - rules_.data()) : 0;
      const LineIndex& li = shown.lines();
      std::uint32_t line = li.line_of(d.start);
      std::string text(shown.text().substr(li.line_start(line), li.line_end(line) - li.line_start(line)));
      auto result_json = sarif_result(shown, d, index, uri, seen[{d.rule->code, text}]++);
      if (!relative) result_json["locations"][0]["physicalLocation"]["artifactLocation"].erase("uriBaseId");
      // the calls in other files that make the finding per step
      if (!d.related.empty()) {
        nlohmann::ordered_json related = nlohmann::ordered_json::array();
        for (std::size_t k = 0; k < d.related.size(); ++k) {
          const RelatedLocation& r = d.related[k];
          auto [related_uri, related_relative] = sarif_uri(r.path);
          nlohmann::ordered_json artifact = {{"uri", related_uri}};
          if (related_relative) artifact["uriBaseId"] = "%SRCROOT%";
          related.push_back({{"id", k},
                             {"physicalLocation", {{"artifactLocation", std::move(artifact)}, {"region", {{"startLine", r.line}}}}},
                             {"message", {{"text", r.message}}}});
        }
        result_json["relatedLocations"] = std::move(related);
      }
      o.json.push_back(std::move(result_json));
    }
  } else if (format == "full") {
    o.out = format_full(shown, result.diagnostics, color_, options_.unsafe_fixes);
  } else if (format == "grouped") {
    o.out = format_grouped(shown, result.diagnostics, color_, options_.unsafe_fixes);
  } else if (format == "concise") {
    o.out = format_concise(shown, result.diagnostics, color_, options_.unsafe_fixes);
  } else if (format == "github") {
    o.out = format_github(shown, result.diagnostics);
  } else {
    o.out = format_text(shown, result.diagnostics, color_, options_.unsafe_fixes);
  }
}

void Report::emit(FileOutcome& o) {
  if (!o.err.empty()) std::fwrite(o.err.data(), 1, o.err.size(), stderr);
  for (const auto& [code, counts] : o.stats) {
    stats_[code].first += counts.first;
    stats_[code].second += counts.second;
  }
  had_error_ = had_error_ || o.error;
  if (o.linted) ++files_;
  findings_ += o.findings;
  fixable_ += o.fixable;
  noqa_added_ += o.noqa_added;
  hidden_fixable_ += o.hidden_fixable;
  fixed_total_ += o.fixed_total;
  if (!o.diff.empty()) {
    any_diff_ = true;
    std::fwrite(o.diff.data(), 1, o.diff.size(), report_);
  }
  if (o.stdin_source) {
    summary_to_stderr_ = true;
    std::fwrite(o.stdin_fixed.data(), 1, o.stdin_fixed.size(), stdout);
    // the findings left go to stderr: stdout is the fixed source
    std::fwrite(o.out.data(), 1, o.out.size(), stderr);
    o.out.clear();
  }
  if (!o.out.empty()) std::fwrite(o.out.data(), 1, o.out.size(), report_);
  if (json_stream_)
    for (const auto& item : o.json) json_stream_->push(item);
  if (options_.show_fixes && !o.fixed.empty()) {
    fixes_report_ += "  " + o.path + ":\n";
    for (const auto& [code, n] : o.fixed) {
      const Rule* rule = rule_with_code(rules_, code);
      fixes_report_ += "    " + std::to_string(n) + " x " + std::string(code) + " (" +
                       (rule ? std::string(rule->info.name) : std::string()) + ")\n";
    }
  }
}

void Report::print_statistics(std::FILE* summary) const {
  std::vector<std::pair<std::string_view, std::pair<std::size_t, std::size_t>>> rows(stats_.begin(), stats_.end());
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  if (options_.format == "json" || options_.format == "json-lines") {
    // Ruff's `--statistics --output-format json`: one record per rule, most findings first
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& [code, c] : rows) {
      const Rule* r = rule_with_code(rules_, code);
      list.push_back({{"code", code},
                      {"name", r ? r->info.name : std::string_view()},
                      {"count", c.first},
                      {"fixable", c.second > 0},
                      {"fixable_count", c.second}});
    }
    std::string out = options_.format == "json" ? list.dump(2) + "\n" : std::string();
    if (options_.format == "json-lines")
      for (const auto& item : list) out += item.dump() + "\n";
    std::fwrite(out.data(), 1, out.size(), summary);
    return;
  }
  std::size_t count_w = 1, name_w = 1;
  for (const auto& [code, c] : rows) {
    count_w = std::max(count_w, std::to_string(c.first).size());
    if (const Rule* r = rule_with_code(rules_, code)) name_w = std::max(name_w, r->info.name.size());
  }
  for (const auto& [code, c] : rows) {
    const Rule* r = rule_with_code(rules_, code);
    std::string_view name = r ? r->info.name : std::string_view();
    // [*]: every finding of the rule has a fix --fix applies; [-]: some have
    const char* mark = c.second == 0 ? "" : c.second == c.first ? "[*]" : "[-]";
    std::fprintf(summary, "%*zu  %-7.*s  %-*.*s%s%s\n", static_cast<int>(count_w), c.first, static_cast<int>(code.size()),
                 code.data(), *mark ? static_cast<int>(name_w) : 0, static_cast<int>(name.size()), name.data(),
                 *mark ? "  " : "", mark);
  }
  if (!options_.quiet && (options_.format == "text" || options_.format == "concise"))
    std::fprintf(summary, "Found %s in %s.\n", plural(findings_, "finding").c_str(), plural(files_, "file").c_str());
}

void Report::print_fixable(std::FILE* summary) const {
  // Ruff's closing hint (crates/ruff/src/printer.rs): "[*] N fixable with the
  // `--fix` option (M hidden fixes can be enabled with the `--unsafe-fixes` option)."
  std::string hidden = hidden_fixable_ == 0 ? std::string()
                                            : std::to_string(hidden_fixable_) + (hidden_fixable_ == 1 ? " hidden fix" : " hidden fixes") +
                                                  " can be enabled with the `--unsafe-fixes` option";
  if (fixable_ > 0)
    std::fprintf(summary, "[*] %zu fixable with the `--fix` option%s.\n", fixable_, hidden.empty() ? "" : (" (" + hidden + ")").c_str());
  else if (!hidden.empty())
    std::fprintf(summary, "No fixes available (%s).\n", hidden.c_str());
}

int Report::finish() {
  const std::string& format = options_.format;
  std::FILE* summary = summary_to_stderr_ ? stderr : report_;
  if (options_.add_noqa) {
    // Ruff's wording: "Added N noqa directives."
    if (!options_.quiet)
      std::fprintf(summary, "Added %zu noqa %s.\n", noqa_added_, noqa_added_ == 1 ? "directive" : "directives");
  } else if (options_.diff) {
    if (!options_.quiet) std::fprintf(stderr, "Would fix %s.\n", plural(fixed_total_, "finding").c_str());
  } else if (options_.statistics) {
    print_statistics(summary);
  } else if (json_stream_) {  // json, sarif
    json_stream_->finish();
  } else if (format == "json-lines" || format == "github") {
    // one record per line, no summary
  } else if (!options_.quiet) {
    if (options_.fix)
      std::fprintf(summary, "Found %s (%zu fixed, %zu remaining) in %s.\n", plural(findings_ + fixed_total_, "finding").c_str(),
                   fixed_total_, findings_, plural(files_, "file").c_str());
    else
      std::fprintf(summary, "Found %s in %s.\n", plural(findings_, "finding").c_str(), plural(files_, "file").c_str());
    print_fixable(summary);
  }
  if (options_.show_fixes && options_.fix && !options_.quiet) {
    if (fixed_total_ > 0) std::fprintf(summary, "Fixed %s:\n%s", plural(fixed_total_, "finding").c_str(), fixes_report_.c_str());
    else std::fprintf(summary, "No fixes applied.\n");
  }
  bool report_failed = std::fflush(report_) != 0 || std::ferror(report_);
  if (report_ != stdout) report_failed = std::fclose(report_) != 0 || report_failed;
  if (report_failed || std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::fprintf(stderr, "ddplint: cannot write the output: %s\n", std::strerror(errno ? errno : EIO));
    return kExitError;
  }
  if (had_error_) return kExitError;
  if (options_.add_noqa) return kExitClean;
  if (options_.diff) return any_diff_ && !options_.exit_zero ? kExitFindings : kExitClean;
  // --exit-non-zero-on-fix: a file changed by --fix fails the run (Ruff's flag), --exit-zero or not
  if (options_.fix && options_.exit_non_zero_on_fix && fixed_total_ > 0 && !options_.exit_zero) return kExitFindings;
  if (findings_ > 0 && !options_.exit_zero) return kExitFindings;
  return kExitClean;
}

}  // namespace ddplint::cli
