#pragma once
// Reading an exposition in the metrics tests: a line's presence, and prometheus_client's
// own parser run over it (parse_exposition.py).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include <sys/wait.h>

namespace corvid::test {

inline bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.rfind(line + "\n", 0) == 0;
}

// Runs parse_exposition.py over `text`: its exit code, 77 when python3 or prometheus_client
// is missing. `options`: " --client" for client metrics; `extra`: " FAMILY=TYPE" pairs it
// must also find.
inline int parse_exposition(const std::string& text, const std::string& method,
                            const std::string& extra = "", const std::string& options = "") {
  const std::string python = CORVID_SYSTEM_PYTHON;
  if (!std::filesystem::exists(python)) return 77;
  const auto path = std::filesystem::temp_directory_path() /
                    ("corvid-metrics-" + std::to_string(::getpid()) + ".txt");
  std::ofstream(path) << text;
  const std::string cmd = python + " " + CORVID_PARSE_EXPOSITION + options + " " + path.string() +
                          " '" + method + "'" + extra;
  const int rc = std::system(cmd.c_str());
  std::filesystem::remove(path);
  if (!WIFEXITED(rc)) return -1;
  return WEXITSTATUS(rc);
}

}  // namespace corvid::test
