// Self-describing CSV reports: machine metadata on every row, atomic writes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace normbench::report {

// Bumped whenever a column is added, removed or changes meaning (see reports/README.md).
// bench: 2 added stores, nt_ceiling_gbps, frac_of_nt_ceiling; 3 variant; 4 layout
inline constexpr int kBenchSchemaVersion = 5;
// accuracy: 2 added variant, drift_normwise_ulp_max, drift_nmse; 3 layout
inline constexpr int kAccuracySchemaVersion = 3;

struct MachineInfo {
  std::string host;
  std::string cpu_model;
  int cores = 0;
  std::string hwy_target;  // best Highway target on this CPU
  std::string compiler;
  std::string compiler_flags;
  std::string build_type;
  std::string git_commit;
  std::string timestamp_utc;  // ISO 8601, e.g. 2026-11-21T12:34:56Z
  std::int64_t l1d_bytes = 0, l2_bytes = 0, l3_bytes = 0;  // data cache sizes (0 if unknown)
};

MachineInfo collect_machine_info();

// Metadata column names and values, in a fixed order, appended to every row of every report.
std::vector<std::string> machine_columns();
std::vector<std::string> machine_values(const MachineInfo& m);

// Every column of each report, in order (documented in reports/README.md).
std::vector<std::string> bench_columns();
std::vector<std::string> accuracy_columns();

// reports/out/<kind>-<host>-<timestamp>.csv, relative to the working directory.
std::string default_report_path(std::string_view kind, const MachineInfo& m);

// Creates the parent directory and checks a file can be created there; throws
// normbench::Error naming the path and the reason otherwise. Nothing is left behind.
void check_writable(const std::string& path);

// RFC 4180 quoting where needed (comma, quote, newline).
std::string csv_field(std::string_view s);

class CsvTable {
 public:
  explicit CsvTable(std::vector<std::string> columns) : columns_(std::move(columns)) {}
  // Throws Error if the row's width differs from the header's.
  void add_row(std::vector<std::string> row);
  std::size_t size() const { return rows_.size(); }
  const std::vector<std::string>& columns() const { return columns_; }
  // Writes to a temporary file beside `path`, then renames it into place, so a reader never
  // sees a half-written report. Throws Error on failure.
  void write_atomically(const std::string& path) const;

 private:
  std::vector<std::string> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// Median of a sample (NaN if empty): the statistic every report and comparison quotes.
double median(std::vector<double> v);

// Shortest round-trip formatting of a double ("nan", "inf" for non-finite values).
std::string num(double v);

}  // namespace normbench::report
