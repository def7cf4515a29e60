// `ddplint verify`: which measurement answers which finding, with the sizes it
// needs (the plan), and how measured results are reported against findings.
// This part needs no LibTorch: the linter builds it always; the measuring
// executable `ddplint-verify` (DDPLINT_VERIFY=ON) reads the plan it writes.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "linter/diagnostic.hpp"
#include "linter/source.hpp"

namespace ddplint::verify {

/// Version of the plan and results formats (both carry it; readers refuse others).
inline constexpr int kPlanVersion = 1;

/// Defaults used when neither the script nor an option gives a size; each is
/// stated in the plan with its source so the report can say so.
/// - 25,557,032 parameters: torchvision's ResNet-50
///   (`sum(p.numel() for p in resnet50().parameters())`).
/// - 64 MiB batch: 256 images of 3×224×224 in uint8 (256·150,528 B = 36.75 MiB)
///   rounded up to leave room for labels and float inputs.
/// - 4 micro-batches per optimizer step for DDP303 when the script's
///   accumulation count is not a known constant.
/// - 4096 for matmul dimensions the script does not give.
inline constexpr std::int64_t kDefaultParams = 25'557'032;
inline constexpr std::int64_t kDefaultBatchBytes = 64ll * 1024 * 1024;
inline constexpr std::int64_t kDefaultAccumulation = 4;
inline constexpr std::int64_t kDefaultMatmulDim = 4096;

/// Sizes given on the command line (`--gpus`, `--params`, `--batch-bytes`).
struct PlanOptions {
  std::optional<std::int64_t> gpus;         ///< GPUs (ranks) to use; default: all visible
  std::optional<std::int64_t> params;       ///< model parameters (count)
  std::optional<std::int64_t> batch_bytes;  ///< bytes copied to the GPU per step and rank
};

/// The plan for `source` and its `findings` (as lint() returned them): one
/// entry per measurement kind that answers at least one finding, each listing
/// the findings it answers (code, 1-based line) and its sizes with their
/// source ("script", "option" or "default"). Findings no measurement answers
/// are not in the plan. Kinds and the codes they answer:
/// `h2d_copy` DDP102 DDP107; `sync_stall` DDP401-DDP405; `matmul` DDP501
/// DDP503 DDP504; `all_reduce` DDP301 DDP302 DDP303 DDP601 DDP602;
/// `all_reduce_env` DDP304; `devices` DDP202 DDP203 DDP211; `cpu_cores` DDP101.
nlohmann::ordered_json make_plan(const SourceFile& source, const std::vector<Diagnostic>& findings,
                                 const PlanOptions& options);

/// Checks a plan read back (by ddplint-verify): "" when usable, else one line
/// naming the first bad field (`measurements[2].bytes: must be a positive integer`).
std::string validate_plan(const nlohmann::json& plan);

/// The report: each finding of the plan with its measurement, the cost per
/// training step that follows, and a verdict; `results` is ddplint-verify's
/// output (null when it did not run). `step_ms` (optional) is the user's step
/// time, to put the cost in proportion.
std::string format_report(const SourceFile& source, const std::vector<Diagnostic>& findings,
                          const nlohmann::ordered_json& plan, const nlohmann::json& results,
                          std::optional<double> step_ms);

/// The verdict for a cost per step (ms): "worth fixing" (at least 1 ms, or at
/// least 2% of `step_ms`), "small" (at least 0.1 ms), else "negligible".
std::string verdict(double cost_ms, std::optional<double> step_ms);

}  // namespace ddplint::verify
