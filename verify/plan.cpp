#include "verify/plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <regex>
#include <set>

#include "linter/semantic_model.hpp"
#include "linter/syntax.hpp"

namespace ddplint::verify {

namespace {

using ojson = nlohmann::ordered_json;

// The measurement kind that answers a rule, or "".
std::string kind_for(std::string_view code) {
  static const std::map<std::string_view, std::string_view> kinds = {
      {"DDP102", "h2d_copy"},   {"DDP107", "h2d_copy"},       {"DDP401", "sync_stall"}, {"DDP402", "sync_stall"},
      {"DDP403", "sync_stall"}, {"DDP404", "sync_stall"},     {"DDP405", "sync_stall"}, {"DDP501", "matmul"},
      {"DDP503", "matmul"},     {"DDP504", "matmul"},         {"DDP301", "all_reduce"}, {"DDP302", "all_reduce"},
      {"DDP303", "all_reduce"}, {"DDP601", "all_reduce"},     {"DDP602", "all_reduce"}, {"DDP304", "all_reduce_env"},
      {"DDP202", "devices"},    {"DDP203", "devices"},        {"DDP211", "devices"},    {"DDP101", "cpu_cores"}};
  auto it = kinds.find(code);
  return it == kinds.end() ? std::string() : std::string(it->second);
}

ojson sized(std::int64_t value, const char* source) { return {{"value", value}, {"source", source}}; }

ojson size_of(const std::optional<std::int64_t>& option, std::optional<std::int64_t> from_script, std::int64_t fallback) {
  if (option) return sized(*option, "option");
  if (from_script) return sized(*from_script, "script");
  return sized(fallback, "default");
}

// The largest constant nn.Linear(in, out) in the script: the matmul the model does.
std::optional<std::pair<std::int64_t, std::int64_t>> largest_linear(const SemanticModel& model) {
  std::optional<std::pair<std::int64_t, std::int64_t>> best;
  for (const CallSite* c : model.calls_to("torch.nn.Linear")) {
    Value in = model.value_of(model.argument(*c, "in_features", 0));
    Value out = model.value_of(model.argument(*c, "out_features", 1));
    if (in.kind != Value::Kind::Int || out.kind != Value::Kind::Int || in.i < 1 || out.i < 1) continue;
    if (!best || in.i * out.i > best->first * best->second) best = std::pair{in.i, out.i};
  }
  return best;
}

// A gradient-accumulation count bound to a constant (`accum_steps = 8`, `args.grad_accum` with a default).
std::optional<std::int64_t> accumulation(const SemanticModel& model) {
  for (const Binding& b : model.bindings()) {
    std::string name(model.last_name(b.target));
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    if (name.find("accum") == std::string::npos || ts_node_is_null(b.value)) continue;
    Value v = model.value_of(b.value);
    if (v.kind == Value::Kind::Int && v.i > 1 && v.i <= 4096) return v.i;
  }
  return std::nullopt;
}

bool positive_int(const nlohmann::json& v) { return v.is_number_integer() && v.get<std::int64_t>() > 0; }

}  // namespace

ojson make_plan(const SourceFile& source, const std::vector<Diagnostic>& findings, const PlanOptions& options) {
  SyntaxTree tree = parse_python(source);
  SemanticModel model(source, tree);
  std::map<std::string, ojson> by_kind;  // kind -> answers
  std::vector<std::string> order;
  std::map<std::string, std::string> env;  // DDP304: variable -> value written
  std::int64_t syncs = 0;
  for (const Diagnostic& d : findings) {
    std::string kind = kind_for(d.rule->code);
    if (kind.empty()) continue;
    if (!by_kind.count(kind)) {
      by_kind[kind] = ojson::array();
      order.push_back(kind);
    }
    by_kind[kind].push_back({{"code", d.rule->code}, {"line", source.lines().position(d.start).row}});
    if (kind == "sync_stall") ++syncs;
    if (kind == "all_reduce_env") {
      for (const EnvWrite& w : model.env_writes()) {
        if (ts_node_start_byte(w.at) > d.end || ts_node_end_byte(w.at) < d.start) continue;
        Value v = model.value_of(w.value);
        env[w.name] = v.kind == Value::Kind::Str ? v.s : v.kind == Value::Kind::Int ? std::to_string(v.i) : "1";
      }
    }
  }
  ojson params = size_of(options.params, std::nullopt, kDefaultParams);
  ojson gpus = options.gpus ? sized(*options.gpus, "option") : sized(0, "default");  // 0: every visible GPU
  ojson measurements = ojson::array();
  std::sort(order.begin(), order.end());
  for (const std::string& kind : order) {
    ojson m = {{"id", kind}, {"kind", kind}, {"answers", by_kind[kind]}};
    if (kind == "h2d_copy") {
      m["bytes"] = size_of(options.batch_bytes, std::nullopt, kDefaultBatchBytes);
    } else if (kind == "sync_stall") {
      m["syncs_per_step"] = sized(syncs, "script");
      m["queued_work_ms"] = sized(5, "default");  // GPU work queued ahead of the sync
    } else if (kind == "matmul") {
      auto linear = largest_linear(model);
      m["m"] = sized(kDefaultMatmulDim, "default");
      m["n"] = linear ? sized(linear->second, "script") : sized(kDefaultMatmulDim, "default");
      m["k"] = linear ? sized(linear->first, "script") : sized(kDefaultMatmulDim, "default");
      m["dtypes"] = {"fp32", "tf32", "bf16", "fp16"};
    } else if (kind == "all_reduce") {
      m["params"] = params;
      m["dtypes"] = {"fp32", "bf16"};
      m["accumulation"] = size_of(std::nullopt, accumulation(model), kDefaultAccumulation);
      m["gpus"] = gpus;
    } else if (kind == "all_reduce_env") {
      m["params"] = params;
      m["env"] = env;
      m["gpus"] = gpus;
    } else if (kind == "devices") {
      m["gpus"] = gpus;
    }
    measurements.push_back(std::move(m));
  }
  return {{"version", kPlanVersion},
          {"script", source.path()},
          {"measurements", std::move(measurements)}};
}

std::string validate_plan(const nlohmann::json& plan) {
  if (!plan.is_object()) return "the plan must be a JSON object";
  if (!plan.contains("version") || plan["version"] != kPlanVersion)
    return "version: must be " + std::to_string(kPlanVersion);
  if (!plan.contains("measurements") || !plan["measurements"].is_array()) return "measurements: must be an array";
  static const std::set<std::string> known = {"h2d_copy", "sync_stall", "matmul", "all_reduce",
                                              "all_reduce_env", "devices", "cpu_cores"};
  if (plan["measurements"].size() > 64) return "measurements: at most 64 (one per kind is what ddplint writes)";
  std::size_t i = 0;
  std::set<std::string> ids;
  for (const auto& m : plan["measurements"]) {
    std::string at = "measurements[" + std::to_string(i++) + "]";
    if (!m.is_object()) return at + ": must be an object";
    if (!m.contains("kind") || !m["kind"].is_string() || !known.count(m["kind"].get<std::string>()))
      return at + ".kind: must be one of h2d_copy, sync_stall, matmul, all_reduce, all_reduce_env, devices, cpu_cores";
    if (!m.contains("id") || !m["id"].is_string() || m["id"].get<std::string>().empty() || m["id"].get<std::string>().size() > 64)
      return at + ".id: must be a string of 1 to 64 characters";
    if (!ids.insert(m["id"].get<std::string>()).second) return at + ".id: used twice";
    std::string kind = m["kind"];
    auto need = [&](const char* field) -> std::string {
      if (!m.contains(field) || !m[field].is_object() || !positive_int(m[field].value("value", nlohmann::json())))
        return at + "." + field + ".value: must be a positive integer";
      return "";
    };
    std::vector<const char*> fields;
    if (kind == "h2d_copy") fields = {"bytes"};
    if (kind == "sync_stall") fields = {"syncs_per_step", "queued_work_ms"};
    if (kind == "matmul") fields = {"m", "n", "k"};
    if (kind == "all_reduce") fields = {"params", "accumulation"};
    if (kind == "all_reduce_env") fields = {"params"};
    for (const char* f : fields)
      if (std::string e = need(f); !e.empty()) return e;
    if (kind == "all_reduce_env" && (!m.contains("env") || !m["env"].is_object()))
      return at + ".env: must be an object of variable = value";
    if ((kind == "all_reduce" || kind == "all_reduce_env" || kind == "devices") && m.contains("gpus")) {
      const auto& g = m["gpus"];
      if (!g.is_object() || !g.value("value", nlohmann::json()).is_number_integer() || g["value"].get<std::int64_t>() < 0)
        return at + ".gpus.value: must be an integer >= 0 (0: every visible GPU)";
    }
  }
  return "";
}

std::string verdict(double cost_ms, std::optional<double> step_ms) {
  char buf[160];
  if (step_ms && *step_ms > 0) {
    double share = cost_ms / *step_ms;
    const char* word = cost_ms >= 1.0 || share >= 0.02 ? "worth fixing" : cost_ms >= 0.1 ? "small" : "negligible";
    std::snprintf(buf, sizeof buf, "%s: ~%.2f ms of a ~%.0f ms step (%.0f%%)", word, cost_ms, *step_ms, share * 100);
    return buf;
  }
  const char* word = cost_ms >= 1.0 ? "worth fixing" : cost_ms >= 0.1 ? "small" : "negligible";
  std::snprintf(buf, sizeof buf, "%s: ~%.2f ms per step", word, cost_ms);
  return buf;
}

namespace {
std::string fmt(const char* f, double a, double b = 0, double c = 0, double d = 0, double e = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, a, b, c, d, e);
  return buf;
}
double num(const nlohmann::json& values, const char* key) {
  auto it = values.find(key);
  return it != values.end() && it->is_number() ? it->get<double>() : std::nan("");
}

// The measurement's line for one finding: what was measured and its cost per step (NaN: none in ms).
std::pair<std::string, double> explain(std::string_view code, const ojson& m, const nlohmann::json& values) {
  std::string kind = m["kind"];
  if (kind == "h2d_copy") {
    double mib = m["bytes"]["value"].get<double>() / (1024.0 * 1024.0);
    double pageable = num(values, "pageable_ms"), pinned = num(values, "pinned_ms"), async = num(values, "pinned_non_blocking_host_ms");
    if (code == "DDP107")
      return {fmt("%.0f MiB pinned: a blocking copy holds the CPU %.2f ms, non_blocking=True %.2f ms", mib, pinned, async),
              pinned - async};
    return {fmt("%.0f MiB to the GPU: pageable %.2f ms (%.1f GB/s), pinned %.2f ms", mib, pageable,
                num(values, "pageable_gbps"), pinned),
            pageable - pinned};
  }
  if (kind == "sync_stall") {
    double us = num(values, "stall_us");
    return {fmt("one host-device sync behind %.0f ms of queued GPU work stalls the CPU %.0f us", m["queued_work_ms"]["value"].get<double>(), us),
            us / 1000.0};
  }
  if (kind == "matmul") {
    double f32 = num(values, "fp32_tflops"), bf16 = num(values, "bf16_tflops"), tf32 = num(values, "tf32_tflops");
    double ms32 = num(values, "fp32_ms"), ms16 = num(values, "bf16_ms");
    return {fmt("matmul %.0f TFLOP/s in fp32, %.0f in tf32, %.0f in bf16 (%.1fx)", f32, tf32, bf16, bf16 / f32),
            ms32 - ms16};
  }
  if (kind == "all_reduce" && values.value("device", "") == "cpu") {
    // no CUDA device: the multi-rank plumbing ran with Gloo on CPU tensors; not the GPUs' cost
    return {fmt("no CUDA device: a Gloo all-reduce on CPU of %.1f M fp32 values took %.2f ms over %.0f ranks "
                "(checks the multi-rank run, not what your GPUs cost)",
                num(values, "params") / 1e6, num(values, "fp32_ms"), num(values, "ranks")),
            std::nan("")};
  }
  if (kind == "all_reduce") {
    double ms = num(values, "fp32_ms"), bus = num(values, "busbw_gbps"), ranks = num(values, "ranks");
    if (code == "DDP303") {
      double k = m["accumulation"]["value"].get<double>();
      return {fmt("all-reduce of the gradient %.2f ms (busbw %.1f GB/s, %.0f ranks); %.0f needless per optimizer step",
                  ms, bus, ranks, k - 1),
              (k - 1) * ms};
    }
    if (code == "DDP302") {
      double small = num(values, "small_ms");
      return {fmt("a small all-reduce costs %.3f ms (latency, %.0f ranks)", small, ranks), small};
    }
    return {fmt("all-reduce of %.1f M fp32 gradients %.2f ms (busbw %.1f GB/s, %.0f ranks); bf16 %.2f ms",
                m["params"]["value"].get<double>() / 1e6, ms, bus, ranks, num(values, "bf16_ms")),
            code == "DDP301" ? ms : std::nan("")};
  }
  if (kind == "all_reduce_env") {
    double with = num(values, "with_env_ms"), without = num(values, "without_env_ms");
    return {fmt("gradient all-reduce %.2f ms with the variable set, %.2f ms without", with, without), with - without};
  }
  if (kind == "devices") {
    return {fmt("%.0f GPUs visible; one extra CUDA context on GPU 0 costs %.0f MiB", num(values, "count"),
                num(values, "context_mib")),
            std::nan("")};
  }
  // cpu_cores
  return {fmt("%.0f CPU cores for %.0f GPUs: num_workers up to %.0f per rank", num(values, "cores"),
              num(values, "gpus"), num(values, "advised_num_workers")),
          std::nan("")};
}
}  // namespace

