// The accuracy harness finds what it should; low-kappa errors stay within a derived bound; .npy
// files round-trip and malformed ones are rejected with a precise error.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "cli_support.hpp"
#include "harness.hpp"
#include "metrics.hpp"
#include "normbench/csv_read.hpp"
#include "npy.hpp"
#include "peers.hpp"

namespace normbench::testing {
namespace {
namespace fs = std::filesystem;
using accuracy::CaseMetrics;
using accuracy::DistCase;

const Implementation* impl(std::string_view name) { return &find_implementation(name); }

constexpr std::pair<std::int64_t, std::int64_t> kShapes[] = {{16, 7}, {8, 768}, {4, 4096}, {4, 65537}};

CaseMetrics run(const Implementation& i, Norm n, DType t, DistCase d, std::int64_t rows, std::int64_t cols) {
  const auto c = accuracy::prepare(Problem{n, t, rows, cols, default_eps(n)}, d, 1);
  return accuracy::run_case(i, c, 2);
}

// The fused formula loses the variance once kappa^2 u ~ 1: at kappa >= 1e4 in f32 its variance
// error exceeds 100%, and the harness must say so. Two-pass, Welford and the SIMD kernel stay
// within their own bounds at every kappa up to 1e8.
TEST(AccuracyHarness, FindsTheFusedFormulaBreakingAndTheStableOnesWithinBounds) {
  for (double kappa : accuracy::offset_kappas())
    for (auto [rows, cols] : kShapes) {
      SCOPED_TRACE(fmt::format("kappa={:g} {}x{}", kappa, rows, cols));
      const DistCase d{"offset", kappa};
      const CaseMetrics fused = run(*impl("fused"), Norm::kLayerNorm, DType::kF32, d, rows, cols);
      // Judged on the measured kappa of the rounded data: at kappa 1e8 short f32 rows round to a
      // constant (ulp(1e8) = 8 >> sigma = 1), leaving no variance to get wrong.
      if (fused.kappa_max >= 1e4) {
        EXPECT_GE(fused.var_rel_err_max, 1.0) << "measured kappa " << fused.kappa_max;
      }
      for (const char* name : {"naive", "welford", "highway"})
        for (Norm n : kAllNorms) {
          const CaseMetrics m = run(*impl(name), n, DType::kF32, d, rows, cols);
          EXPECT_TRUE(m.within_bound) << name << " " << norm_name(n) << ": variance error " << m.var_rel_err_max
                                      << ", bound " << m.bound;
        }
    }
}

// Normwise error bound at kappa <= 10 for every f32 implementation, derived with the
// probabilistic rounding-error model (Higham & Mary 2019: a sum of n terms errs by at most
// lambda sqrt(n) u sum|terms| with probability >= 1 - 2 exp(-lambda^2/2); lambda = 6).
// In units of u * max|ref| (an ulp of the row's largest output is at least that):
//   mean error / sigma     <= lambda sqrt(n) u mean|x|/sigma <= lambda sqrt(n) u kappa
//   rstd relative error    <= lambda sqrt(n) u K/2 + 2u, K = 1 (two-pass), kappa (Welford),
//                             kappa^2 (textbook)
//   apply and rounding     <= 3u |z gamma| + u |beta|, plus half an ulp of the output
// so normwise <= 0.5 + G (lambda sqrt(n) (kappa + K/2) + 6), G = (max|gamma| (1 + max|z|) + max|beta|) / max|y|,
// which is below 2 for these parameters. The test takes G = 2.
double low_kappa_bound(const Implementation& i, std::int64_t n, double kappa) {
  const double lambda = 6, k = kappa;
  const double K = i.variance_algorithm == VarianceAlgorithm::kTextbook ? k * k
                   : i.variance_algorithm == VarianceAlgorithm::kWelford ? k
                                                                         : 1.0;
  return 0.5 + 2 * (lambda * std::sqrt(static_cast<double>(n)) * (k + K / 2) + 6);
}

std::vector<const Implementation*> all_impls() {
  peers::register_all();
  std::vector<const Implementation*> v;
  for (const Implementation& i : registry()) v.push_back(&i);
  return v;
}

TEST(AccuracyHarness, F32NormwiseErrorAtLowKappaWithinDerivedBound) {
  for (const Implementation* i : all_impls())
    for (Norm n : i->norms) {
      if (!i->supports(n, DType::kF32)) continue;
      for (const DistCase& d : {DistCase{"normal", NAN}, DistCase{"uniform", NAN}, DistCase{"offset", 1.0},
                                DistCase{"offset", 10.0}})
        for (auto [rows, cols] : kShapes) {
          const CaseMetrics m = run(*i, n, DType::kF32, d, rows, cols);
          const double bound = low_kappa_bound(*i, cols, m.kappa_max);
          EXPECT_LE(m.normwise_ulp_max, bound)
              << i->name << " " << norm_name(n) << " " << d.label() << " " << rows << "x" << cols;
          EXPECT_EQ(m.nonfinite_mismatches, 0);
        }
    }
}

// bf16/f16 outputs computed in f32: the f32 error is a small fraction of a 16-bit ulp, so the
// output is within 1 ulp (normwise) and mostly (>= 75%) correctly rounded, at kappa <= 10.
// The textbook formula is exempt from the 1-ulp claim: its error grows like n kappa^2 u_f32 and
// already reaches a bf16 ulp at kappa = 10, n = 65537 (the accuracy report shows it).
TEST(AccuracyHarness, HalfPrecisionOutputsWithinOneUlpAndMostlyCorrectlyRounded) {
  for (const Implementation* i : all_impls()) {
    if (i->variance_algorithm == VarianceAlgorithm::kTextbook) continue;
    for (Norm n : i->norms)
      for (DType t : {DType::kBF16, DType::kF16}) {
        if (!i->supports(n, t)) continue;
        for (const DistCase& d : {DistCase{"normal", NAN}, DistCase{"offset", 10.0}})
          for (auto [rows, cols] : kShapes) {
            SCOPED_TRACE(fmt::format("{} {} {} {} {}x{}", i->name, norm_name(n), dtype_name(t), d.label(), rows, cols));
            const CaseMetrics m = run(*i, n, t, d, rows, cols);
            EXPECT_LE(m.normwise_ulp_max, 1.0);
            EXPECT_GE(m.frac_correctly_rounded, 0.75);
          }
      }
  }
}

// The accuracy-first variant rounds once from f64: correctly rounded normwise at every kappa.
TEST(AccuracyHarness, F64VariantIsCorrectlyRoundedNormwiseAndSurvivesF32Overflow) {
  for (DType t : {DType::kF32, DType::kBF16, DType::kF16})
    for (double kappa : {1.0, 1e4, 1e8}) {
      const CaseMetrics m = run(*impl("highway-f64"), Norm::kLayerNorm, t, DistCase{"offset", kappa}, 4, 4096);
      if (std::isnan(m.normwise_ulp_max)) continue;  // f16 overflow at kappa 1e8: nothing finite
      EXPECT_LE(m.normwise_ulp_max, 0.5 + 1e-3) << dtype_name(t) << " kappa " << kappa;
    }
  const DistCase range{"range", NAN};  // squares overflow f32, not f64
  EXPECT_TRUE(run(*impl("highway-f64"), Norm::kLayerNorm, DType::kF32, range, 4, 768).within_bound);
  EXPECT_FALSE(run(*impl("highway"), Norm::kLayerNorm, DType::kF32, range, 4, 768).within_bound);
}

// ---- .npy ----

fs::path temp(const std::string& name) { return fs::temp_directory_path() / fmt::format("nb-{}-{}", getpid(), name); }

// Overflows (every implementation on the `range` distribution) come by the thousand; a kernel
// less accurate than its bound must still be seen: finite excesses are listed first, and the
// header tells the two kinds apart.
TEST(AccuracySummary, FiniteExcessesAreListedBeforeAnyOverflowAndCounted) {
  std::vector<std::string> overflowed, finite = {"highway layernorm f32 normal 8x768: variance error 0.1",
                                                  "welford layernorm f32 offset 1x4096: variance error 0.2"};
  for (int i = 0; i < 50; ++i)
    overflowed.push_back(fmt::format("naive layernorm f32 range case {}: variance error inf", i));
  const std::string text = accuracy::exceeded_bound_summary(finite, overflowed, 40);
  EXPECT_NE(text.find("52 case(s) EXCEED"), std::string::npos) << text;
  EXPECT_NE(text.find("2 with a finite variance error, 50 with a non-finite output"), std::string::npos) << text;
  const auto first_overflow = text.find("range case 0:");
  ASSERT_NE(first_overflow, std::string::npos) << text;
  for (const std::string& line : finite) {
    const auto at = text.find(line);
    ASSERT_NE(at, std::string::npos) << line;
    EXPECT_LT(at, first_overflow) << line;
  }
  EXPECT_EQ(text.find("range case 38:"), std::string::npos) << "more than 40 lines listed";
  EXPECT_NE(text.find("range case 37:"), std::string::npos) << text;
  EXPECT_NE(text.find("... and 12 more"), std::string::npos) << text;
  // Only overflows: all listed when they fit, no "more" line.
  const std::string few = accuracy::exceeded_bound_summary({}, {"a: inf", "b: inf"}, 40);
  EXPECT_NE(few.find("2 case(s) EXCEED their algorithm's theoretical variance bound: 0 with a finite"),
            std::string::npos)
      << few;
  EXPECT_EQ(few.find("more"), std::string::npos) << few;
  EXPECT_EQ(accuracy::exceeded_bound_summary({}, {}), "");
}

TEST(Npy, RoundTripsEveryDtype) {
  for (DType t : kAllDTypes) {
    std::vector<unsigned char> data(3 * 5 * dtype_size(t));
    for (std::size_t i = 0; i < 15; ++i) store_rounded(t, data.data(), i, 0.25 * static_cast<double>(i) - 1);
    const fs::path p = temp(fmt::format("rt-{}.npy", dtype_name(t)));
    accuracy::write_npy(p.string(), t, 3, 5, data.data());
    const accuracy::NpyArray a = accuracy::read_npy(p.string(), t == DType::kBF16);
    EXPECT_EQ(a.dtype, t);
    EXPECT_EQ(a.rows, 3);
    EXPECT_EQ(a.cols, 5);
    EXPECT_EQ(a.data, data);
    fs::remove(p);
  }
}

int shell(const std::string& cmd) { return run_command(cmd).exit_code; }

TEST(Npy, InteroperatesWithNumpy) {
  if (shell("/usr/bin/python3 -c 'import numpy' 2>/dev/null") != 0) GTEST_SKIP() << "Debian's python3-numpy not installed";
  // numpy writes a 3-D float16 array (read as 6 x 4 over the last axis) ...
  const fs::path from_numpy = temp("numpy.npy");
  ASSERT_EQ(shell(fmt::format("/usr/bin/python3 -c \"import numpy as np; np.save('{}', "
                              "(np.arange(24, dtype=np.float16) / 8).reshape(2, 3, 4))\"", from_numpy.string())), 0);
  const accuracy::NpyArray a = accuracy::read_npy(from_numpy.string(), false);
  ASSERT_EQ(a.dtype, DType::kF16);
  ASSERT_EQ(a.rows, 6);
  ASSERT_EQ(a.cols, 4);
  for (std::size_t i = 0; i < 24; ++i) EXPECT_EQ(load_as_long_double(DType::kF16, a.data.data(), i), i / 8.0L);
  // ... and reads what we write.
  const fs::path from_us = temp("ours.npy");
  std::vector<double> v = {1.5, -2.25, 3e100, 0};
  accuracy::write_npy(from_us.string(), DType::kF64, 2, 2, v.data());
  EXPECT_EQ(shell(fmt::format("/usr/bin/python3 -c \"import numpy as np; a = np.load('{}'); "
                              "assert a.shape == (2, 2) and a.dtype == np.float64 and a.tolist() == [[1.5, -2.25], [3e100, 0.0]]\"",
                              from_us.string())), 0);
  // A pipe reads as the file does (--input <(...)): the reader does not seek.
  const fs::path fifo = temp("numpy.fifo");
  ASSERT_EQ(shell(fmt::format("mkfifo {}", fifo.string())), 0);
  ASSERT_EQ(shell(fmt::format("(cat {} > {} &)", from_numpy.string(), fifo.string())), 0);
  const accuracy::NpyArray piped = accuracy::read_npy(fifo.string(), false);
  EXPECT_EQ(piped.rows, 6);
  EXPECT_EQ(piped.cols, 4);
  EXPECT_EQ(piped.data, a.data);
  fs::remove(fifo);
  fs::remove(from_numpy);
  fs::remove(from_us);
}

std::string npy_bytes(const std::string& header_dict, std::size_t data_bytes, int major = 1) {
  std::string h = header_dict;
  h.append((64 - (10 + h.size() + 1) % 64) % 64, ' ');
  h += '\n';
  std::string out = std::string("\x93NUMPY", 6) + static_cast<char>(major) + '\0';
  out += static_cast<char>(h.size() & 0xFF);
  out += static_cast<char>(h.size() >> 8);
  return out + h + std::string(data_bytes, '\0');
}

TEST(Npy, MalformedFilesAreRejectedWithTheReason) {
  const std::pair<std::string, std::string> cases[] = {
      {"not an npy file at all", "bad magic"},
      {std::string("\x93NUMPY", 6) + "\x01", "truncated header"},
      {npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 24, 7), "unsupported .npy format version 7"},
      {npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }", 24), "unsupported dtype '<i4'"},
      {npy_bytes("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", 24), "big-endian"},
      {npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24), "Fortran-order"},
      {npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (), }", 4), "0-d arrays"},
      {npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 3), }", 0), "empty array"},
      {npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 20), "truncated data"},
      {npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 28), "unexpected data after"},
      // a shape far beyond the file: rejected before any buffer of that size is allocated
      {npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999), }", 24),
       "expected 39999599999600004 bytes for shape (99999999999, 99999), found 24"},
      {npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }", 24), "shape overflows"},
      {npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4611686018427387904), }", 24), "shape overflows"},
      {npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,), }", 24), "shape overflows"},
      {npy_bytes("{'descr': '<u2', 'fortran_order': False, 'shape': (2, 3), }", 12), "--input-dtype bf16"},
      {npy_bytes("{'fortran_order': False, 'shape': (2, 3), }", 24), "no 'descr'"},
  };
  for (const auto& [bytes, needle] : cases) {
    const fs::path p = temp("bad.npy");
    std::ofstream(p, std::ios::binary) << bytes;
    try {
      accuracy::read_npy(p.string(), false);
      ADD_FAILURE() << "accepted; expected '" << needle << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(p.string()), std::string::npos) << "message must name the file";
    }
    // The CLI turns it into exit code 2.
    EXPECT_EQ(shell(fmt::format("{} --input {} --report {} 2>/dev/null >/dev/null", NORMBENCH_ACCURACY_BIN, p.string(),
                                temp("r.csv").string())), 2);
    fs::remove(p);
  }
  EXPECT_THROW(accuracy::read_npy(temp("missing.npy").string(), false), Error);
}

