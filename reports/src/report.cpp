#include "normbench/report.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "build_info.hpp"
#include "normbench/error.hpp"
#include "normbench/normbench.hpp"

namespace normbench::report {
namespace fs = std::filesystem;

namespace {
// `model name`, with the family and model numbers where /proc/cpuinfo has them: hypervisors often
// shorten the name to the vendor's brand ("AMD EPYC" on both a Zen 4 and a Zen 5 VM here), and
// reports from different cores must not look comparable.
std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, name, family, model;
  while (std::getline(in, line)) {  // "key<tabs>: value"; the first of each key (CPU 0's)
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    key.erase(key.find_last_not_of(" \t") + 1);
    const auto start = line.find_first_not_of(" \t", colon + 1);
    std::string* field = key == "model name" ? &name : key == "cpu family" ? &family : key == "model" ? &model : nullptr;
    if (field && field->empty() && start != std::string::npos) *field = line.substr(start);
  }
  if (name.empty()) name = "unknown";
  if (!family.empty() && !model.empty()) name += " (family " + family + ", model " + model + ")";
  return name;
}
}  // namespace

MachineInfo collect_machine_info() {
  MachineInfo m;
  char host[256] = {};
  m.host = gethostname(host, sizeof host - 1) == 0 && host[0] ? host : "unknown";
  m.cpu_model = cpu_model();
  m.cores = static_cast<int>(std::thread::hardware_concurrency());
  m.hwy_target = find_implementation("highway").target();
  m.compiler = build_info::kCompiler;
  m.compiler_flags = build_info::kCompilerFlags;
  m.build_type = build_info::kBuildType;
  m.git_commit = build_info::git_commit();
  m.timestamp_utc = fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::time(nullptr)));
  m.l1d_bytes = data_cache_bytes(1);
  m.l2_bytes = data_cache_bytes(2);
  m.l3_bytes = data_cache_bytes(3);
  return m;
}

std::vector<std::string> machine_columns() {
  return {"host", "cpu_model", "cores", "l1d_bytes", "l2_bytes", "l3_bytes", "hwy_target", "compiler",
          "compiler_flags", "build_type", "git_commit", "timestamp_utc"};
}

std::vector<std::string> machine_values(const MachineInfo& m) {
  return {m.host, m.cpu_model, std::to_string(m.cores), std::to_string(m.l1d_bytes), std::to_string(m.l2_bytes),
          std::to_string(m.l3_bytes), m.hwy_target, m.compiler, m.compiler_flags, m.build_type, m.git_commit,
          m.timestamp_utc};
}

std::vector<std::string> bench_columns() {
  std::vector<std::string> cols = {
      "schema_version", "name", "norm", "variant", "implementation", "family", "kernel_target", "dtype", "rows", "cols",
      "channels", "groups", "layout",
      "threads", "cold_cache", "huge_pages", "thp_policy", "stores", "bytes_per_iter", "working_set_bytes", "repetitions", "iterations_median",
      "time_median_ns", "time_min_ns", "time_max_ns", "time_cv", "gbps_median", "gelems_per_s_median",
      "ceiling_gbps", "frac_of_ceiling", "nt_ceiling_gbps", "frac_of_nt_ceiling", "rep_times_ns", "error"};
  for (std::string& c : machine_columns()) cols.push_back(std::move(c));
  return cols;
}

std::vector<std::string> accuracy_columns() {
  std::vector<std::string> cols = {
      "schema_version", "norm", "variant", "implementation", "family", "kernel_target", "dtype", "distribution",
      "kappa_target", "rows", "cols", "channels", "groups", "layout", "eps", "seed", "threads", "variance_algorithm", "accumulator", "normwise_ulp_max",
      "ulp_max", "ulp_mean", "rel_err_max", "abs_err_max", "frac_correctly_rounded", "mean_rel_err_max",
      "rstd_rel_err_max", "var_rel_err_max", "nmse", "nonfinite_mismatches", "kappa_max", "bound", "within_bound",
      "drift_normwise_ulp_max", "drift_nmse"};
  for (std::string& c : machine_columns()) cols.push_back(std::move(c));
  return cols;
}

std::string default_report_path(std::string_view kind, const MachineInfo& m) {
  std::string stamp = m.timestamp_utc;  // 2026-11-21T12:34:56Z -> 20261121T123456Z
  std::erase(stamp, '-');
  std::erase(stamp, ':');
  return fmt::format("reports/out/{}-{}-{}.csv", kind, m.host, stamp);
}

void check_writable(const std::string& path) {
  if (path.empty()) throw Error("report path is empty");
  const fs::path p(path);
  if (fs::is_directory(p)) throw Error(fmt::format("report path '{}' is a directory", path));
  std::error_code ec;
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  fs::create_directories(dir, ec);
  if (ec) throw Error(fmt::format("cannot create directory '{}' for report '{}': {}", dir.string(), path, ec.message()));
  const fs::path probe = dir / fmt::format(".normbench-write-test-{}", getpid());
  {
    std::ofstream out(probe);
    if (!out) throw Error(fmt::format("report '{}' is not writable (cannot create files in '{}')", path, dir.string()));
  }
  fs::remove(probe, ec);
}

std::string csv_field(std::string_view s) {
  if (s.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

void CsvTable::add_row(std::vector<std::string> row) {
  if (row.size() != columns_.size())
    throw Error(fmt::format("CSV row has {} fields, header has {}", row.size(), columns_.size()));
  rows_.push_back(std::move(row));
}

void CsvTable::write_atomically(const std::string& path) const {
  const std::string tmp = fmt::format("{}.tmp-{}", path, getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) throw Error(fmt::format("cannot write report '{}'", tmp));
    auto write_line = [&](const std::vector<std::string>& fields) {
      for (std::size_t i = 0; i < fields.size(); ++i) out << (i ? "," : "") << csv_field(fields[i]);
      out << '\n';
    };
    write_line(columns_);
    for (const auto& row : rows_) write_line(row);
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw Error(fmt::format("error while writing report '{}'", tmp));
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw Error(fmt::format("cannot move report into place at '{}': {}", path, ec.message()));
  }
}

double median(std::vector<double> v) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string num(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{}", v);
}

}  // namespace normbench::report
