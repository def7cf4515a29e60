// Entry point of the `ddplint` executable: the built-in rules, given to the command line.
#include <csignal>
#include <cstdio>
#include <exception>

#include "cli/commands.hpp"
#include "rules/registry.hpp"

int main(int argc, char** argv) {
  // a write past the file-size limit (ulimit -f) fails with EFBIG, which --fix
  // and --output-file report (exit 2, temporary file removed), instead of
  // killing the process with SIGXFSZ (found by hostile testing)
  std::signal(SIGXFSZ, SIG_IGN);
  try {
    return ddplint::cli::run(argc, argv, ddplint::rules::all());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ddplint: internal error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "ddplint: internal error\n");
  }
  return ddplint::cli::kExitError;
}
