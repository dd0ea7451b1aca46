// normbench-compare: verdicts on synthetic reports, the Mann-Whitney U test, malformed input;
// scripts/plot.py on the committed sample reports.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include <fmt/format.h>

#include "cli_support.hpp"
#include "normbench/compare.hpp"
#include "normbench/error.hpp"
#include "normbench/report.hpp"

namespace normbench::testing {
namespace {
namespace fs = std::filesystem;

fs::path temp(const std::string& name) { return fs::temp_directory_path() / fmt::format("nb-cmp-{}-{}", getpid(), name); }

// A benchmark report with `cases` cases of `reps` repetitions around 1000 ns (+-1% noise);
// `scale(case, rep)` multiplies each repetition.
template <class Scale>
void write_bench(const fs::path& path, int cases, int reps, Scale scale, const std::string& host = "hostA",
                 bool huge_pages = false) {
  report::MachineInfo m;
  m.host = host;
  m.cpu_model = "Test CPU";
  report::CsvTable t(report::bench_columns());
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> noise(0.99, 1.01);
  for (int c = 0; c < cases; ++c) {
    std::vector<double> times;
    std::string reps_text;
    for (int r = 0; r < reps; ++r) {
      times.push_back(1000.0 * (1 + c) * noise(rng) * scale(c, r));
      reps_text += fmt::format("{}{:.3f}", r ? ";" : "", times.back());
    }
    std::sort(times.begin(), times.end());
    const std::string median = report::num(times[times.size() / 2]);
    const std::string cols = std::to_string(64 * (c + 1));
    std::map<std::string, std::string> v = {  // by name: unnamed columns stay empty
        {"schema_version", std::to_string(report::kBenchSchemaVersion)},
        {"name", fmt::format("layernorm/impl{}/f32/1x{}/threads:1", c, cols)}, {"norm", "layernorm"},
        {"implementation", fmt::format("impl{}", c)}, {"family", "highway"}, {"kernel_target", "AVX2"},
        {"dtype", "f32"}, {"rows", "1"}, {"cols", cols}, {"threads", "1"}, {"cold_cache", "0"},
        {"huge_pages", huge_pages ? "1" : "0"}, {"thp_policy", "madvise"}, {"stores", "cached"}, {"bytes_per_iter", "1000"}, {"working_set_bytes", "1000"},
        {"repetitions", std::to_string(reps)}, {"iterations_median", "100"}, {"time_median_ns", median},
        {"time_min_ns", median}, {"time_max_ns", median}, {"time_cv", "0.01"}, {"gbps_median", "1"},
        {"gelems_per_s_median", "1"}, {"ceiling_gbps", "10"}, {"frac_of_ceiling", "0.1"},
        {"nt_ceiling_gbps", "12"}, {"frac_of_nt_ceiling", "0.08"}, {"rep_times_ns", reps_text}};
    const std::vector<std::string> all = report::bench_columns(), machine = report::machine_columns();
    for (const auto& [k, val] : v)  // every value above must name a real column
      EXPECT_NE(std::find(all.begin(), all.end(), k), all.end()) << k;
    std::vector<std::string> row;
    for (const std::string& col : all) {
      if (std::find(machine.begin(), machine.end(), col) != machine.end()) break;  // appended below
      row.push_back(v.count(col) ? v[col] : "");
    }
    for (std::string& v : report::machine_values(m)) row.push_back(v);
    t.add_row(row);
  }
  t.write_atomically(path.string());
}

TEST(Compare, SameReportHasNoRegression) {
  const fs::path a = temp("a.csv");
  write_bench(a, 6, 10, [](int, int) { return 1.0; });
  const CommandResult r = run_command(fmt::format("{} {} {}", NORMBENCH_COMPARE_BIN, a.string(), a.string()));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("0 regression(s) in 6 compared cases"), std::string::npos) << r.output;
  fs::remove(a);
}

TEST(Compare, A25PercentSlowdownOnOneCaseIsARegressionNamed) {
  const fs::path a = temp("a.csv"), b = temp("b.csv");
  write_bench(a, 6, 10, [](int, int) { return 1.0; });
  write_bench(b, 6, 10, [](int c, int) { return c == 3 ? 1.25 : 1.0; });
  const CommandResult r = run_command(fmt::format("{} {} {}", NORMBENCH_COMPARE_BIN, a.string(), b.string()));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("layernorm/impl3/f32/1x256/threads:1"), std::string::npos);
  EXPECT_NE(r.output.find("SLOWER"), std::string::npos);
  EXPECT_NE(r.output.find("1 regression(s)"), std::string::npos) << r.output;
  const CommandResult md = run_command(fmt::format("{} {} {} --format markdown", NORMBENCH_COMPARE_BIN, a.string(), b.string()));
  EXPECT_EQ(md.exit_code, 1);
  EXPECT_NE(md.output.find("| `layernorm/impl3/f32/1x256/threads:1` |"), std::string::npos) << md.output;
  const CommandResult csv = run_command(fmt::format("{} {} {} --format csv --filter impl3", NORMBENCH_COMPARE_BIN, a.string(), b.string()));
  EXPECT_EQ(csv.exit_code, 1);
  EXPECT_NE(csv.output.find("case,baseline,current,change,p_value,verdict"), std::string::npos) << csv.output;
  const CommandResult filtered = run_command(fmt::format("{} {} {} --filter impl1", NORMBENCH_COMPARE_BIN, a.string(), b.string()));
  EXPECT_EQ(filtered.exit_code, 0) << filtered.output;
  // A filter that matches nothing compares nothing: exit 2, not a vacuous pass.
  const CommandResult none = run_command(fmt::format("{} {} {} --filter impl9", NORMBENCH_COMPARE_BIN, a.string(), b.string()));
  EXPECT_EQ(none.exit_code, 2) << none.output;
  EXPECT_NE(none.output.find("nothing compared: no case matching --filter 'impl9' is in both reports (0 only in "
                             "baseline, 0 only in current)"),
            std::string::npos)
      << none.output;
  fs::remove(a);
  fs::remove(b);
}

