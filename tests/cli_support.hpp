// Helpers for the tests that run normbench's binaries: a command runner and the column tables
// documented in reports/README.md.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace normbench::testing {

struct CommandResult {
  int exit_code;       // -1 if the command did not exit normally
  std::string output;  // what the command wrote to stdout and stderr (redirect inside `cmd` to choose)
};

inline CommandResult run_command(const std::string& cmd) {
  const std::filesystem::path out =
      std::filesystem::temp_directory_path() / fmt::format("normbench-test-{}.out", getpid());
  const int status = std::system(fmt::format("( {} ) >{} 2>&1", cmd, out.string()).c_str());
  std::ifstream in(out);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove(out);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, text};
}

struct DocumentedColumns {
  std::vector<std::string> names;            // in documented order
  std::map<std::string, std::string> types;  // int, number, text, list
};

// The column table under the "## ..." heading containing `heading` in `readme`:
// lines "| `name` | type | meaning |".
inline DocumentedColumns documented_columns(const std::string& readme, const std::string& heading) {
  std::ifstream in(readme);
  std::string line;
  bool inside = false;
  DocumentedColumns d;
  const std::regex row(R"(^\| `([a-z_0-9]+)` \| ([a-z]+) \|)");
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) inside = line.find(heading) != std::string::npos;
    std::smatch m;
    if (inside && std::regex_search(line, m, row)) {
      d.names.push_back(m[1]);
      d.types[m[1]] = m[2];
    }
  }
  return d;
}

}  // namespace normbench::testing