std::string format_report(const SourceFile& source, const std::vector<Diagnostic>& findings, const ojson& plan,
                          const nlohmann::json& results, std::optional<double> step_ms) {
  std::map<std::string, const nlohmann::json*> measured;
  if (results.is_object() && results.contains("measurements") && results["measurements"].is_array())
    for (const auto& r : results["measurements"])
      if (r.is_object() && r.contains("id") && r["id"].is_string()) measured[r["id"].get<std::string>()] = &r;
  std::string out;
  for (const Diagnostic& d : findings) {
    std::string kind = kind_for(d.rule->code);
    if (kind.empty()) continue;
    const ojson* m = nullptr;
    for (const auto& e : plan["measurements"])
      if (e["kind"] == kind) m = &e;
    if (m == nullptr) continue;
    Position p = source.lines().position(d.start);
    out += source.path() + ":" + std::to_string(p.row) + ":" + std::to_string(p.column) + ": " + std::string(d.rule->code) +
           " " + d.message + "\n";
    auto it = measured.find((*m)["id"].get<std::string>());
    if (it == measured.end()) {
      out += "  not measured: ddplint-verify did not run\n";
      continue;
    }
    const nlohmann::json& r = *it->second;
    if (r.value("status", "") != "ok") {
      out += "  not measured: " + r.value("reason", std::string("no reason given")) + "\n";
      const nlohmann::json& v = r.value("values", nlohmann::json::object());
      if (kind == "h2d_copy" && v.contains("host_copy_ms"))
        out += fmt("  on the host: copying %.0f MiB in memory (the staging step of a pageable transfer) takes %.2f ms (%.1f GB/s)\n",
                   num(v, "bytes") / (1024.0 * 1024.0), num(v, "host_copy_ms"), num(v, "host_copy_gbps"));
      continue;
    }
    auto [line, cost] = explain(d.rule->code, *m, r.value("values", nlohmann::json::object()));
    out += "  measured: " + line + "\n";
    if (!std::isnan(cost)) out += "  " + verdict(std::max(0.0, cost), step_ms) + "\n";
  }
  return out;
}

}  // namespace ddplint::verify
