// Runs the ddplint executable (DDPLINT_BIN) in end-to-end tests: a scratch
// folder, and a run with arguments, standard input, working folder and
// environment, its exit status and both outputs captured.
#pragma once

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/temp_dir.hpp"

namespace ddplint_test {

namespace fs = std::filesystem;

/// A run's exit status (128 + signal when killed) and outputs.
struct Run {
  int rc = -1;
  std::string out, err;
};

/// The bytes of file `p`.
inline std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// Runs ddplint with `args` in `cwd`, feeding `input` on stdin; `env` entries are added
/// (`RLIMIT_FSIZE=N` and `AS_NOBODY=1` are acted on instead).
inline Run ddplint(const std::vector<std::string>& args, const std::string& input = "", const fs::path& cwd = ".",
            const std::vector<std::string>& env = {}) {
  TempDir io;
  fs::path in = io.write("stdin", input), out = io.path / "stdout", err = io.path / "stderr";
  pid_t pid = ::fork();
  if (pid == 0) {
    int fi = ::open(in.c_str(), O_RDONLY), fo = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600),
        fe = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(fi, 0);
    ::dup2(fo, 1);
    ::dup2(fe, 2);
    if (::chdir(cwd.c_str()) != 0) ::_exit(127);
    ::unsetenv("NO_COLOR");
    for (const auto& e : env) {
      if (e.rfind("RLIMIT_FSIZE=", 0) == 0) {  // simulates a full disk: writes past N bytes fail (EFBIG)
        ::signal(SIGXFSZ, SIG_DFL);  // as a shell leaves it: ddplint itself must not die of SIGXFSZ
        rlimit lim{std::stoul(e.substr(13)), std::stoul(e.substr(13))};
        ::setrlimit(RLIMIT_FSIZE, &lim);
        continue;
      }
      if (e == "AS_NOBODY=1") {  // file permissions apply even when the tests run as root (CI)
        if (::getuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(126);
        continue;
      }
      ::putenv(const_cast<char*>(e.c_str()));
    }
    std::vector<char*> argv{const_cast<char*>(DDPLINT_BIN)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(DDPLINT_BIN, argv.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  Run r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

/// True if `needle` occurs in `s`.
inline bool contains(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

}  // namespace ddplint_test