// A run on huge pages is another measurement of the same kernels: its cases pair only with
// huge-page cases, never with a 4 KiB-page run's.
TEST(Compare, HugePageRunsPairOnlyWithHugePageRuns) {
  const fs::path a = temp("a.csv"), b = temp("b.csv");
  write_bench(a, 3, 10, [](int, int) { return 1.0; });
  write_bench(b, 3, 10, [](int, int) { return 1.5; }, "hostA", /*huge_pages=*/true);
  const CommandResult r = run_command(fmt::format("{} {} {}", NORMBENCH_COMPARE_BIN, a.string(), b.string()));
  EXPECT_NE(r.output.find("0 regression(s) in 0 compared cases"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("only in current:  layernorm/impl0/f32/1x64/threads:1/huge-pages"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("only in baseline: layernorm/impl0/f32/1x64/threads:1\n"), std::string::npos) << r.output;
  write_bench(a, 3, 10, [](int, int) { return 1.0; }, "hostA", /*huge_pages=*/true);
  const CommandResult same = run_command(fmt::format("{} {} {}", NORMBENCH_COMPARE_BIN, a.string(), b.string()));
  EXPECT_EQ(same.exit_code, 1) << same.output;
  EXPECT_NE(same.output.find("3 regression(s) in 3 compared cases"), std::string::npos) << same.output;
  fs::remove(a);
  fs::remove(b);
}

TEST(Compare, NoiseWithinThreePercentIsNotARegression) {
  const fs::path a = temp("a.csv"), b = temp("b.csv");
  write_bench(a, 8, 10, [](int, int) { return 1.0; });
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> noise(0.97, 1.03);
  std::vector<double> factors(80);
  for (double& f : factors) f = noise(rng);
  write_bench(b, 8, 10, [&](int c, int r) { return factors[c * 10 + r]; });
  const CommandResult r = run_command(fmt::format("{} {} {}", NORMBENCH_COMPARE_BIN, a.string(), b.string()));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  fs::remove(a);
  fs::remove(b);
}

TEST(Compare, TooFewRepetitionsSaysSoAndUsesTheThreshold) {
  const fs::path a = temp("a.csv"), b = temp("b.csv");
  write_bench(a, 3, 2, [](int, int) { return 1.0; });
  write_bench(b, 3, 2, [](int c, int) { return c == 0 ? 1.25 : 1.0; }, "hostB");
  const CommandResult r = run_command(fmt::format("{} {} {}", NORMBENCH_COMPARE_BIN, a.string(), b.string()));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("too few repetitions"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("WARNING: the reports come from different machines"), 0u) << "warning must come first";
  fs::remove(a);
  fs::remove(b);
}

// Of 20 cases, case 0 is 25% slower in every repetition (p 1.1e-5) and case 1 is 10% slower
// in 6 of its 10 and 0.3% faster in the rest (median +9%, p 0.029: the kind of case chance
// flags about once in 35 unchanged ones). Uncorrected, both are regressions; Holm (0.55) and
// Benjamini-Hochberg (0.29) over the 20 keep case 0 only.
TEST(Compare, CorrectedPValuesKeepTheClearRegressionAndDropTheMarginalOne) {
  const fs::path a = temp("a.csv"), b = temp("b.csv");
  write_bench(a, 20, 10, [](int, int) { return 1.0; });
  // Unchanged cases 0.1% slower (well inside the noise): no value ties with the baseline's.
  write_bench(b, 20, 10, [](int c, int r) { return c == 0 ? 1.25 : c != 1 ? 1.001 : r < 6 ? 1.10 : 0.997; });
  const auto compare = [&](const std::string& args) {
    return run_command(fmt::format("{} {} {} {}", NORMBENCH_COMPARE_BIN, a.string(), b.string(), args));
  };
  const CommandResult none = compare("--correction none");
  EXPECT_EQ(none.exit_code, 1) << none.output;
  EXPECT_NE(none.output.find("2 regression(s) in 20 compared cases (threshold 5%, alpha 0.05)\n"), std::string::npos)
      << none.output;
  EXPECT_EQ(compare("").output, none.output) << "none is the default";
  for (const auto& [name, title] :
       {std::pair<std::string, std::string>{"holm", "Holm"}, {"bh", "Benjamini-Hochberg"}}) {
    const CommandResult r = compare("--correction " + name);
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find(fmt::format("1 regression(s) in 20 compared cases (threshold 5%, alpha 0.05, p-values "
                                        "corrected by {} over 20 cases)",
                                        title)),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("p (" + name + ")"), std::string::npos) << r.output;
    const std::size_t slower = r.output.find("SLOWER");
    ASSERT_NE(slower, std::string::npos) << r.output;
    EXPECT_EQ(r.output.rfind("layernorm/impl0/", slower), r.output.rfind("layernorm/", slower)) << r.output;
    // The CSV keeps the test's own p-value and adds the corrected one.
    const CommandResult csv = compare("--format csv --correction " + name);
    EXPECT_EQ(csv.exit_code, 1) << csv.output;
    std::stringstream rows(csv.output);
    std::string header, row;
    std::getline(rows, header);
    while (std::getline(rows, row) && row.rfind("layernorm/impl1/", 0) != 0) {
    }
    EXPECT_EQ(header, "case,baseline,current,change,p_value,verdict,p_adjusted");
    const std::size_t verdict = row.rfind(',', row.rfind(',') - 1);
    const double p = std::stod(row.substr(row.rfind(',', verdict - 1) + 1)),
                 adjusted = std::stod(row.substr(row.rfind(',') + 1));
    EXPECT_LT(p, 0.05) << row;
    EXPECT_GT(adjusted, 0.05) << row;
    EXPECT_NE(row.find(",noise,"), std::string::npos) << row;
  }
  fs::remove(a);
  fs::remove(b);
}

// 5 repetitions a side cannot give a p-value below 2 / C(10, 5) = 0.0079; Holm over 20 cases
// needs 0.0025 for a lone case. Exit 2 with what would do, not a pass that can flag nothing.
TEST(Compare, ACorrectionThatCouldFlagNothingExitsTwoSayingHowManyRepetitions) {
  const fs::path a = temp("a.csv"), b = temp("b.csv");
  write_bench(a, 20, 5, [](int, int) { return 1.0; });
  write_bench(b, 20, 5, [](int c, int) { return c == 0 ? 1.25 : 1.001; });
  const CommandResult none = run_command(fmt::format("{} {} {}", NORMBENCH_COMPARE_BIN, a.string(), b.string()));
  EXPECT_EQ(none.exit_code, 1) << none.output;
  for (const std::string name : {"holm", "bh"}) {
    const CommandResult r = run_command(
        fmt::format("{} {} {} --correction {}", NORMBENCH_COMPARE_BIN, a.string(), b.string(), name));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    // 2 / C(12, 6) = 0.0022 < 0.0025
    EXPECT_NE(r.output.find(fmt::format("--correction {} over 20 cases needs a p-value below alpha / 20 = 0.0025",
                                        name)),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("run at least 6 repetitions a side"), std::string::npos) << r.output;
  }
  // Narrowed to 5 cases, 0.0079 < 0.05 / 5 = 0.01: the correction can decide, and case 0 is flagged.
  const CommandResult narrow = run_command(fmt::format("{} {} {} --correction holm --filter 'impl[0-4]/'",
                                                       NORMBENCH_COMPARE_BIN, a.string(), b.string()));
  EXPECT_EQ(narrow.exit_code, 1) << narrow.output;
  EXPECT_NE(narrow.output.find("1 regression(s) in 5 compared cases"), std::string::npos) << narrow.output;
  fs::remove(a);
  fs::remove(b);
}

TEST(Compare, RowsInOnlyOneFileAreListed) {
  const fs::path a = temp("a.csv"), b = temp("b.csv");
  write_bench(a, 4, 10, [](int, int) { return 1.0; });
  write_bench(b, 3, 10, [](int, int) { return 1.0; });
  const CommandResult r = run_command(fmt::format("{} {} {}", NORMBENCH_COMPARE_BIN, a.string(), b.string()));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("only in baseline: layernorm/impl3/f32/1x256/threads:1"), std::string::npos) << r.output;
  fs::remove(a);
  fs::remove(b);
}

