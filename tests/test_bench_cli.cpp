// normbench end to end: a quick run writes a CSV whose columns are exactly those documented in
// reports/README.md (parsed with fast-cpp-csv-parser), and bad input exits 2 before any run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "affinity.hpp"
#include "cli_support.hpp"
#include "normbench/csv_read.hpp"
#include "normbench/report.hpp"
#include "normbench/normbench.hpp"
#include "peers.hpp"

namespace normbench::testing {
namespace {
namespace fs = std::filesystem;

// stderr only (the console table goes to /dev/null): progress and error lines.
CommandResult run(const std::string& args) {
  return run_command(fmt::format("{} {} 2>&1 >/dev/null", NORMBENCH_BIN, args));
}

constexpr std::size_t kBenchColumns = 46;

// The bracketed word of the system's THP setting, or "unavailable" (as normbench records it).
std::string system_thp_policy() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  if (!std::getline(f, line) || line.find('[') == std::string::npos) return "unavailable";
  const auto open = line.find('[');
  return line.substr(open + 1, line.find(']') - open - 1);
}

TEST(BenchCli, QuickRunWritesTheDocumentedCsv) {
  const DocumentedColumns doc = documented_columns(NORMBENCH_REPORTS_README, "Benchmark report");
  ASSERT_EQ(doc.names.size(), kBenchColumns) << "reports/README.md and this test disagree on the schema";
  const fs::path report = fs::temp_directory_path() / fmt::format("normbench-quick-{}.csv", getpid());
  const CommandResult r = run(fmt::format("--shapes=quick --benchmark_min_time=0.002 --benchmark_repetitions=2 --report {}",
                                   report.string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("case 1 of"), std::string::npos) << "no progress output";

  std::array<std::string, kBenchColumns> names;
  std::copy(doc.names.begin(), doc.names.end(), names.begin());
  report::CsvRows<kBenchColumns> csv(report.string(), names);  // throws if a column is missing or extra
  std::array<std::string, kBenchColumns> row;
  std::set<std::string> impls_seen, variants_seen, phased_norms, arithmetic_shapes;
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
        EXPECT_TRUE(matches_ere(v, "-?[0-9]+")) << col << "=" << v;
      } else if (type == "number") {
        char* end = nullptr;
        const double d = std::strtod(v.c_str(), &end);
        EXPECT_TRUE(!v.empty() && *end == '\0' && std::isfinite(d)) << col << "=" << v;
      } else if (type == "list") {
        EXPECT_TRUE(matches_ere(v, "[0-9.]+(;[0-9.]+)*")) << col << "=" << v;
      }
    }
    EXPECT_EQ(f["schema_version"], std::to_string(report::kBenchSchemaVersion));
    EXPECT_TRUE(f["stores"] == "cached" || f["stores"] == "streaming") << f["stores"];
    EXPECT_EQ(f["huge_pages"], "0");
    EXPECT_EQ(f["thp_policy"], system_thp_policy());
    EXPECT_GT(std::stod(f["frac_of_nt_ceiling"]), 0.0);
    EXPECT_EQ(f["repetitions"], "2");
    EXPECT_GT(std::stod(f["frac_of_ceiling"]), 0.0);
    if (f["family"] == "ceiling") ++ceilings;
    if (f["implementation"] == "row-phased") {  // a ceiling of one norm's traffic, against the stream-scale one
      EXPECT_EQ(f["family"], "ceiling");
      EXPECT_NEAR(std::stod(f["frac_of_ceiling"]), std::stod(f["gbps_median"]) / std::stod(f["ceiling_gbps"]), 1e-3);
      phased_norms.insert(f["norm"]);
    }
    if (f["implementation"] == "row-phased-arithmetic") {  // LayerNorm's arithmetic too: one-row f32 calls, 1 thread
      EXPECT_EQ(f["family"], "ceiling");
      EXPECT_EQ(f["norm"], "layernorm");
      EXPECT_EQ(f["dtype"], "f32");
      EXPECT_EQ(f["threads"], "1");
      arithmetic_shapes.insert(f["rows"] + "x" + f["cols"]);
    }
    impls_seen.insert(f["implementation"]);
    if (f["family"] != "ceiling") variants_seen.insert(f["variant"]);
  }
  EXPECT_GT(rows, 0);
  EXPECT_GT(ceilings, 0);
  EXPECT_EQ(phased_norms, (std::set<std::string>{"layernorm", "rmsnorm"}));
  EXPECT_EQ(arithmetic_shapes, (std::set<std::string>{"1x4096"}));  // the quick set's one-row shape
  peers::register_all();
  for (const Implementation& impl : registry()) EXPECT_TRUE(impls_seen.count(std::string(impl.name))) << impl.name;
  // The quick set runs every variant by default, and the unfused residual add beside the fused one.
  for (const VariantPreset& v : variant_presets()) EXPECT_TRUE(variants_seen.count(std::string(v.name))) << v.name;
  EXPECT_TRUE(variants_seen.count("residual-add-separate"));
  fs::remove(report);
}

