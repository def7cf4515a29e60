// ddplint_bench: lints every *.py under the given folders with all rules, and
// parses the same files with tree-sitter alone (and parses them plus walks
// every node with a TSTreeCursor, the reference), in alternating
// rounds, and prints median wall times, MB/s and the median of the per-round
// ratios lint / parse (measured side by side: the machines are noisy).
// Files are read into memory first: I/O is not timed. One thread. The
// prefilter is on, as in the CLI (on a torch corpus it skips nothing).
//
// Usage: ddplint_bench [--rounds N] [--lint-only|--parse-only] FOLDER...
// --lint-only times the lint alone, --parse-only the parse alone (for a
// profiler or counters: perf record, perf stat, callgrind).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench/corpus.hpp"
#include "linter/lint.hpp"
#include "linter/syntax.hpp"
#include "rules/registry.hpp"

using namespace ddplint;
using Clock = std::chrono::steady_clock;

namespace {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
}  // namespace

int main(int argc, char** argv) {
  int rounds = 5;
  bool lint_only = false, parse_only = false;
  std::vector<std::string> roots;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) rounds = std::max(1, std::atoi(argv[++i]));
    else if (std::strcmp(argv[i], "--lint-only") == 0) lint_only = true;
    else if (std::strcmp(argv[i], "--parse-only") == 0) parse_only = true;
    else roots.emplace_back(argv[i]);
  }
  if (roots.empty()) {
    std::fprintf(stderr, "usage: ddplint_bench [--rounds N] [--lint-only|--parse-only] FOLDER...\n");
    return 2;
  }
  std::vector<SourceFile> files;
  std::size_t bytes = 0;
  bench::for_each_source(roots, [&](SourceFile&& f) {
    if (f.check_decodable() != DecodeError::None) return;  // the linter would not parse these either
    bytes += f.text().size();
    files.push_back(std::move(f));
  });
  double mb = static_cast<double>(bytes) / (1024.0 * 1024.0);
  std::printf("corpus: %zu files, %.1f MB\n", files.size(), mb);
  std::vector<double> parse_s, walk_s, lint_s;
  std::size_t findings = 0, nodes = 0;
  RuleSelection all;
  for (int r = 0; r < rounds; ++r) {
    auto t0 = Clock::now();
    for (const SourceFile& f : files) {
      if (lint_only) break;
      SyntaxTree tree = parse_python(f);
      nodes += ts_node_child_count(tree.root()) > 0;
    }
    auto t1 = Clock::now();
    for (const SourceFile& f : files) {
      if (lint_only || parse_only) break;
      SyntaxTree tree = parse_python(f);
      TSTreeCursor cursor = ts_tree_cursor_new(tree.root());
      for (;;) {
        nodes += ts_node_symbol(ts_tree_cursor_current_node(&cursor)) != 0;
        if (ts_tree_cursor_goto_first_child(&cursor)) continue;
        while (!ts_tree_cursor_goto_next_sibling(&cursor)) {
          if (!ts_tree_cursor_goto_parent(&cursor)) goto done;
        }
      }
    done:
      ts_tree_cursor_delete(&cursor);
    }
    auto t1b = Clock::now();
    findings = 0;
    for (const SourceFile& f : files) {
      if (parse_only) break;
      findings += lint(f, rules::all(), all).diagnostics.size();
    }
    auto t2 = Clock::now();
    parse_s.push_back(std::chrono::duration<double>(t1 - t0).count());
    walk_s.push_back(std::chrono::duration<double>(t1b - t1).count());
    lint_s.push_back(std::chrono::duration<double>(t2 - t1b).count());
    std::printf("round %d: parse %.2f s, parse+walk %.2f s, lint %.2f s\n", r + 1, parse_s.back(), walk_s.back(), lint_s.back());
  }
  double p = median(parse_s), l = median(lint_s), w = median(walk_s);
  std::vector<double> lint_ratio, walk_ratio;
  for (std::size_t i = 0; i < parse_s.size(); ++i) {
    lint_ratio.push_back(lint_s[i] / parse_s[i]);
    walk_ratio.push_back(walk_s[i] / parse_s[i]);
  }
  std::printf("tree-sitter parse only: %.2f s  %.1f MB/s (median of %d)\n", p, mb / p, rounds);
  std::printf("tree-sitter parse + cursor walk of every node: %.2f s  %.1f MB/s, ratio %.2fx\n", w, mb / w,
              median(walk_ratio));
  std::printf("ddplint, all %zu rules: %.2f s  %.1f MB/s (median of %d), %zu findings\n", rules::all().size(), l,
              mb / l, rounds, findings);
  std::printf("ratio lint / parse: %.2fx (median of per-round ratios)\n", median(lint_ratio));
  volatile std::size_t sink = nodes;  // keeps the walks from being optimised away
  (void)sink;
  return 0;
}