// Rewrites one column of every row matching `select` in a copy of a committed sample report.
// Fields are split at every comma: the samples quote nothing, and a row that splits into more
// fields than the header (a quoted comma) fails the test rather than passing unchanged.
void rewrite(const fs::path& from, const fs::path& to, const std::string& select_col, const std::string& select_val,
             const std::string& col, const std::function<std::string(const std::string&)>& f) {
  std::ifstream in(from);
  std::ofstream out(to);
  std::string line;
  std::getline(in, line);
  out << line << "\n";
  std::vector<std::string> header;
  std::stringstream hs(line);
  for (std::string h; std::getline(hs, h, ',');) header.push_back(h);
  const auto idx = [&](const std::string& name) { return std::find(header.begin(), header.end(), name) - header.begin(); };
  int rewritten = 0;
  while (std::getline(in, line)) {
    std::vector<std::string> fields;
    std::stringstream ss(line);
    for (std::string v; std::getline(ss, v, ',');) fields.push_back(v);
    if (!line.empty() && line.back() == ',') fields.emplace_back();  // getline drops an empty last field
    ASSERT_EQ(fields.size(), header.size()) << from << ": " << line;
    if (fields[idx(select_col)] == select_val) {
      fields[idx(col)] = f(fields[idx(col)]);
      ++rewritten;
    }
    for (std::size_t i = 0; i < fields.size(); ++i) out << (i ? "," : "") << fields[i];
    out << "\n";
  }
  EXPECT_GT(rewritten, 0) << "no row of " << from << " has " << select_col << " = " << select_val;
}

