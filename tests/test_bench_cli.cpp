// normbench end to end: a quick run writes a CSV whose columns are exactly those documented in
// reports/README.md (parsed with fast-cpp-csv-parser), and bad input exits 2 before any run.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "normbench/csv_read.hpp"
#include "normbench/normbench.hpp"
#include "peers.hpp"

namespace normbench::testing {
namespace {
namespace fs = std::filesystem;

struct Documented {
  std::vector<std::string> names;
  std::map<std::string, std::string> types;
};

// The column table under `heading` in reports/README.md: lines "| `name` | type | meaning |".
Documented documented_columns(const std::string& heading) {
  std::ifstream in(NORMBENCH_REPORTS_README);
  std::string line;
  bool inside = false;
  Documented d;
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

struct Result {
  int exit_code;
  std::string err;
};

Result run(const std::string& args) {
  const fs::path err = fs::temp_directory_path() / fmt::format("normbench-test-{}.err", getpid());
  const std::string cmd = fmt::format("{} {} >/dev/null 2>{}", NORMBENCH_BIN, args, err.string());
  const int status = std::system(cmd.c_str());
  std::ifstream in(err);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  fs::remove(err);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, text};
}

constexpr std::size_t kBenchColumns = 37;

TEST(BenchCli, QuickRunWritesTheDocumentedCsv) {
  const Documented doc = documented_columns("Benchmark report");
  ASSERT_EQ(doc.names.size(), kBenchColumns) << "reports/README.md and this test disagree on the schema";
  const fs::path report = fs::temp_directory_path() / fmt::format("normbench-quick-{}.csv", getpid());
  const Result r = run(fmt::format("--shapes=quick --benchmark_min_time=0.002 --benchmark_repetitions=2 --report {}",
                                   report.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("case 1 of"), std::string::npos) << "no progress output";

  std::array<std::string, kBenchColumns> names;
  std::copy(doc.names.begin(), doc.names.end(), names.begin());
  report::CsvRows<kBenchColumns> csv(report.string(), names);  // throws if a column is missing or extra
  std::array<std::string, kBenchColumns> row;
  std::set<std::string> impls_seen;
  int ceilings = 0, rows = 0;
  while (csv.next(row)) {
    ++rows;
    std::map<std::string, std::string> f;
    for (std::size_t i = 0; i < kBenchColumns; ++i) f[names[i]] = row[i];
    SCOPED_TRACE(f["name"]);
    ASSERT_TRUE(f["error"].empty()) << f["error"];
    for (const auto& [col, type] : doc.types) {
      const std::string& v = f[col];
      if (type == "int") {
        EXPECT_TRUE(std::regex_match(v, std::regex("-?[0-9]+"))) << col << "=" << v;
      } else if (type == "number") {
        char* end = nullptr;
        const double d = std::strtod(v.c_str(), &end);
        EXPECT_TRUE(!v.empty() && *end == '\0' && std::isfinite(d)) << col << "=" << v;
      } else if (type == "list") {
        EXPECT_TRUE(std::regex_match(v, std::regex("[0-9.]+(;[0-9.]+)*"))) << col << "=" << v;
      }
    }
    EXPECT_EQ(f["schema_version"], "1");
    EXPECT_EQ(f["repetitions"], "2");
    EXPECT_GT(std::stod(f["frac_of_ceiling"]), 0.0);
    if (f["family"] == "ceiling") ++ceilings;
    impls_seen.insert(f["implementation"]);
  }
  EXPECT_GT(rows, 0);
  EXPECT_GT(ceilings, 0);
  peers::register_all();
  for (const Implementation& impl : registry()) EXPECT_TRUE(impls_seen.count(std::string(impl.name))) << impl.name;
  fs::remove(report);
}

TEST(BenchCli, BadInputExitsTwoBeforeAnyBenchmarkRuns) {
  const fs::path report = fs::temp_directory_path() / fmt::format("normbench-bad-{}.csv", getpid());
  const std::pair<std::string, std::string> cases[] = {
      {"--shapes=nope", "unknown shape set 'nope'"},
      {"--shape 12x", "cols is missing"},
      {"--shape 0x4096", "rows must be at least 1"},
      {"--shape -1x8", "rows"},
      {"--shape 12", "no 'x'"},
      {"--shape 99999999999999999999x8", "rows is too large"},
      {"--shape 4294967296x4294967296", "overflows"},
      {"--shape 100000000x100000", "more than 80% of this machine's memory"},
      {"--impl nope", "unknown implementation 'nope'"},
      {"--dtype fp8", "unknown dtype 'fp8'"},
      {"--threads 0", "not a thread count"},
      {"--nonsense", "nonsense"},
  };
  for (const auto& [args, needle] : cases) {
    SCOPED_TRACE(args);
    const Result r = run(fmt::format("{} --report {}", args, report.string()));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "expected one line: " << r.err;
    EXPECT_FALSE(fs::exists(report)) << "a report was written";
  }
  const Result r = run("--shapes=quick --report /proc/normbench/forbidden.csv");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/proc/normbench"), std::string::npos) << r.err;
}

TEST(BenchCli, HelpAndListExitZero) {
  EXPECT_EQ(run("--help").exit_code, 0);
  EXPECT_EQ(run("--list").exit_code, 0);
}

}  // namespace
}  // namespace normbench::testing
