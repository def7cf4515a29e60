// Rules, their metadata, and the findings they report.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "linter/torch_version.hpp"

namespace ddplint {

class SemanticModel;
class LaunchModel;
struct NoqaReport;

/// Severity of a rule, as shown in output (`error`, `warning`, `info`).
enum class Severity : std::uint8_t { Error, Warning, Info };
std::string_view to_string(Severity s);

/// One text replacement: bytes [start, end) of the file become `replacement`.
struct Edit {
  std::uint32_t start = 0;
  std::uint32_t end = 0;
  std::string replacement;
};

/// A fix: edits applied together. `safe` fixes keep the program's meaning.
struct Fix {
  enum class Applicability : std::uint8_t { Safe, Unsafe };
  Applicability applicability = Applicability::Safe;
  std::string description;
  std::vector<Edit> edits;
};

/// Static metadata of a rule: the catalog's code, name and severity, a
/// one-line summary, the Markdown documentation and a reference link.
struct RuleInfo {
  std::string_view code;      ///< stable code, e.g. "DDP101"
  std::string_view name;      ///< kebab-case name, e.g. "dataloader-without-workers"
  Severity severity = Severity::Warning;
  std::string_view summary;   ///< one line for --list-rules
  std::string_view url;       ///< PyTorch documentation page the rule is about
  std::string_view docs;      ///< Markdown (What it does / Why is this bad / Example / Use instead / References)
  bool fixable = false;       ///< the rule offers fixes for some findings
  /// Findings are uses of a deprecated API (editors strike them through:
  /// LSP DiagnosticTag.Deprecated).
  bool deprecated_api = false;
  /// Off unless selected by its exact code (`--select DDP603`, or
  /// `extend-select`): advice that the evaluation on real code (eval/) found a
  /// maintainer would mostly dismiss. A prefix (`DDP6`) or `ALL` does not
  /// enable it; an ignore by prefix still turns it off.
  bool opt_in = false;
  /// Runs on test modules too (file_role() is Test: pytest's `test_*.py`,
  /// `*_test.py`, `conftest.py`, files under `tests/`): a test is not how a
  /// project trains, so only rules whose claim holds for any code (a syntax
  /// error) run there.
  bool in_tests = false;
  /// Text the rule cannot fire without, for the prefilter that skips parsing
  /// files no enabled rule could fire on (linter/prefilter.hpp): groups
  /// separated by `;`, each of which must occur in the file; alternatives
  /// within a group separated by `|`, any one of which is enough; each a
  /// case-sensitive substring of the file's bytes. Example: `item;backward|step`.
  /// Empty: the rule may fire on any file. `*`: wherever some other rule of
  /// the catalog may fire, or the file mentions torch, cuda or nccl (DDP001
  /// reports syntax errors in training scripts; Prefilter::kTrainingScript).
  /// Each rule's needs are argued from its code in a `// needs:` comment:
  /// too narrow a declaration would hide findings whenever it is alone enabled.
  std::string_view needs;
};

/// A place in another file that a finding depends on (SARIF
/// relatedLocations, LSP relatedInformation): a call in the chain that makes
/// a helper's cost per step.
struct RelatedLocation {
  std::string path;        ///< relative to the working folder (as ProjectCaller::path)
  std::uint32_t line = 0;  ///< 1-based
  std::string message;     ///< what happens there, e.g. "calls this every training step"
};

/// A finding: the rule, the byte range in the file, and the message.
struct Diagnostic {
  const RuleInfo* rule = nullptr;
  std::uint32_t start = 0;  ///< byte offset of the first byte
  std::uint32_t end = 0;    ///< byte offset one past the last byte
  std::string message;
  std::optional<Fix> fix;
  /// Places in other files the finding depends on, outermost first.
  std::vector<RelatedLocation> related;
  /// This finding's severity where the rule decides it per finding (from what
  /// the model knows: a path the launched configuration does not take is
  /// info); empty: the rule's own (RuleInfo::severity).
  std::optional<Severity> severity_override;
  /// The severity this finding is reported at.
  Severity severity() const { return severity_override ? *severity_override : rule->severity; }
};

/// Options of rules that have some, set in configuration files.
struct RuleOptions {
  /// DDP602: per-GPU batch sizes below this are flagged (`tiny-batch-threshold`;
  /// the rule catalog's default, 8).
  std::int64_t tiny_batch_threshold = 8;
  /// Fixes that add an argument wrap the call's argument list, one argument a
  /// line, when the line would grow past this many characters (`line-length`
  /// in [tool.ddplint], else [tool.ruff]'s in the same pyproject.toml); 0: never.
  std::uint32_t line_length = 0;
  /// The PyTorch releases the file's project supports: `target-torch` when
  /// set (its lowest release), else what the project declares
  /// (declared_torch_in, the closest folder above the file that declares
  /// torch, up to the project's root); empty (not declared): the current
  /// release is assumed.
  TorchSupport torch;
};

/// Where a rule's check reports findings. Holds the rule being run and the
/// options in force for the file.
class RuleContext {
 public:
  RuleContext(const RuleInfo& rule, std::vector<Diagnostic>& out, const RuleOptions& options = default_options())
      : rule_(rule), out_(out), options_(options) {}
  /// The rule options in force for this file.
  const RuleOptions& options() const { return options_; }
  static const RuleOptions& default_options() {
    static const RuleOptions defaults;
    return defaults;
  }
  /// Reports a finding over bytes [start, end).
  void report(std::uint32_t start, std::uint32_t end, std::string message, std::optional<Fix> fix = std::nullopt) {
    out_.push_back(Diagnostic{&rule_, start, end, std::move(message), std::move(fix)});
  }
  /// Reports a finding over bytes [start, end) at `severity` instead of the
  /// rule's (the finding's own cost, decided from the model).
  void report_at(Severity severity, std::uint32_t start, std::uint32_t end, std::string message,
                 std::optional<Fix> fix = std::nullopt) {
    out_.push_back(Diagnostic{&rule_, start, end, std::move(message), std::move(fix)});
    if (severity != rule_.severity) out_.back().severity_override = severity;
  }
  const RuleInfo& rule() const { return rule_; }

 private:
  const RuleInfo& rule_;
  std::vector<Diagnostic>& out_;
  const RuleOptions& options_;
};

/// A rule: metadata plus its checks, which ask a model questions and report
/// findings. Checks are pure functions of the model. `check` runs on Python
/// files (the semantic model), `check_launch` on shell and SLURM scripts (the
/// launch model, linter/launch_model.hpp); a rule has one or both (null: the
/// rule has nothing to say about that language).
struct Rule {
  RuleInfo info;
  void (*check)(const SemanticModel& model, RuleContext& ctx) = nullptr;
  void (*check_launch)(const LaunchModel& model, RuleContext& ctx) = nullptr;
  /// Runs after the others, on the file's noqa directives and what each
  /// silenced (linter/suppressions.hpp): the unused-noqa rule.
  void (*check_noqa)(const NoqaReport& noqa, RuleContext& ctx) = nullptr;
};

}  // namespace ddplint