// Reports with no case in common (a huge-page run against a 4 KiB-page one) compare nothing:
// exit 2, not a vacuous pass, with every case listed as only in one of them.
TEST(Compare, ReportsWithNoCaseInCommonExitTwo) {
  const fs::path a = temp("a.csv"), b = temp("b.csv");
  write_bench(a, 3, 10, [](int, int) { return 1.0; });
  write_bench(b, 3, 10, [](int, int) { return 1.0; }, "hostA", true);
  const CommandResult r = run_command(fmt::format("{} {} {}", NORMBENCH_COMPARE_BIN, a.string(), b.string()));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("nothing compared: no case is in both reports (3 only in baseline, 3 only in current)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("only in current:  layernorm/impl0/f32/1x64/threads:1"), std::string::npos) << r.output;
  fs::remove(a);
  fs::remove(b);
}

TEST(Compare, AccuracyReportWithDoubledUlpErrorIsARegression) {
  const fs::path sample = fs::path(NORMBENCH_SOURCE_DIR) / "reports/samples/accuracy-4x768.csv";
  const fs::path worse = temp("worse.csv");
  rewrite(sample, worse, "implementation", "welford", "ulp_max", [](const std::string& v) { return report::num(2 * std::stod(v)); });
  EXPECT_EQ(run_command(fmt::format("{} {} {}", NORMBENCH_COMPARE_BIN, sample.string(), sample.string())).exit_code, 0);
  const CommandResult r = run_command(fmt::format("{} {} {}", NORMBENCH_COMPARE_BIN, sample.string(), worse.string()));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("/welford/"), std::string::npos);
  EXPECT_NE(r.output.find("ULP error grew"), std::string::npos);
  // A within_bound that turns false is a regression too.
  rewrite(sample, worse, "implementation", "naive", "within_bound", [](const std::string&) { return "0"; });
  const CommandResult b = run_command(fmt::format("{} {} {}", NORMBENCH_COMPARE_BIN, sample.string(), worse.string()));
  EXPECT_EQ(b.exit_code, 1) << b.output;
  EXPECT_NE(b.output.find("left its bound"), std::string::npos);
  // Accuracy rows have no p-values: a correction changes nothing, and says so.
  const CommandResult corrected =
      run_command(fmt::format("{} {} {} --correction holm", NORMBENCH_COMPARE_BIN, sample.string(), worse.string()));
  EXPECT_EQ(corrected.exit_code, 1) << corrected.output;
  EXPECT_NE(corrected.output.find("--correction applies to benchmark reports"), std::string::npos) << corrected.output;
  EXPECT_NE(corrected.output.find("left its bound"), std::string::npos);
  fs::remove(worse);
}

// rep_times_ns with every repetition 25% longer.
std::string quarter_slower(const std::string& times) {
  std::stringstream in(times), out;
  std::string t;
  for (int i = 0; std::getline(in, t, ';'); ++i) out << (i ? ";" : "") << std::stod(t) * 1.25;
  return out.str();
}

