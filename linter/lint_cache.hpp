// Whole-file findings kept in the cache (linter/cache.hpp): lint() of the
// same bytes, path, rule settings and project facts by the same build gives
// the same result, so a warm run reads it back instead of parsing.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "linter/cache.hpp"
#include "linter/lint.hpp"

namespace ddplint {

/// A deterministic text of `facts` (null: none), for cache keys.
std::string fingerprint(const ProjectFacts* facts);

/// The key of lint(source, rules, selection, options, true, facts): the
/// source's path and bytes, each rule's code and whether it is enabled, the
/// rule options and the facts' fingerprint.
CacheKey lint_key(const SourceFile& source, std::span<const Rule> rules, const RuleSelection& selection,
                  const RuleOptions& options, const ProjectFacts* facts);

/// `result` as bytes (CBOR), and back. decode_lint_result() gives
/// std::nullopt for bytes that are not such an encoding or name a rule not in
/// `rules`.
std::string encode_lint_result(const LintResult& result);
std::optional<LintResult> decode_lint_result(std::string_view bytes, std::span<const Rule> rules);

/// lint(source, rules, selection, options, true, facts), read from `cache`
/// when it holds the result and written there otherwise. `cache` may be null
/// (plain lint()). `absolute`: the file's absolute path, its slot in the cache
/// (empty: made from the source's path). Results equal a cache-less run's:
/// an entry that does not verify or decode is recomputed.
LintResult lint_cached(const Cache* cache, const SourceFile& source, std::span<const Rule> rules,
                       const RuleSelection& selection, const RuleOptions& options, const ProjectFacts* facts,
                       std::string_view absolute = {});

}  // namespace ddplint