// ---- the CLI and its report ----

TEST(AccuracyCli, ReportHasTheDocumentedColumnsAndUserTensorsWork) {
  const std::vector<std::string> doc = documented_columns(NORMBENCH_REPORTS_README, "Accuracy report").names;
  constexpr std::size_t kColumns = 47;
  ASSERT_EQ(doc.size(), kColumns);
  std::array<std::string, kColumns> names;
  std::copy(doc.begin(), doc.end(), names.begin());

  // A user tensor (bf16 as uint16), dumped outputs, and the report.
  const fs::path npy = temp("acts.npy"), report = temp("acc.csv"), dump = temp("dump");
  std::vector<bf16> acts(4 * 96);
  for (std::size_t i = 0; i < acts.size(); ++i) acts[i] = bf16_from_f32(std::sin(0.1f * i) * (i % 96 == 5 ? 500 : 1));
  accuracy::write_npy(npy.string(), DType::kBF16, 4, 96, acts.data());
  ASSERT_EQ(shell(fmt::format("{} --input {} --input-dtype bf16 --dump {} --report {} >/dev/null 2>&1",
                              NORMBENCH_ACCURACY_BIN, npy.string(), dump.string(), report.string())), 0);
  report::CsvRows<kColumns> csv(report.string(), names);
  std::array<std::string, kColumns> row;
  int rows = 0;
  while (csv.next(row)) {
    ++rows;
    EXPECT_EQ(row[7], fmt::format("nb-{}-acts", getpid()));  // distribution named after the file
    EXPECT_EQ(row[6], "bf16");
  }
  EXPECT_GT(rows, 0);
  EXPECT_TRUE(fs::exists(dump / fmt::format("nb-{}-acts-layernorm-bf16-4x96-reference.npy", getpid())));
  EXPECT_TRUE(fs::exists(dump / fmt::format("nb-{}-acts-rmsnorm-bf16-4x96-highway.npy", getpid())));
  fs::remove_all(dump);
  fs::remove(npy);
  fs::remove(report);
  EXPECT_EQ(shell(fmt::format("{} --dist nope --report {} 2>/dev/null", NORMBENCH_ACCURACY_BIN, report.string())), 2);
  EXPECT_EQ(shell(fmt::format("{} --eps -1 --report {} 2>/dev/null", NORMBENCH_ACCURACY_BIN, report.string())), 2);
  EXPECT_EQ(shell(fmt::format("{} --help >/dev/null", NORMBENCH_ACCURACY_BIN)), 0);
  // A selection with nothing to measure exits 2 (it had written an empty report and exited 0).
  const CommandResult nothing = run_command(fmt::format("{} --norm layernorm --variant unbiased --shape 4x1 --report {}",
                                                        NORMBENCH_ACCURACY_BIN, report.string()));
  EXPECT_EQ(nothing.exit_code, 2) << nothing.output;
  EXPECT_NE(nothing.output.find("nothing to measure"), std::string::npos) << nothing.output;
  EXPECT_FALSE(fs::exists(report));
}