TEST(Compare, ASlowerMachineCeilingIsDriftNotARegression) {
  const fs::path sample = fs::path(NORMBENCH_SOURCE_DIR) / "reports/samples/bench-quick.csv";
  const fs::path drift = temp("drift.csv");
  rewrite(sample, drift, "implementation", "stream-scale", "rep_times_ns", quarter_slower);
  const CommandResult r = run_command(fmt::format("{} {} {}", NORMBENCH_COMPARE_BIN, sample.string(), drift.string()));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("machine slower"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("WARNING: the machine's bandwidth ceiling moved by +25.0%"), std::string::npos) << r.output;
  // Named as normbench names the case (the CSV's norm column holds "none" for it).
  EXPECT_NE(r.output.find("\nceiling/stream-scale/f32/1x4096/threads:1 "), std::string::npos) << r.output;
  fs::remove(drift);
}

// normbench runs each dtype and shape as one pass: a slow spell of the machine moves every case
// of a pass, ceilings included. Every bf16 case 25% slower: a warning for each bf16 pass, naming
// its ceilings' change and its SLOWER cases (still counted), and none for the f32 passes.
TEST(Compare, APassWhoseCeilingsMovedWithItsCasesIsNamed) {
  const fs::path sample = fs::path(NORMBENCH_SOURCE_DIR) / "reports/samples/bench-quick.csv";
  const fs::path drift = temp("pass-drift.csv");
  rewrite(sample, drift, "dtype", "bf16", "rep_times_ns", quarter_slower);
  const CommandResult r = run_command(fmt::format("{} {} {}", NORMBENCH_COMPARE_BIN, sample.string(), drift.string()));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  for (const std::string pass : {"1x4096", "64x768", "128x4096", "512x4096"})
    EXPECT_NE(r.output.find(fmt::format("WARNING: the machine ran the bf16/{} pass slower: 4 of its 4 ceiling cases "
                                        "moved +25.0% to +25.0%, and its 16 case(s) that read SLOWER",
                                        pass)),
              std::string::npos)
        << pass << "\n" << r.output;
  EXPECT_EQ(r.output.find("WARNING: the machine ran the f32/"), std::string::npos) << r.output;
  // Half the ceilings moved: the whole-run warning fires too, and comes first.
  const std::size_t whole_run = r.output.find("WARNING: the machine's bandwidth ceiling moved by +25.0%");
  ASSERT_NE(whole_run, std::string::npos) << r.output;
  EXPECT_LT(whole_run, r.output.find("WARNING: the machine ran the bf16/")) << r.output;
  // Cases slower in a pass whose ceilings did not move get no such warning.
  rewrite(sample, drift, "implementation", "highway", "rep_times_ns", quarter_slower);
  const CommandResult kernels_only =
      run_command(fmt::format("{} {} {}", NORMBENCH_COMPARE_BIN, sample.string(), drift.string()));
  EXPECT_EQ(kernels_only.exit_code, 1) << kernels_only.output;
  EXPECT_EQ(kernels_only.output.find("WARNING"), std::string::npos) << kernels_only.output;
  fs::remove(drift);
}

// The row-phased ceiling rows (a norm's unavoidable traffic, and LayerNorm's with its arithmetic)
// are the machine's too.
TEST(Compare, ASlowerRowPhasedCeilingIsDriftNotARegression) {
  const fs::path sample = fs::path(NORMBENCH_SOURCE_DIR) / "reports/samples/bench-quick.csv";
  const fs::path base = temp("phased-base.csv"), drift = temp("phased-drift.csv");
  for (const std::string name : {"row-phased", "row-phased-arithmetic"}) {
    SCOPED_TRACE(name);
    rewrite(sample, base, "implementation", "stream-scale", "implementation", [&](const std::string&) { return name; });
    rewrite(base, drift, "implementation", name, "rep_times_ns", quarter_slower);
    const CommandResult r = run_command(fmt::format("{} {} {}", NORMBENCH_COMPARE_BIN, base.string(), drift.string()));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("WARNING: the machine's bandwidth ceiling moved by +25.0%"), std::string::npos) << r.output;
  }
  fs::remove(base);
  fs::remove(drift);
}