// --huge-pages: recorded on every row where the system has THP, a one-line error where it has not.
TEST(BenchCli, HugePagesAreRecordedOrRefused) {
  const fs::path report = fs::temp_directory_path() / fmt::format("normbench-huge-{}.csv", getpid());
  const std::string policy = system_thp_policy();
  const CommandResult r = run(fmt::format(
      "--huge-pages --shape 2x1048576 --norm rmsnorm --impl highway --dtype f32 --threads 1 --variant standard "
      "--benchmark_min_time=0.002 --benchmark_repetitions=2 --report {}", report.string()));
  if (policy == "never" || policy == "unavailable") {
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("--huge-pages: transparent huge pages are"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(report));
    return;
  }
  ASSERT_EQ(r.exit_code, 0) << r.output;
  report::CsvRows<4> csv(report.string(), {"name", "huge_pages", "thp_policy", "error"}, /*allow_extra_columns=*/true);
  std::array<std::string, 4> row;
  int rows = 0;
  while (csv.next(row)) {
    ++rows;
    SCOPED_TRACE(row[0]);
    EXPECT_EQ(row[1], "1");
    EXPECT_EQ(row[2], policy);
    EXPECT_TRUE(row[3].empty()) << row[3];
  }
  EXPECT_EQ(rows, 4);  // the two stream-scale ceilings, RMSNorm's row-phased one and the case
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
      {"--variant nope", "unknown variant 'nope'"},
      {"--shape 2x0x64", "must be at least 1"},
      {"--shape 2x64x", "is missing"},
      {"--shape 2x64x64:ncl", "the only layout suffix is ':nlc'"},
      {"--shape 64x8:nlc", "needs the three parts"},
      {"--threads 0", "not a thread count"},
      {"--threads 2,3x", "'3x' is not a thread count"},
      {"--threads 1025", "'1025' is not a thread count in [1, 1024]"},
      {"--nonsense", "nonsense"},
      {"'--benchmark_filter=layernorm/(high'", "--benchmark_filter is not a valid regular expression"},
      {"--shape 1x768 --benchmark_filter=zzz", "--benchmark_filter 'zzz' matches none of the"},
      {"--benchmark_out=/tmp/normbench-never.json --benchmark_out_format=xml", "not one of json, console"},
      {"--benchmark_out=/proc/normbench/forbidden.json", "cannot write /proc/normbench/forbidden.json"},
      // Google Benchmark aborted on a negative count (std::length_error) and ran nothing on 0.
      {"--benchmark_repetitions=-3", "'-3' is not a repetition count of at least 1"},
      {"--benchmark_repetitions=0", "'0' is not a repetition count of at least 1"},
      {"--benchmark_repetitions=2.5", "'2.5' is not a repetition count"},
      {"--benchmark_min_time=0", "'0' is not a positive number of seconds"},
      {"--benchmark_min_time=-1", "'-1' is not a positive number of seconds"},
      {"--benchmark_min_time=abc", "'abc' is not a positive number of seconds"},
      // An empty selection says which shape left it empty.
      {"--shape 1x768 --norm batchnorm --variant standard", "1x768: batchnorm training needs more than 1 value per channel (N*L = 1"},
      {"--shape 8x3136x64:nlc --norm layernorm", "the channels-last layout applies to batchnorm only, not layernorm"},
  };
  for (const auto& [args, needle] : cases) {
    SCOPED_TRACE(args);
    const CommandResult r = run(fmt::format("{} --report {}", args, report.string()));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.output.find(needle), std::string::npos) << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << "expected one line: " << r.output;
    EXPECT_FALSE(fs::exists(report)) << "a report was written";
  }
  const CommandResult r = run("--shapes=quick --report /proc/normbench/forbidden.csv");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("/proc/normbench"), std::string::npos) << r.output;
  // oneDNN (where this build has it) is the one implementation that leaves dtypes out.
  peers::register_all();
  const auto& impls = registry();
  if (std::any_of(impls.begin(), impls.end(), [](const Implementation& impl) { return impl.name == "onednn"; })) {
    const CommandResult none = run(fmt::format("--norm layernorm --impl onednn --dtype f64 --report {}", report.string()));
    EXPECT_EQ(none.exit_code, 2);
    EXPECT_NE(none.output.find("the selection is empty (no implementation supports the chosen norms and dtypes)"),
              std::string::npos)
        << none.output;
    EXPECT_FALSE(fs::exists(report));
  }
}