// SIGTERM (or Ctrl-C) mid-sweep: the case running finishes, the rest are skipped, and the report
// holds the cases that ran; the exit code is the shell's for the signal.
TEST(AccuracyCli, ASignalStopsTheSweepAndKeepsItsReport) {
  const fs::path report = temp("acc-signal.csv"), err = temp("acc-signal.err");
  const CommandResult r = run_command(fmt::format(
      "{} --norm layernorm,rmsnorm --report {} 2>{} >/dev/null & pid=$!; "
      "i=0; until grep -q '^\\[accuracy\\] 2/' {} 2>/dev/null || [ $i -ge 1200 ]; do sleep 0.1; i=$((i+1)); done; "
      "kill -TERM $pid; wait $pid; echo \"exit $?\"; cat {}",
      NORMBENCH_ACCURACY_BIN, report.string(), err.string(), err.string(), err.string()));
  EXPECT_NE(r.output.find("exit 143"), std::string::npos) << r.output;
  const auto m = search_ere(r.output, "Terminated: stopped after ([0-9]+) of ([0-9]+) cases");
  ASSERT_TRUE(m.has_value()) << r.output;
  const int ran = std::stoi((*m)[1]), all = std::stoi((*m)[2]);
  EXPECT_GE(ran, 2);
  EXPECT_LT(ran, all);
  report::CsvRows<5> csv(report.string(), {"norm", "variant", "dtype", "distribution", "rows"}, true);
  std::array<std::string, 5> row;
  std::set<std::string> cases;
  while (csv.next(row)) cases.insert(fmt::format("{}/{}/{}/{}/{}", row[0], row[1], row[2], row[3], row[4]));
  EXPECT_GE(cases.size(), 1u);
  EXPECT_LE(static_cast<int>(cases.size()), ran);  // a case may have no implementation to run
  fs::remove(report);
  fs::remove(err);
}