TEST(Compare, MalformedCsvExitsTwoNamingFileAndLine) {
  const fs::path good = temp("good.csv"), bad = temp("bad.csv");
  write_bench(good, 3, 5, [](int, int) { return 1.0; });
  std::ifstream in(good);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  const auto write = [&](const std::vector<std::string>& ls) {
    std::ofstream out(bad);
    for (const auto& l : ls) out << l << "\n";
  };
  const auto expect = [&](const std::string& what, const std::string& needle) {
    const CommandResult r = run_command(fmt::format("{} {} {}", NORMBENCH_COMPARE_BIN, good.string(), bad.string()));
    EXPECT_EQ(r.exit_code, 2) << what << ": " << r.output;
    EXPECT_NE(r.output.find(bad.string()), std::string::npos) << what << ": " << r.output;
    EXPECT_NE(r.output.find(needle), std::string::npos) << what << ": " << r.output;
  };
  {  // a missing column
    std::vector<std::string> ls = lines;
    for (auto& l : ls) l = l.substr(l.find(',') + 1);  // drops schema_version
    write(ls);
    expect("missing column", "schema_version");
  }
  {  // a non-numeric value in line 3
    std::vector<std::string> ls = lines;
    const auto pos = ls[2].find(";");
    ls[2].replace(pos - 3, 3, "abc");
    write(ls);
    expect("non-numeric", ":3: column 'rep_times_ns'");
  }
  for (const std::string time : {"nan", "-12.5", "0", "inf"}) {  // a repetition that is no time, in line 3
    std::vector<std::string> ls = lines;
    const auto end = ls[2].find(';'), begin = ls[2].rfind(',', end) + 1;
    ls[2].replace(begin, end - begin, time);
    write(ls);
    expect("time " + time, fmt::format(":3: column 'rep_times_ns': '{}' is not a time", time));
  }
  {  // a wrong schema_version in line 2
    std::vector<std::string> ls = lines;
    ls[1][0] = '9';
    write(ls);
    expect("schema", ":2: column 'schema_version': 9");
  }
  {  // a truncated line
    std::vector<std::string> ls = lines;
    ls[3] = ls[3].substr(0, ls[3].size() / 2);
    write(ls);
    expect("truncated", "line 4");
  }
  {  // a side that names no report (it had compared nothing against everything)
    const CommandResult r = run_command(fmt::format("{} , {}", NORMBENCH_COMPARE_BIN, good.string()));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("baseline: ',' names no report"), std::string::npos) << r.output;
  }
  {  // kinds are not pooled, even where the first report has no rows (it had passed unnoticed)
    const fs::path header_only = temp("accuracy-header.csv");
    std::ofstream(header_only) << fmt::format("{}\n", fmt::join(report::accuracy_columns(), ","));
    const CommandResult r = run_command(
        fmt::format("{} {},{} {}", NORMBENCH_COMPARE_BIN, header_only.string(), good.string(), good.string()));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(good.string() + ": a benchmark report cannot be pooled with accuracy reports"),
              std::string::npos)
        << r.output;
    fs::remove(header_only);
  }
  EXPECT_EQ(run_command(fmt::format("{} {} /nonexistent.csv", NORMBENCH_COMPARE_BIN, good.string())).exit_code, 2);
  EXPECT_EQ(run_command(fmt::format("{} {}", NORMBENCH_COMPARE_BIN, good.string())).exit_code, 2);  // usage
  fs::remove(good);
  fs::remove(bad);
}

TEST(MannWhitney, ExactPValuesMatchTheTables) {
  using compare::mann_whitney_u;
  // Fully separated samples: p = 2 / C(n1 + n2, n1).
  EXPECT_NEAR(mann_whitney_u({1, 2, 3}, {4, 5, 6}).p, 2.0 / 20, 1e-12);
  EXPECT_NEAR(mann_whitney_u({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}).p, 2.0 / 252, 1e-12);  // scipy: 0.007937
  EXPECT_NEAR(mann_whitney_u({6, 7, 8, 9, 10}, {1, 2, 3, 4, 5}).p, 2.0 / 252, 1e-12);
  EXPECT_DOUBLE_EQ(mann_whitney_u({1, 2, 3}, {4, 5, 6}).min_p, 0.1);
  // Interleaved samples: no evidence.
  EXPECT_GT(mann_whitney_u({1, 3, 5, 7, 9}, {2, 4, 6, 8, 10}).p, 0.5);
  // U = #(a > b) = 0+0+1+3+3 = 7. Under the null, the counts of U = 0..7 for 5 vs 5 are the
  // Gaussian-binomial coefficients 1,1,2,3,5,7,9,11 (sum 39 of C(10,5) = 252): p = 2*39/252.
  const auto r = mann_whitney_u({1, 2, 4, 7, 8}, {3, 5, 6, 9, 10});
  EXPECT_DOUBLE_EQ(r.u, 7);
  EXPECT_NEAR(r.p, 78.0 / 252, 1e-12);
  // Ties keep the exact test. a = 1..9, b = 9..17: the one shared value leaves U at 0.5, which
  // 2 of the C(18, 9) = 48620 splits reach (1..8 and either 9) and none goes below; the normal
  // approximation gave 4.8e-4 here.
  std::vector<double> low, high;
  for (int v = 1; v <= 9; ++v) {
    low.push_back(v);
    high.push_back(v + 8);
  }
  const auto tied = mann_whitney_u(low, high);
  EXPECT_TRUE(tied.exact);
  EXPECT_DOUBLE_EQ(tied.u, 0.5);
  EXPECT_NEAR(tied.p, 4.0 / 48620, 1e-15);
  EXPECT_NEAR(tied.min_p, 4.0 / 48620, 1e-15);
  // Every value tied: no split differs from another, nothing to test.
  EXPECT_DOUBLE_EQ(mann_whitney_u({5, 5, 5, 5}, {5, 5, 5, 5}).min_p, 1.0);
  EXPECT_FALSE(mann_whitney_u(std::vector<double>(51, 1.0), std::vector<double>(50, 2.0)).exact);
}