// One pass per shape and dtype, repetitions interleaved within it; CSV rows in registration order
// (each shape's ceilings first); one --benchmark_out file across the passes; the hygiene A/B.
TEST(BenchCli, PassesPerShapeInterleavedWithOneOutFileAndTheHygieneCheck) {
  const fs::path report = fs::temp_directory_path() / fmt::format("normbench-passes-{}.csv", getpid());
  const fs::path json = fs::temp_directory_path() / fmt::format("normbench-passes-{}.json", getpid());
  const std::string args = fmt::format(
      "--shape 4x768 --shape 32x1024 --norm rmsnorm --impl highway,threaded --dtype f32 --threads 1,2 "
      "--variant standard --benchmark_min_time=0.002 --benchmark_repetitions=2 --report {}",
      report.string());
  const CommandResult r = run(fmt::format("{} --hygiene-check --benchmark_out={}", args, json.string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("18 cases in 2 passes (one per shape and dtype; repetitions interleaved at random"),
            std::string::npos) << r.output;
  // 4x768 is too small to run on two threads: the partner is the 32x1024 threaded case.
  const auto m = search_ere(r.output,
                            "hygiene: rmsnorm/highway/f32/32x1024/threads:1 median ([0-9.]+) ns right after "
                            "rmsnorm/threaded/f32/32x1024/threads:2, ([0-9.]+) ns right after itself \\(ratio "
                            "([0-9.]+); 15 interleaved rounds each\\)");
  ASSERT_TRUE(m.has_value()) << r.output;
  const double ratio = std::stod((*m)[3]);
  EXPECT_NEAR(ratio, std::stod((*m)[1]) / std::stod((*m)[2]), 2e-3);
  EXPECT_GT(ratio, 0.5);
  EXPECT_LT(ratio, 2.0);

  std::ifstream csv(report);
  std::string header, first;
  std::getline(csv, header);
  std::getline(csv, first);
  EXPECT_NE(first.find(",ceiling/stream-scale/f32/4x768/threads:1,"), std::string::npos) << first;
  std::size_t rows = 1;
  for (std::string line; std::getline(csv, line);) rows += line.empty() ? 0 : 1;
  EXPECT_EQ(rows, 18u);  // per shape: 3 ceilings (2 stream-scale, 1 row-phased) x 2 thread counts, highway, threaded x 2

  // Google Benchmark's JSON over both passes: one document, both shapes, 2 repetitions + 4 aggregates each.
  std::ifstream in(json);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::size_t entries = 0;
  for (std::size_t at = text.find("\"run_name\":"); at != std::string::npos; at = text.find("\"run_name\":", at + 1))
    ++entries;
  EXPECT_EQ(entries, 18u * 6u);
  EXPECT_EQ(std::count(text.begin(), text.end(), '['), std::count(text.begin(), text.end(), ']'));
  EXPECT_EQ(text[text.find_last_not_of(" \n")], '}') << "the JSON document was not closed";
  EXPECT_NE(text.find("rmsnorm/threaded/f32/4x768/threads:2"), std::string::npos);
  EXPECT_NE(text.find("rmsnorm/threaded/f32/32x1024/threads:2"), std::string::npos);

  const CommandResult ordered = run(args + " --benchmark_enable_random_interleaving=false");
  ASSERT_EQ(ordered.exit_code, 0) << ordered.output;
  EXPECT_NE(ordered.output.find("in 2 passes (one per shape and dtype; cases one after another)"), std::string::npos)
      << ordered.output;
  EXPECT_EQ(ordered.output.find("hygiene"), std::string::npos);
  fs::remove(report);
  fs::remove(json);
}

// SIGTERM (a CI job's timeout) or Ctrl-C mid-run: the pass running finishes, no further pass
// starts, and the report holds the finished passes' cases, each whole (every repetition, no
// error); the exit code is the shell's for the signal.
TEST(BenchCli, ASignalStopsAfterThePassRunningAndKeepsItsReport) {
  const fs::path report = fs::temp_directory_path() / fmt::format("normbench-signal-{}.csv", getpid());
  const fs::path err = fs::temp_directory_path() / fmt::format("normbench-signal-{}.err", getpid());
  std::string shapes;
  for (int rows = 1; rows <= 12; ++rows) shapes += fmt::format(" --shape {}x768", rows);
  const std::string cmd = fmt::format(
      "{} {} --norm rmsnorm --impl highway --dtype f32 --threads 1 --variant standard --benchmark_min_time=0.01 "
      "--benchmark_repetitions=2 --report {} 2>{} >/dev/null & pid=$!; "
      "i=0; until grep -q 'case 1 of' {} 2>/dev/null || [ $i -ge 1200 ]; do sleep 0.1; i=$((i+1)); done; "
      "kill -TERM $pid; wait $pid; echo \"exit $?\"; cat {}",
      NORMBENCH_BIN, shapes, report.string(), err.string(), err.string(), err.string());
  const CommandResult r = run_command(cmd);
  EXPECT_NE(r.output.find("exit 143"), std::string::npos) << r.output;
  const auto m = search_ere(r.output, "Terminated: stopped after ([0-9]+) of 12 passes; the ([0-9]+) not run are not in the report");
  ASSERT_TRUE(m.has_value()) << r.output;
  const int finished = std::stoi((*m)[1]);
  EXPECT_GE(finished, 1);
  EXPECT_LT(finished, 12);
  EXPECT_EQ(std::stoi((*m)[2]), 12 - finished);
  report::CsvRows<4> csv(report.string(), {"rows", "repetitions", "error", "implementation"}, true);
  std::array<std::string, 4> row;
  std::set<std::string> shapes_in_report;
  int rows = 0;
  while (csv.next(row)) {
    ++rows;
    shapes_in_report.insert(row[0]);
    EXPECT_EQ(row[1], "2") << row[3] << " " << row[0];
    EXPECT_EQ(row[2], "") << row[3] << " " << row[0];
  }
  EXPECT_EQ(static_cast<int>(shapes_in_report.size()), finished);
  EXPECT_EQ(rows, 4 * finished);  // per pass: stream-scale, stream-scale-nt, row-phased, highway
  fs::remove(report);
  fs::remove(err);
}

constexpr const char* kSharedCpusWarning = "OpenMP threads can run on only";

// normbench re-executes itself once (a bounded OpenMP spin). Under OMP_PROC_BIND libgomp had
// pinned the first process to its first place, which the new process inherited: every thread of
// every team then ran on one CPU. The 2-thread team's two threads must sit on two CPUs.
TEST(BenchCli, OmpProcBindKeepsEveryCpuAcrossTheReExec) {
  if (allowed_cpus().size() < 2) GTEST_SKIP() << "needs two CPUs";
  const fs::path report = fs::temp_directory_path() / fmt::format("normbench-bind-{}.csv", getpid());
  for (const char* bind : {"OMP_PROC_BIND=close", "OMP_PROC_BIND=spread OMP_PLACES=cores"}) {
    SCOPED_TRACE(bind);
    const CommandResult r = run_command(fmt::format(
        "env {} OMP_DISPLAY_AFFINITY=TRUE OMP_AFFINITY_FORMAT='bound-to %A' {} --shape 64x768 --norm rmsnorm "
        "--variant standard --dtype f32 --impl threaded --threads 2 --benchmark_min_time=0.002 "
        "--benchmark_repetitions=1 --report {}",
        bind, NORMBENCH_BIN, report.string()));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.output.find(kSharedCpusWarning), std::string::npos) << r.output;
    std::set<std::string> places;  // each thread's affinity, as libgomp prints it
    for (std::size_t at = r.output.find("bound-to "); at != std::string::npos; at = r.output.find("bound-to ", at + 1))
      places.insert(r.output.substr(at + 9, r.output.find('\n', at) - at - 9));
    EXPECT_GE(places.size(), 2u) << r.output;
  }
  fs::remove(report);
}

