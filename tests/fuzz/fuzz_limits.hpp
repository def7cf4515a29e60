// Bounds shared by the libFuzzer harnesses: each input is capped so that one
// execution stays within libFuzzer's per-input time and memory limits
// (bench/fuzz.sh passes -timeout and -rss_limit_mb; see tests/fuzz/README.md).
#pragma once

#include <cstddef>

namespace ddplint::fuzz {

/// Largest input a harness looks at, in bytes (256 KiB): larger inputs are
/// rejected (return -1, libFuzzer does not add them to the corpus). The
/// linter's own limits (huge files, deep nesting) are tested by the e2e tests
/// and bench/speed.py, not by fuzzing.
inline constexpr std::size_t kMaxInputBytes = 256 * 1024;

}  // namespace ddplint::fuzz