// Thread counts and seeds out of range exit 2 with the reason, before any case runs: --threads 0
// and -5 had run on every core, and --seed -1 had become 2^64 - 1, all with exit 0.
TEST(AccuracyCli, ThreadsAndSeedsOutOfRangeExitTwoWithTheReason) {
  const fs::path report = fs::temp_directory_path() / fmt::format("nb-{}-acc-bad.csv", getpid());
  const std::pair<std::string, std::string> cases[] = {
      {"--threads 0", "--threads: Value 0 not in range 1 to 1024"},
      {"--threads -5", "--threads: Value -5 not in range 1 to 1024"},
      {"--threads 1025", "--threads: Value 1025 not in range 1 to 1024"},
      {"--seed -1", "--seed: '-1' is not a whole number in [0, 2^64 - 1]"},
      {"--seed 18446744073709551616", "'18446744073709551616' is not a whole number"},
      {"--seed 7x", "'7x' is not a whole number"},
  };
  for (const auto& [args, needle] : cases) {
    SCOPED_TRACE(args);
    const CommandResult r = run_command(fmt::format("{} --impl highway --dist normal --shape 4x64 {} --report {} 2>&1 "
                                                    ">/dev/null", NORMBENCH_ACCURACY_BIN, args, report.string()));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.output.find(needle), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(report));
  }
}

}  // namespace
}  // namespace normbench::testing