// Threads confined to fewer CPUs than a case asks for are said to be, before the run.
TEST(BenchCli, WarnsWhenThreadsMustShareOneCpu) {
  if (std::system("command -v taskset >/dev/null 2>&1") != 0) GTEST_SKIP() << "no taskset";
  const std::vector<int> cpus = allowed_cpus();
  ASSERT_FALSE(cpus.empty());
  const fs::path report = fs::temp_directory_path() / fmt::format("normbench-taskset-{}.csv", getpid());
  const std::string args = fmt::format("--shape 64x768 --norm rmsnorm --variant standard --dtype f32 --impl threaded "
                                       "--threads 1,2 --benchmark_min_time=0.002 --benchmark_repetitions=1 --report {}",
                                       report.string());
  const CommandResult pinned =
      run_command(fmt::format("taskset -c {} {} {} 2>&1 >/dev/null", cpus.front(), NORMBENCH_BIN, args));
  ASSERT_EQ(pinned.exit_code, 0) << pinned.output;
  EXPECT_NE(pinned.output.find(fmt::format("2 {} 1 CPU(s)", kSharedCpusWarning)), std::string::npos) << pinned.output;
  if (cpus.size() >= 2) {  // unpinned, the two threads have two CPUs: no warning
    const CommandResult r = run(args);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.output.find(kSharedCpusWarning), std::string::npos) << r.output;
  }
  fs::remove(report);
}

TEST(BenchCli, HelpAndListExitZero) {
  EXPECT_EQ(run("--help").exit_code, 0);
  EXPECT_EQ(run("--list").exit_code, 0);
}

}  // namespace
}  // namespace normbench::testing
