// Console output as usual (repetition aggregates), plus: per-case progress with an ETA on
// stderr, and one CSV row per case with repetition statistics and per-repetition times.
// normbench runs Google Benchmark several times (one pass per shape and dtype): this reporter
// spans them all, printing the context once and feeding one optional --benchmark_out reporter.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "cases.hpp"
#include "normbench/report.hpp"

namespace normbench::bench {

class NormbenchReporter : public benchmark::ConsoleReporter {
 public:
  NormbenchReporter(std::vector<Case> cases, std::size_t expected_runs, report::MachineInfo machine,
                    bool show_every_repetition);

  bool ReportContext(const Context& context) override;
  void ReportRuns(const std::vector<Run>& runs) override;

  // --benchmark_out: Google Benchmark's own reporter over all passes, into `out` (both owned by
  // the caller and alive until finish()).
  void set_file_reporter(benchmark::BenchmarkReporter* file) { file_ = file; }
  // After the last pass: closes the --benchmark_out report.
  void finish();

  // Writes the CSV (atomically); returns the number of rows written.
  std::size_t write_csv(const std::string& path) const;

 private:
  struct Result {
    std::vector<double> seconds_per_iter;  // one per repetition
    std::vector<double> iterations;
    std::string error;
  };
  std::map<std::string, Case> cases_;
  std::vector<std::string> order_;  // names in the order they were registered
  std::map<std::string, Result> results_;
  std::size_t expected_runs_, done_ = 0;
  report::MachineInfo machine_;
  bool show_every_repetition_;
  bool context_reported_ = false;
  std::size_t longest_name_ = 0;
  benchmark::BenchmarkReporter* file_ = nullptr;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// Median of the per-repetition times of a finished ceiling case, in bytes/s (0 if unknown).
double ceiling_bytes_per_second(const std::string& ceiling_name);
// Called by ceiling benchmarks after each repetition.
void record_ceiling(const std::string& ceiling_name, double bytes_per_second);

}  // namespace normbench::bench
