#include "reporter.hpp"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <numeric>

#include <fmt/format.h>

namespace normbench::bench {
namespace {
std::map<std::string, std::vector<double>>& ceiling_samples() {
  static std::map<std::string, std::vector<double>> m;
  return m;
}

double coefficient_of_variation(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double mean = std::accumulate(v.begin(), v.end(), 0.0) / v.size();
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return std::sqrt(ss / (v.size() - 1)) / mean;
}

std::string format_duration(double seconds) {
  const auto s = static_cast<long>(std::lround(seconds));
  return s >= 60 ? fmt::format("{}m{:02}s", s / 60, s % 60) : fmt::format("{}s", s);
}
}  // namespace

bool Case::is_separate_add() const { return variant == kSeparateAdd; }

Problem Case::problem() const {
  Problem p = cli::make_problem(norm, dtype, shape, default_eps(norm));
  if (!is_ceiling() && !is_separate_add()) {
    p = find_variant(variant).apply_to(p);
  }
  return p;
}

std::string_view Case::effective_stores() const {
  if (is_ceiling()) return stores == StorePolicy::kStreaming ? "streaming" : "cached";
  return uses_streaming_stores(*impl, problem(), RunConfig{threads, stores}) ? "streaming" : "cached";
}

void record_ceiling(const std::string& name, double bps) { ceiling_samples()[name].push_back(bps); }

double ceiling_bytes_per_second(const std::string& name) {
  const auto it = ceiling_samples().find(name);
  return it == ceiling_samples().end() ? 0 : report::median(it->second);
}

NormbenchReporter::NormbenchReporter(std::vector<Case> cases, std::size_t expected_runs,
                                     report::MachineInfo machine, bool show_every_repetition)
    : benchmark::ConsoleReporter(benchmark::ConsoleReporter::OO_Tabular),
      expected_runs_(expected_runs),
      machine_(std::move(machine)),
      show_every_repetition_(show_every_repetition) {
  for (Case& c : cases) {
    order_.push_back(c.name);
    longest_name_ = std::max(longest_name_, c.name.size());
    cases_.emplace(c.name, std::move(c));
  }
}

bool NormbenchReporter::ReportContext(const Context& context) {
  if (context_reported_) return true;  // a later pass: the machine was described already
  context_reported_ = true;
  if (file_ && !file_->ReportContext(context)) return false;
  const bool ok = ConsoleReporter::ReportContext(context);
  // Wide enough for every pass's names and their aggregates ("_median", "_stddev").
  name_field_width_ = std::max(name_field_width_, longest_name_ + 20);
  return ok;
}

void NormbenchReporter::finish() {
  if (file_) file_->Finalize();
}

void NormbenchReporter::ReportRuns(const std::vector<Run>& runs) {
  // Console: the aggregates when there are repetitions (unless asked for every repetition).
  std::vector<Run> shown;
  for (const Run& r : runs)
    if (show_every_repetition_ || r.run_type == Run::RT_Aggregate || r.repetitions <= 1) shown.push_back(r);
  if (!shown.empty()) ConsoleReporter::ReportRuns(shown);
  if (file_) file_->ReportRuns(runs);

  bool counted = false;
  for (const Run& r : runs) {
    if (r.run_type != Run::RT_Iteration) continue;
    const std::string name = r.run_name.function_name;
    if (!cases_.count(name)) continue;
    Result& res = results_[name];
    if (r.error_occurred) {
      res.error = r.error_message;
    } else {
      const double seconds = r.real_accumulated_time / static_cast<double>(r.iterations);
      res.seconds_per_iter.push_back(seconds);
      res.iterations.push_back(static_cast<double>(r.iterations));
      const Case& c = cases_.at(name);
      if (c.is_ceiling()) record_ceiling(name, c.bytes_per_iter / seconds);  // read by later cases
    }
    counted = true;
  }
  if (!counted) return;
  ++done_;
  GetOutputStream().flush();
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double left = done_ < expected_runs_ ? elapsed / done_ * (expected_runs_ - done_) : 0;
  std::cerr << fmt::format("[normbench] case {} of {}, elapsed {}, about {} left\n", done_, expected_runs_,
                           format_duration(elapsed), format_duration(left));
}

std::size_t NormbenchReporter::write_csv(const std::string& path) const {
  report::CsvTable table(report::bench_columns());
  const auto machine = report::machine_values(machine_);
  for (const std::string& name : order_) {
    const auto found = results_.find(name);
    if (found == results_.end()) continue;  // not selected by --benchmark_filter
    const Case& c = cases_.at(name);
    const Result& res = found->second;
    const double t_med = report::median(res.seconds_per_iter);
    const double gbps = c.bytes_per_iter / t_med / 1e9;
    double ceiling = ceiling_bytes_per_second(c.ceiling_name) / 1e9;
    double nt_ceiling = ceiling_bytes_per_second(c.nt_ceiling_name) / 1e9;
    if (c.is_ceiling() && !c.phased) (c.stores == StorePolicy::kStreaming ? nt_ceiling : ceiling) = gbps;  // its own median
    std::string reps;
    for (double t : res.seconds_per_iter) reps += fmt::format("{}{:.1f}", reps.empty() ? "" : ";", t * 1e9);
    const bool ok = !res.seconds_per_iter.empty();
    const auto [tmin, tmax] = ok ? std::minmax_element(res.seconds_per_iter.begin(), res.seconds_per_iter.end())
                                 : std::pair{res.seconds_per_iter.end(), res.seconds_per_iter.end()};
    std::vector<std::string> row = {
        std::to_string(report::kBenchSchemaVersion), name,
        c.is_ceiling() && !c.phased ? "none" : std::string(norm_name(c.norm)), c.is_ceiling() ? "" : c.variant,
        c.phased ? (c.arithmetic ? "row-phased-arithmetic" : "row-phased")
        : c.is_ceiling() ? (c.stores == StorePolicy::kStreaming ? "stream-scale-nt" : "stream-scale")
                         : std::string(c.impl->name),
        c.is_ceiling() ? "ceiling" : std::string(c.impl->family),
        c.is_ceiling() ? machine_.hwy_target : c.impl->target(), std::string(dtype_name(c.dtype)),
        std::to_string(c.shape.rows), std::to_string(c.shape.cols), std::to_string(c.is_ceiling() ? 0 : channel_count(c.problem())),
        std::to_string(c.is_ceiling() ? 1 : group_count(c.problem())),
        c.is_ceiling() ? "" : std::string(layout_name(c.problem())), std::to_string(c.threads),
        c.cold_cache ? "1" : "0", c.huge_pages ? "1" : "0", c.thp_policy, std::string(c.effective_stores()), std::to_string(c.bytes_per_iter), std::to_string(c.working_set_bytes),
        std::to_string(res.seconds_per_iter.size()), report::num(report::median(res.iterations)),
        report::num(t_med * 1e9), report::num(ok ? *tmin * 1e9 : std::nan("")),
        report::num(ok ? *tmax * 1e9 : std::nan("")), report::num(ok ? coefficient_of_variation(res.seconds_per_iter) : std::nan("")),
        report::num(gbps), report::num(c.shape.rows * c.shape.cols / t_med / 1e9),
        report::num(ceiling > 0 ? ceiling : std::nan("")), report::num(ceiling > 0 ? gbps / ceiling : std::nan("")),
        report::num(nt_ceiling > 0 ? nt_ceiling : std::nan("")),
        report::num(nt_ceiling > 0 ? gbps / nt_ceiling : std::nan("")),
        reps, res.error};
    row.insert(row.end(), machine.begin(), machine.end());
    table.add_row(std::move(row));
  }
  if (table.size() > 0) table.write_atomically(path);
  return table.size();
}

}  // namespace normbench::bench
