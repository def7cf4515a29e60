#include "linter/lint_cache.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <filesystem>
#include <optional>

#include <nlohmann/json.hpp>

namespace ddplint {

using nlohmann::json;

namespace {

json caller_json(const ProjectCaller& c) {
  json before = json::array();
  for (const CallLink& l : c.before) before.push_back(json::array({l.path, l.line}));
  return json::array({c.path, c.line, std::move(before)});
}

}  // namespace

std::string fingerprint(const ProjectFacts* facts) {
  if (facts == nullptr) return "none";
  json j = json::object();
  json callees = json::object();
  for (const auto& [name, trains] : facts->callees) callees[name] = static_cast<int>(trains);
  j["callees"] = std::move(callees);
  json steps = json::object();
  for (const auto& [name, c] : facts->step_entries) steps[name] = caller_json(c);
  j["step_entries"] = std::move(steps);
  json loops = json::object();
  for (const auto& [name, c] : facts->loop_entries) loops[name] = caller_json(c);
  j["loop_entries"] = std::move(loops);
  json host = json::object();
  for (const auto& [name, params] : facts->host_parameters) host[name] = json(std::vector<std::string>(params.begin(), params.end()));
  j["host_parameters"] = std::move(host);
  json ddp = json::object();
  for (const auto& [name, d] : facts->ddp_parameters)
    ddp[name] = json::array({json(std::vector<std::string>(d.parameters.begin(), d.parameters.end())), caller_json(d.caller)});
  j["ddp_parameters"] = std::move(ddp);
  json command_line = json::object();
  for (const auto& [name, parameters] : facts->command_line_parameters)
    for (const auto& [parameter, values] : parameters) command_line[name][parameter] = json(values);
  j["command_line_parameters"] = std::move(command_line);
  json logged = json::object();
  for (const auto& [name, c] : facts->logged_calls) logged[name] = caller_json(c);
  j["logged_calls"] = std::move(logged);
  json uses = json::object();
  for (const auto& [name, u] : facts->result_uses) uses[name] = json::array({u.logging_only, caller_json(u.caller)});
  j["result_uses"] = std::move(uses);
  json forwarding = json::object();
  for (const auto& [name, args] : facts->forwarding_calls) forwarding[name] = json(std::vector<std::string>(args.begin(), args.end()));
  j["forwarding_calls"] = std::move(forwarding);
  j["device_selecting_calls"] = json(std::vector<std::string>(facts->device_selecting_calls.begin(),
                                                               facts->device_selecting_calls.end()));
  json datasets = json::object();
  for (const auto& [name, d] : facts->datasets) datasets[name] = json::array({d.in_memory, d.work, d.where});
  j["datasets"] = std::move(datasets);
  j["cuda"] = facts->cuda;
  j["importers"] = json::array({facts->indexed, facts->package_module, facts->imported, facts->imported_whole,
                                json(std::vector<std::string>(facts->imported_names.begin(), facts->imported_names.end()))});
  json launched = json::array();
  for (const LaunchedScript& l : facts->launched)
    launched.push_back(json::array({l.written, l.path, l.distributed, l.ddp_always, l.spawns, l.reads_local_rank_env,
                                    l.reads_local_rank_argument}));
  j["launched"] = std::move(launched);
  j["missing_scripts"] = json(std::vector<std::string>(facts->missing_scripts.begin(), facts->missing_scripts.end()));
  json launched_by = json::array();
  for (const LaunchOfScript& l : facts->launched_by) {
    json arguments = json::array();
    for (const LaunchOfScript::Argument& a : l.arguments)
      arguments.push_back(json::array({a.written, a.value ? json(*a.value) : json(nullptr), a.has_value}));
    launched_by.push_back(json::array({l.path, l.line, l.unread, l.passes_local_rank, l.torchrun, l.processes_per_node,
                                       l.world_size, std::move(arguments), l.arguments_opaque,
                                       l.positional_arguments}));
  }
  j["launched_by"] = std::move(launched_by);
  return j.dump();  // object keys sorted: deterministic
}

CacheKey lint_key(const SourceFile& source, std::span<const Rule> rules, const RuleSelection& selection,
                  const RuleOptions& options, const ProjectFacts* facts) {
  KeyHasher h;
  h.add("lint").add(source.path()).add(source.text());
  // which rules are enabled: the same selection for most files of a run,
  // worked out once per thread
  thread_local std::optional<RuleSelection> last_selection;
  thread_local std::string enabled;
  thread_local const Rule* last_rules = nullptr;
  if (!last_selection || !(*last_selection == selection) || last_rules != rules.data() || enabled.size() != 7 * rules.size()) {
    enabled.clear();
    for (const Rule& r : rules) {
      enabled += r.info.code;
      enabled += selection.enabled(r.info) ? '+' : '-';
    }
    last_selection = selection;
    last_rules = rules.data();
  }
  h.add(enabled);
  h.add_number(static_cast<std::uint64_t>(options.tiny_batch_threshold));
  h.add_number(options.line_length);
  // the torch releases supported: the bounds and how messages name them
  auto version = [](const std::optional<TorchVersion>& v) {
    return v ? (static_cast<std::uint64_t>(v->major) << 40 | static_cast<std::uint64_t>(v->minor) << 20 |
                static_cast<std::uint64_t>(v->patch)) + 1
             : 0;
  };
  h.add_number(version(options.torch.lowest));
  h.add_number(version(options.torch.below));
  h.add(options.torch.written);
  h.add(options.torch.origin);
  h.add(fingerprint(facts));
  return h.finish();
}

std::string encode_lint_result(const LintResult& result) {
  ByteWriter out;
  out.text(result.error);
  out.flag(result.skipped);
  out.number(result.diagnostics.size());
  for (const Diagnostic& d : result.diagnostics) {
    out.text(d.rule == nullptr ? std::string_view() : d.rule->code);
    out.number(d.start);
    out.number(d.end);
    out.text(d.message);
    out.number(d.severity_override ? 1 + static_cast<std::uint64_t>(*d.severity_override) : 0);
    out.number(d.related.size());
    for (const RelatedLocation& r : d.related) {
      out.text(r.path);
      out.number(r.line);
      out.text(r.message);
    }
    out.flag(d.fix.has_value());
    if (!d.fix) continue;
    out.flag(d.fix->applicability == Fix::Applicability::Safe);
    out.text(d.fix->description);
    out.number(d.fix->edits.size());
    for (const Edit& e : d.fix->edits) {
      out.number(e.start);
      out.number(e.end);
      out.text(e.replacement);
    }
  }
  return std::move(out.bytes());
}

std::optional<LintResult> decode_lint_result(std::string_view bytes, std::span<const Rule> rules) {
  ByteReader in(bytes);
  LintResult r;
  r.error = in.text();
  r.skipped = in.flag();
  auto offset = [&] {
    std::uint64_t n = in.number();
    if (n > UINT32_MAX) in.fail();
    return static_cast<std::uint32_t>(n);
  };
  std::uint64_t n = in.count(6 * 8);
  for (std::uint64_t i = 0; i < n && !in.failed(); ++i) {
    Diagnostic d;
    std::string code = in.text();
    for (const Rule& rule : rules)
      if (rule.info.code == code) d.rule = &rule.info;
    if (d.rule == nullptr) return std::nullopt;
    d.start = offset();
    d.end = offset();
    d.message = in.text();
    std::uint64_t severity = in.number();
    if (severity > 1 + static_cast<std::uint64_t>(Severity::Info)) return std::nullopt;
    if (severity > 0) d.severity_override = static_cast<Severity>(severity - 1);
    for (std::uint64_t k = in.count(3 * 8); k > 0 && !in.failed(); --k) {
      RelatedLocation rel;
      rel.path = in.text();
      rel.line = offset();
      rel.message = in.text();
      d.related.push_back(std::move(rel));
    }
    if (in.flag()) {
      Fix fix;
      fix.applicability = in.flag() ? Fix::Applicability::Safe : Fix::Applicability::Unsafe;
      fix.description = in.text();
      std::uint64_t edits = in.count(3 * 8);
      for (std::uint64_t k = 0; k < edits && !in.failed(); ++k) {
        Edit e;
        e.start = offset();
        e.end = offset();
        e.replacement = in.text();
        fix.edits.push_back(std::move(e));
      }
      d.fix = std::move(fix);
    }
    r.diagnostics.push_back(std::move(d));
  }
  if (in.failed() || !in.at_end()) return std::nullopt;
  return r;
}

LintResult lint_cached(const Cache* cache, const SourceFile& source, std::span<const Rule> rules,
                       const RuleSelection& selection, const RuleOptions& options, const ProjectFacts* facts,
                       std::string_view absolute) {
  if (cache == nullptr) return lint(source, rules, selection, options, true, facts);
  CacheKey key = lint_key(source, rules, selection, options, facts);
  std::string slot = "lint:";
  if (absolute.empty()) {
    std::error_code ec;
    slot += std::filesystem::absolute(source.path(), ec).lexically_normal().native();
  } else {
    slot += absolute;
  }
  if (auto bytes = cache->get(slot, key)) {
    auto result = decode_lint_result(*bytes, rules);
    auto in_file = [&](const Diagnostic& d) { return d.start <= d.end && d.end <= source.text().size(); };
    if (result && std::all_of(result->diagnostics.begin(), result->diagnostics.end(), in_file))
      return std::move(*result);
  }
  LintResult result = lint(source, rules, selection, options, true, facts);
  cache->put(slot, key, encode_lint_result(result));
  return result;
}

}  // namespace ddplint
