// Console output as usual (repetition aggregates), plus: per-case progress with an ETA on
// stderr, and one CSV row per case with repetition statistics and per-repetition times.
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

  void ReportRuns(const std::vector<Run>& runs) override;

  // Writes the CSV (atomically); returns the number of rows written.
  std::size_t write_csv(const std::string& path) const;

 private:
  struct Result {
    std::vector<double> seconds_per_iter;  // one per repetition
    std::vector<double> iterations;
    std::string error;
  };
  std::map<std::string, Case> cases_;
  std::vector<std::string> order_;  // names in the order they finished
  std::map<std::string, Result> results_;
  std::size_t expected_runs_, done_ = 0;
  report::MachineInfo machine_;
  bool show_every_repetition_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// Median of the per-repetition times of a finished ceiling case, in bytes/s (0 if unknown).
double ceiling_bytes_per_second(const std::string& ceiling_name);
// Called by ceiling benchmarks after each repetition.
void record_ceiling(const std::string& ceiling_name, double bytes_per_second);

}  // namespace normbench::bench
