// ddplint_bench: lints every *.py under the given folders with all rules, and
// parses the same files with tree-sitter alone (and parses them plus walks
// every node with a TSTreeCursor, the reference), interleaved by
// chunks of 64 files within each round, and prints median wall times, MB/s
// and the median of the per-round ratios lint / parse (measured side by side:
// the machines are noisy).
// Files are read into memory first: I/O is not timed. One thread. The
// prefilter is on, as in the CLI (on a torch corpus it skips nothing).
//
// Usage: ddplint_bench [--rounds N] [--lint-only|--parse-only] [--breakdown] [--hot] [--project] FOLDER...
// --project lints each file with its project facts, as the CLI does: each
// round indexes the projects afresh (ProjectSet), and the index's walk, import
// scan and summaries count in the lint's time.
// --lint-only times the lint alone, --parse-only the parse alone (for a
// profiler or counters: perf record, perf stat, callgrind). --breakdown times
// the lint's own parse apart from the model and rules (the lint then skips
// the prefilter, which skips nothing on a torch corpus). The parse alone (and
// the parse and walk) is tree-sitter's own: parse_python with tree-sitter's
// default allocator (malloc; ddplint's allocation hooks switched off around
// it) and the tree freed with ts_tree_delete. The lint's parse is in the parse
// arena (ParseArenaScope, linter/syntax.hpp), as lint() parses.
// --hot times each file on its own instead, with warm caches: the parse 20
// times, then the lint 20 times, best of 7 such pairs; it prints the ratio for
// each file and their mean. Against the corpus ratio it shows how much of the
// lint's cost is cold code and data (the corpus runs a file's lint once, after
// parsing it; most files are about 1 KB).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "bench/corpus.hpp"
#include "linter/lint.hpp"
#include "linter/project.hpp"
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
  bool lint_only = false, parse_only = false, breakdown = false, hot = false, project = false;
  std::vector<std::string> roots;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) rounds = std::max(1, std::atoi(argv[++i]));
    else if (std::strcmp(argv[i], "--lint-only") == 0) lint_only = true;
    else if (std::strcmp(argv[i], "--parse-only") == 0) parse_only = true;
    else if (std::strcmp(argv[i], "--breakdown") == 0) breakdown = true;
    else if (std::strcmp(argv[i], "--project") == 0) project = true;
    else if (std::strcmp(argv[i], "--hot") == 0) hot = true;
    else roots.emplace_back(argv[i]);
  }
  if (roots.empty()) {
    std::fprintf(stderr, "usage: ddplint_bench [--rounds N] [--lint-only|--parse-only] [--breakdown] [--hot] FOLDER...\n");
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
  std::size_t findings = 0, nodes = 0;
  RuleSelection all;
  if (hot) {
    double sum = 0;
    for (const SourceFile& f : files) {
      constexpr int kRepeat = 20;
      double best_parse = 1e30, best_lint = 1e30;
      for (int r = 0; r < 7; ++r) {
        set_parse_arena_hooks(false);
        auto t0 = Clock::now();
        for (int k = 0; k < kRepeat; ++k) {
          SyntaxTree tree = parse_python(f);
          nodes += ts_node_child_count(tree.root()) > 0;
        }
        set_parse_arena_hooks(true);
        auto t1 = Clock::now();
        for (int k = 0; k < kRepeat; ++k) findings += lint(f, rules::all(), all).diagnostics.size();
        auto t2 = Clock::now();
        best_parse = std::min(best_parse, std::chrono::duration<double>(t1 - t0).count());
        best_lint = std::min(best_lint, std::chrono::duration<double>(t2 - t1).count());
      }
      sum += best_lint / best_parse;
      std::printf("%.3fx %8zu bytes  %s\n", best_lint / best_parse, f.text().size(), f.path().c_str());
    }
    std::printf("hot caches: mean ratio lint / parse over %zu files: %.3fx\n", files.size(),
                files.empty() ? 0.0 : sum / static_cast<double>(files.size()));
    volatile std::size_t sink = nodes + findings;
    (void)sink;
    return 0;
  }
  std::vector<double> parse_s, walk_s, lint_s;
  // Each round runs the three measurements over the corpus in chunks of
  // kChunk files, in turn (and in a rotating order), so that a slow spell of
  // the machine (frequency, neighbours) weighs on all three alike instead of
  // on whichever ran during it.
  constexpr std::size_t kChunk = 64;
  auto parse_files = [&](std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to; ++i) {
      SyntaxTree tree = parse_python(files[i]);
      nodes += ts_node_child_count(tree.root()) > 0;
    }
  };
  auto walk_files = [&](std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to; ++i) {
      SyntaxTree tree = parse_python(files[i]);
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
  };
  double parse_in_lint = 0;  // --breakdown: the lint's own parse, timed apart
  std::unique_ptr<ProjectSet> projects;  // --project: a new index each round, its cost in the lint's time
  auto lint_files = [&](std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to; ++i) {
      if (project) {
        std::filesystem::path path = absolute_normal(files[i].path());
        auto p = projects->project_of(path);
        const ProjectFacts* facts = p ? p->facts_for(path) : nullptr;
        findings += lint(files[i], rules::all(), all, RuleOptions{}, true, facts).diagnostics.size();
        continue;
      }
      if (!breakdown) {
        findings += lint(files[i], rules::all(), all).diagnostics.size();
        continue;
      }
      ParseArenaScope arena;  // as lint() parses
      auto t0 = Clock::now();
      SyntaxTree tree = parse_python(files[i]);
      parse_in_lint += std::chrono::duration<double>(Clock::now() - t0).count();
      findings += lint(files[i], tree, rules::all(), all).diagnostics.size();
    }
  };
  std::vector<double> parse_in_lint_s;
  for (int r = 0; r < rounds; ++r) {
    findings = 0;
    parse_in_lint = 0;
    projects = std::make_unique<ProjectSet>();
    double t[3] = {0, 0, 0};  // parse, parse + cursor walk, lint
    for (std::size_t from = 0, chunk = 0; from < files.size(); from += kChunk, ++chunk) {
      std::size_t to = std::min(files.size(), from + kChunk);
      for (std::size_t k = 0; k < 3; ++k) {
        std::size_t which = (chunk + k) % 3;
        if ((lint_only && which != 2) || (parse_only && which != 0)) continue;
        set_parse_arena_hooks(which == 2);  // the parse and the walk as tree-sitter does them alone
        auto t0 = Clock::now();
        if (which == 0) parse_files(from, to);
        else if (which == 1) walk_files(from, to);
        else lint_files(from, to);
        t[which] += std::chrono::duration<double>(Clock::now() - t0).count();
      }
    }
    parse_s.push_back(t[0]);
    walk_s.push_back(t[1]);
    lint_s.push_back(t[2]);
    parse_in_lint_s.push_back(parse_in_lint);
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
  if (project && projects) {
    // the projects of the last round: how many files were summarised, and their summaries' bytes
    std::vector<std::shared_ptr<const Project>> seen;
    for (const SourceFile& f : files) {
      std::error_code ec;
      auto of = projects->project_of(std::filesystem::absolute(f.path(), ec).lexically_normal());
      if (of && std::find(seen.begin(), seen.end(), of) == seen.end()) seen.push_back(of);
    }
    std::size_t summarised = 0, summary_bytes = 0;
    for (const auto& of : seen) {
      summarised += of->summarised_count();
      summary_bytes += of->summary_bytes();
    }
    std::printf("project summaries: %zu projects, %zu files summarised, %zu bytes, %.0f bytes a file\n", seen.size(),
                summarised, summary_bytes,
                summarised ? static_cast<double>(summary_bytes) / static_cast<double>(summarised) : 0.0);
  }
  if (breakdown) {
    double pl = median(parse_in_lint_s);
    std::printf("lint breakdown: its parse (in the parse arena) %.2f s (%.2fx the parse alone), model and rules %.2f s "
                "(%.2fx the parse alone, %.2fx the lint's parse)\n",
                pl, pl / p, l - pl, (l - pl) / p, (l - pl) / pl);
  }
  volatile std::size_t sink = nodes;  // keeps the walks from being optimised away
  (void)sink;
  return 0;
}