// The exact test with ties against a count of every split of the pooled values (a different
// algorithm: enumeration instead of the test's dynamic programme over tie groups), for samples
// drawn from few values so that most of them tie.
// A NaN is equal to nothing, so it formed no tie group and the grouping never ended.
TEST(MannWhitney, NonFiniteValuesAreRejected) {
  const std::vector<double> a = {1, 2, 3, 4}, b = {5, 6, 7, 8};
  for (const double bad : {std::nan(""), double{INFINITY}, -double{INFINITY}}) {
    std::vector<double> with_bad = b;
    with_bad[2] = bad;
    EXPECT_THROW(compare::mann_whitney_u(a, with_bad), normbench::Error) << bad;
    EXPECT_THROW(compare::mann_whitney_u(with_bad, a), normbench::Error) << bad;
  }
  EXPECT_NO_THROW(compare::mann_whitney_u(a, b));
}

TEST(MannWhitney, ExactPValuesWithTiesMatchEnumeratingEverySplit) {
  using compare::mann_whitney_u;
  std::mt19937 rng(7);
  for (int trial = 0; trial < 40; ++trial) {
    const std::size_t n1 = 3 + trial % 5, n2 = 4 + trial % 4, levels = 2 + trial % 4;
    std::uniform_int_distribution<int> value(0, static_cast<int>(levels) - 1);
    std::vector<double> a(n1), b(n2), pooled;
    for (double& v : a) v = value(rng);
    for (double& v : b) v = value(rng);
    pooled = a;
    pooled.insert(pooled.end(), b.begin(), b.end());
    const auto u_of = [](const std::vector<double>& x, const std::vector<double>& y) {
      double u = 0;
      for (double p : x)
        for (double q : y) u += p > q ? 1.0 : p == q ? 0.5 : 0.0;
      return u;
    };
    const double u = u_of(a, b);
    std::vector<double> us;  // U of every split: in_a marks the pooled values given to a
    std::vector<bool> in_a(pooled.size(), false);
    std::fill(in_a.begin(), in_a.begin() + static_cast<std::ptrdiff_t>(n1), true);
    std::sort(in_a.begin(), in_a.end());
    do {
      std::vector<double> x, y;
      for (std::size_t k = 0; k < pooled.size(); ++k) (in_a[k] ? x : y).push_back(pooled[k]);
      us.push_back(u_of(x, y));
    } while (std::next_permutation(in_a.begin(), in_a.end()));
    const double total = static_cast<double>(us.size());
    const double below = static_cast<double>(std::count_if(us.begin(), us.end(), [&](double v) { return v <= u; }));
    const double above = static_cast<double>(std::count_if(us.begin(), us.end(), [&](double v) { return v >= u; }));
    const auto lo = std::min_element(us.begin(), us.end()), hi = std::max_element(us.begin(), us.end());
    const double at_lo = static_cast<double>(std::count(us.begin(), us.end(), *lo));
    const double at_hi = static_cast<double>(std::count(us.begin(), us.end(), *hi));
    const auto r = mann_whitney_u(a, b);
    ASSERT_TRUE(r.exact);
    EXPECT_DOUBLE_EQ(r.u, u);
    EXPECT_NEAR(r.p, std::min(1.0, 2 * std::min(below, above) / total), 1e-12) << "trial " << trial;
    EXPECT_NEAR(r.min_p, std::min(1.0, 2 * std::min(at_lo, at_hi) / total), 1e-12) << "trial " << trial;
  }
}

// R's p.adjust(c(0.01, 0.04, 0.03, 0.005), "holm") and "BH"; both keep the order given.
TEST(AdjustPValues, MatchRsPAdjust) {
  using compare::adjust_p_values;
  using compare::Correction;
  const std::vector<double> p = {0.01, 0.04, 0.03, 0.005};
  EXPECT_EQ(adjust_p_values(p, Correction::kNone), p);
  const std::vector<double> holm = adjust_p_values(p, Correction::kHolm);
  const std::vector<double> bh = adjust_p_values(p, Correction::kBenjaminiHochberg);
  const std::vector<double> want_holm = {0.03, 0.06, 0.06, 0.02}, want_bh = {0.02, 0.04, 0.04, 0.02};
  ASSERT_EQ(holm.size(), 4u);
  ASSERT_EQ(bh.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_NEAR(holm[i], want_holm[i], 1e-15) << i;
    EXPECT_NEAR(bh[i], want_bh[i], 1e-15) << i;
  }
  // Capped at 1, never below the p-value itself; ties keep equal adjusted values.
  const std::vector<double> big = adjust_p_values({0.5, 0.5, 0.9}, Correction::kHolm);
  EXPECT_EQ(big, (std::vector<double>{1.0, 1.0, 1.0}));
  const std::vector<double> tied = adjust_p_values({0.02, 0.02}, Correction::kBenjaminiHochberg);
  EXPECT_EQ(tied, (std::vector<double>{0.02, 0.02}));
  EXPECT_TRUE(adjust_p_values({}, Correction::kHolm).empty());
}

