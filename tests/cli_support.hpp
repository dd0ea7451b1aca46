// Helpers for the tests that run normbench's binaries: a command runner and the column tables
// documented in reports/README.md.
#pragma once

#include <regex.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <stdexcept>
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

// The first match of a POSIX extended regular expression in `text`: the whole match, then each
// group ("" where a group did not take part); nothing if it does not match. (POSIX regcomp, not
// std::regex, whose instantiation draws GCC 12 -Wmaybe-uninitialized false positives under the
// sanitizers.)
inline std::optional<std::vector<std::string>> search_ere(const std::string& text, const std::string& pattern) {
  regex_t re;
  if (regcomp(&re, pattern.c_str(), REG_EXTENDED) != 0) throw std::invalid_argument("bad regular expression: " + pattern);
  std::vector<regmatch_t> groups(re.re_nsub + 1);
  std::optional<std::vector<std::string>> found;
  if (regexec(&re, text.c_str(), groups.size(), groups.data(), 0) == 0) {
    found.emplace();
    for (const regmatch_t& g : groups)
      found->push_back(g.rm_so < 0 ? std::string() : text.substr(static_cast<std::size_t>(g.rm_so),
                                                                  static_cast<std::size_t>(g.rm_eo - g.rm_so)));
  }
  regfree(&re);
  return found;
}

// Whether all of `text` matches the POSIX extended regular expression `pattern`.
inline bool matches_ere(const std::string& text, const std::string& pattern) {
  return search_ere(text, "^(" + pattern + ")$").has_value();
}

// The column table under the "## ..." heading containing `heading` in `readme`:
// lines "| `name` | type | meaning |".
inline DocumentedColumns documented_columns(const std::string& readme, const std::string& heading) {
  std::ifstream in(readme);
  std::string line;
  bool inside = false;
  DocumentedColumns d;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) inside = line.find(heading) != std::string::npos;
    if (!inside) continue;
    if (const auto m = search_ere(line, R"(^\| `([a-z_0-9]+)` \| ([a-z]+) \|)")) {
      d.names.push_back((*m)[1]);
      d.types[(*m)[1]] = (*m)[2];
    }
  }
  return d;
}

}  // namespace normbench::testing
