// Entry point of the `ddplint` executable.
#include <cstdio>
#include <exception>

#include "linter/cli.hpp"
#include "rules/registry.hpp"

int main(int argc, char** argv) {
  try {
    return ddplint::run_cli(argc, argv, ddplint::rules::all());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ddplint: internal error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "ddplint: internal error\n");
  }
  return ddplint::kExitError;
}