// ---- plots ----

TEST(Plots, SampleReportsGiveTheExpectedPngs) {
  if (run_command("/usr/bin/python3 -c 'import matplotlib, numpy'").exit_code != 0)
    GTEST_SKIP() << "Debian's python3-matplotlib / python3-numpy not installed";
  const fs::path out = temp("plots");
  const std::string src = NORMBENCH_SOURCE_DIR;
  const CommandResult r = run_command(fmt::format("/usr/bin/python3 {0}/scripts/plot.py --out {1} {0}/reports/samples/bench-quick.csv "
                                   "{0}/reports/samples/accuracy-4x768.csv", src, out.string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<std::string> expected;
  for (const char* norm : {"layernorm", "rmsnorm"}) {
    for (const char* dtype : {"f32", "bf16"})
      for (const char* t : {"1", "2"}) expected.push_back(fmt::format("throughput-{}-{}-t{}.png", norm, dtype, t));
    for (const char* dtype : {"f32", "bf16"}) expected.push_back(fmt::format("speedup-{}-{}-t1.png", norm, dtype));
    for (const char* dtype : {"f32", "f64", "bf16", "f16"}) expected.push_back(fmt::format("accuracy-{}-{}.png", norm, dtype));
  }
  expected.push_back("speedup-layernorm-f32-t2.png");  // threaded vs onednn at 2 threads
  expected.push_back("speedup-layernorm-bf16-t2.png");
  std::vector<std::string> got;
  for (const auto& e : fs::directory_iterator(out)) got.push_back(e.path().filename().string());
  std::sort(expected.begin(), expected.end());
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, expected);
  for (const std::string& name : got) {
    std::ifstream png(out / name, std::ios::binary);
    char sig[8] = {};
    png.read(sig, 8);
    EXPECT_EQ(std::string(sig, 8), std::string("\x89PNG\r\n\x1a\n", 8)) << name;
    EXPECT_GT(fs::file_size(out / name), 10000u) << name;
    EXPECT_NE(r.output.find(name), std::string::npos) << "path not printed: " << name;
  }
  fs::remove_all(out);
}

// Input it cannot plot: one line that says why and exit 1, never a traceback or a silent success.
TEST(Plots, InputWithNothingToPlotSaysSo) {
  if (run_command("/usr/bin/python3 -c 'import matplotlib, numpy'").exit_code != 0)
    GTEST_SKIP() << "Debian's python3-matplotlib / python3-numpy not installed";
  const fs::path out = temp("plots-none"), ceilings = temp("ceilings-only.csv"), binary = temp("binary.csv");
  {  // the sample report's header and its first two rows, its f32 1x4096 ceilings
    std::ifstream in(std::string(NORMBENCH_SOURCE_DIR) + "/reports/samples/bench-quick.csv");
    std::ofstream o(ceilings);
    std::string line;
    for (int i = 0; i < 3 && std::getline(in, line); ++i) o << line << "\n";
    ASSERT_NE(line.find("stream-scale"), std::string::npos) << line;
  }
  std::ofstream(binary, std::ios::binary) << std::string("\x93NUMPY\x01\x00", 8);
  const auto plot = [&](const fs::path& report) {
    return run_command(fmt::format("/usr/bin/python3 {}/scripts/plot.py --out {} {}", NORMBENCH_SOURCE_DIR, out.string(),
                                   report.string()));
  };
  const CommandResult none = plot(ceilings), not_csv = plot(binary);
  EXPECT_EQ(none.exit_code, 1) << none.output;
  EXPECT_NE(none.output.find(ceilings.string() + ": nothing to plot"), std::string::npos) << none.output;
  EXPECT_EQ(not_csv.exit_code, 1) << not_csv.output;
  EXPECT_NE(not_csv.output.find(binary.string() + ": not a CSV file"), std::string::npos) << not_csv.output;
  for (const CommandResult* r : {&none, &not_csv}) EXPECT_EQ(r->output.find("Traceback"), std::string::npos) << r->output;
  fs::remove_all(out);
  fs::remove(ceilings);
  fs::remove(binary);
}

}  // namespace
}  // namespace normbench::testing
