// `ddplint server`: the language server (lsp/) over standard input and output.
#include <unistd.h>

#include "cli/commands.hpp"
#include "lsp/server.hpp"

namespace ddplint::cli {

int run_server_command(std::span<const Rule> rules) { return lsp::run_server(rules, STDIN_FILENO, STDOUT_FILENO); }

}  // namespace ddplint::cli
