#include "normbench/compare.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <regex>
#include <set>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "normbench/csv_read.hpp"
#include "normbench/error.hpp"
#include "normbench/report.hpp"

namespace normbench::compare {

MannWhitney mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b) {
  MannWhitney r;
  const std::size_t n1 = a.size(), n2 = b.size();
  if (n1 == 0 || n2 == 0) return r;
  // A NaN equals nothing, itself included: the tie groups below would never end.
  for (const auto* sample : {&a, &b})
    for (double v : *sample)
      if (!std::isfinite(v)) throw Error(fmt::format("mann_whitney_u: a sample holds {}, which has no rank", v));
  for (double x : a)
    for (double y : b) r.u += x > y ? 1.0 : x == y ? 0.5 : 0.0;
  // The pooled values in tie groups (equal values), ascending.
  std::vector<double> all(a);
  all.insert(all.end(), b.begin(), b.end());
  std::sort(all.begin(), all.end());
  std::vector<std::size_t> groups;
  for (std::size_t i = 0; i < all.size();) {
    std::size_t j = i;
    while (j < all.size() && all[j] == all[i]) ++j;
    groups.push_back(j - i);
    i = j;
  }
  if (n1 * n2 <= 2500) {
    // Exact null distribution of 2U given the tie groups (timers of coarse resolution repeat
    // values): every split of the pooled values into n1 and n2 is equally likely. Taking the
    // groups in ascending order, count[i][s] = ways to have given i values to `a` so far with
    // 2U = s; c values of a group of t go to `a` in C(t, c) ways, each above the b values
    // already placed and tied with the group's other t - c.
    const std::size_t s_max = 2 * n1 * n2;
    std::vector<std::vector<double>> count(n1 + 1, std::vector<double>(s_max + 1, 0.0)), next = count;
    count[0][0] = 1;
    std::size_t placed = 0;
    for (const std::size_t t : groups) {
      std::vector<double> ways(t + 1, 1.0);  // C(t, c)
      for (std::size_t c = 1; c <= t; ++c)
        ways[c] = ways[c - 1] * static_cast<double>(t - c + 1) / static_cast<double>(c);
      for (auto& row : next) std::fill(row.begin(), row.end(), 0.0);
      for (std::size_t i = 0; i <= std::min(n1, placed); ++i) {
        const std::size_t b_placed = placed - i;
        if (b_placed > n2) continue;
        for (std::size_t s = 0; s <= 2 * i * n2; ++s) {  // each value of a adds at most 2 * n2
          if (count[i][s] == 0) continue;
          for (std::size_t c = 0; c <= t && i + c <= n1; ++c) {
            if (b_placed + (t - c) > n2) continue;
            next[i + c][s + c * (2 * b_placed + (t - c))] += count[i][s] * ways[c];
          }
        }
      }
      std::swap(count, next);
      placed += t;
    }
    const std::vector<double>& dist = count[n1];
    double total = 0, below = 0, above = 0, lowest = 0, highest = 0;
    for (double c : dist) total += c;
    const auto s_obs = static_cast<std::size_t>(std::llround(2 * r.u));
    for (std::size_t s = 0; s <= s_max; ++s) {
      if (s <= s_obs) below += dist[s];
      if (s >= s_obs) above += dist[s];
      if (dist[s] > 0) {
        if (lowest == 0) lowest = dist[s];
        highest = dist[s];
      }
    }
    r.p = std::min(1.0, 2 * std::min(below, above) / total);
    r.min_p = std::min(1.0, 2 * std::min(lowest, highest) / total);
    r.exact = true;
    return r;
  }
  // Normal approximation with tie correction.
  double tie_term = 0;
  for (const std::size_t g : groups) {
    const double t = static_cast<double>(g);
    tie_term += t * t * t - t;
  }
  const double n = static_cast<double>(n1 + n2), mu = 0.5 * n1 * n2;
  const double sigma = std::sqrt(n1 * n2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1))));
  if (sigma == 0) return r;
  const double z = (std::fabs(r.u - mu) - 0.5) / sigma;
  r.p = std::min(1.0, std::erfc(std::max(0.0, z) / std::sqrt(2.0)));
  r.min_p = std::erfc((0.5 * n1 * n2 - 0.5) / sigma / std::sqrt(2.0));
  return r;
}

std::vector<double> adjust_p_values(const std::vector<double>& p, Correction correction) {
  const std::size_t m = p.size();
  if (correction == Correction::kNone || m == 0) return p;
  std::vector<std::size_t> order(m);  // ascending p
  for (std::size_t i = 0; i < m; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return p[a] < p[b]; });
  std::vector<double> adjusted(m);
  if (correction == Correction::kHolm) {  // the i-th smallest (from 0) times m - i, never below the one before
    double running = 0;
    for (std::size_t i = 0; i < m; ++i) {
      running = std::max(running, std::min(1.0, static_cast<double>(m - i) * p[order[i]]));
      adjusted[order[i]] = running;
    }
  } else {  // Benjamini-Hochberg: the i-th smallest (from 1) times m / i, never above the one after
    double running = 1;
    for (std::size_t i = m; i-- > 0;) {
      running = std::min(running, static_cast<double>(m) * p[order[i]] / static_cast<double>(i + 1));
      adjusted[order[i]] = running;
    }
  }
  return adjusted;
}

namespace {

enum class Kind { kBench, kAccuracy };

struct Row {
  std::string key;                          // printable, e.g. layernorm/highway/f32/128x4096/threads:1
  bool ceiling = false;                     // bench: the machine's bandwidth reference, not an implementation
  std::string pass;                         // bench: normbench's pass (dtype and shape), e.g. bf16/512x4096
  std::vector<double> times;                // bench: per-repetition ns
  double median = NAN;                      // bench: median ns per call
  double normwise = NAN, ulp = NAN;         // accuracy
  double nonfinite = 0, within = 1;         // accuracy
};

struct Report {
  Kind kind;
  std::map<std::string, Row> rows;  // by key, in key order
  std::set<std::string> hosts, cpus;
  std::size_t files = 0;  // reports pooled into it (a header-only one has no rows but has a kind)
};

Kind detect(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("{}: cannot open file", path));
  std::string header;
  std::getline(in, header);
  if (header.find("gbps_median") != std::string::npos) return Kind::kBench;
  if (header.find("normwise_ulp_max") != std::string::npos) return Kind::kAccuracy;
  throw Error(fmt::format("{}:1: not a normbench report (the header has neither gbps_median nor normwise_ulp_max)", path));
}

double number(const std::string& text, const std::string& path, unsigned line, const std::string& column) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0')
    throw Error(fmt::format("{}:{}: column '{}': '{}' is not a number", path, line, column, text));
  return v;
}

// A repetition's time: a number, finite and above 0 (a NaN had hung the rank test, a negative or
// zero time would be compared as if measured).
double time_ns(const std::string& text, const std::string& path, unsigned line, const std::string& column) {
  const double v = number(text, path, line, column);
  if (!(std::isfinite(v) && v > 0))
    throw Error(fmt::format("{}:{}: column '{}': '{}' is not a time (a finite number of ns above 0)", path, line,
                            column, text));
  return v;
}

void check_schema(const std::string& v, int expected, const std::string& path, unsigned line) {
  if (v != std::to_string(expected))
    throw Error(fmt::format("{}:{}: column 'schema_version': {} (this normbench-compare reads version {})", path, line,
                            v, expected));
}

template <std::size_t N>
void read_rows(const std::string& path, const std::array<std::string, N>& cols, Report& rep,
               void (*fill)(const std::array<std::string, N>&, const std::string&, unsigned, Report&)) {
  // Missing columns read as empty: "variant" arrived in bench schema 3 (empty: the standard form).
  report::CsvRows<N> csv(path, cols, /*allow_extra_columns=*/true, /*allow_missing_columns=*/true);
  std::array<std::string, N> row;
  while (csv.next(row)) fill(row, path, csv.line(), rep);
}

void load(const std::string& path, Report& rep) {
  const Kind kind = detect(path);
  if (rep.files > 0 && kind != rep.kind)
    throw Error(fmt::format("{}: {} report cannot be pooled with {} reports", path,
                            kind == Kind::kBench ? "a benchmark" : "an accuracy", rep.kind == Kind::kBench ? "benchmark" : "accuracy"));
  rep.kind = kind;
  ++rep.files;
  if (kind == Kind::kBench) {
    const std::array<std::string, 18> cols = {"schema_version", "norm", "implementation", "dtype", "rows", "cols",
                                              "threads", "cold_cache", "time_median_ns", "rep_times_ns", "error",
                                              "host", "cpu_model", "variant", "channels", "groups", "layout",
                                              "huge_pages"};
    read_rows<18>(path, cols, rep, [](const std::array<std::string, 18>& f, const std::string& p, unsigned line, Report& r) {
      // Versions 2 to 5 only added columns: the ones read here mean the same in version 1.
      for (auto [i, name] : {std::pair<int, const char*>{0, "schema_version"}, {1, "norm"}, {2, "implementation"},
                             {8, "time_median_ns"}})
        if (f[i].empty()) throw Error(fmt::format("{}:{}: column '{}' is missing or empty", p, line, name));
      if (f[0] != "1" && f[0] != "2" && f[0] != "3" && f[0] != "4") check_schema(f[0], report::kBenchSchemaVersion, p, line);
      if (!f[10].empty()) return;  // a case that could not run has nothing to compare
      std::string norm = f[13].empty() || f[13] == "standard" ? f[1] : f[1] + "+" + f[13];
      if (f[1] == "none") norm = "ceiling";  // the stream-scale ceilings, named as normbench names them
      if (f[1] == "groupnorm") norm += fmt::format("(C={},G={})", f[14], f[15]);
      if (f[1] == "batchnorm") norm += fmt::format("(C={},{})", f[14], f[16]);
      // Runs on huge pages compare only with runs on huge pages (as cold-cache runs with their own).
      const std::string key = fmt::format("{}/{}/{}/{}x{}/threads:{}{}{}", norm, f[2], f[3], f[4], f[5], f[6],
                                          f[7] == "1" ? "/cold" : "", f[17] == "1" ? "/huge-pages" : "");
      Row& row = r.rows[key];
      row.key = key;
      // stream-scale(-nt), row-phased(-arithmetic)
      row.ceiling = f[2].rfind("stream-scale", 0) == 0 || f[2].rfind("row-phased", 0) == 0;
      row.pass = fmt::format("{}/{}x{}{}{}", f[3], f[4], f[5], f[7] == "1" ? "/cold" : "",
                             f[17] == "1" ? "/huge-pages" : "");
      time_ns(f[8], p, line, "time_median_ns");
      std::stringstream ss(f[9]);
      std::string t;
      while (std::getline(ss, t, ';')) row.times.push_back(time_ns(t, p, line, "rep_times_ns"));
      if (row.times.empty()) throw Error(fmt::format("{}:{}: column 'rep_times_ns' is empty", p, line));
      row.median = report::median(row.times);  // pooled over every file of this side
      r.hosts.insert(f[11]);
      r.cpus.insert(f[12]);
    });
  } else {
    const std::array<std::string, 18> cols = {"schema_version", "norm", "implementation", "dtype", "distribution",
                                              "kappa_target", "rows", "cols", "normwise_ulp_max", "ulp_max",
                                              "nonfinite_mismatches", "within_bound", "host", "cpu_model", "variant",
                                              "channels", "groups", "layout"};
    read_rows<18>(path, cols, rep, [](const std::array<std::string, 18>& f, const std::string& p, unsigned line, Report& r) {
      // Version 2 added the variant column (absent: the standard form).
      for (auto [i, name] : {std::pair<int, const char*>{0, "schema_version"}, {1, "norm"}, {2, "implementation"},
                             {8, "normwise_ulp_max"}})
        if (f[i].empty()) throw Error(fmt::format("{}:{}: column '{}' is missing or empty", p, line, name));
      if (f[0] != "1" && f[0] != "2") check_schema(f[0], report::kAccuracySchemaVersion, p, line);
      const double kappa = number(f[5], p, line, "kappa_target");
      std::string norm = f[14].empty() || f[14] == "standard" ? f[1] : f[1] + "+" + f[14];
      if (f[1] == "groupnorm") norm += fmt::format("(C={},G={})", f[15], f[16]);
      if (f[1] == "batchnorm") norm += fmt::format("(C={},{})", f[15], f[17]);
      const std::string key = fmt::format("{}/{}/{}/{}{}/{}x{}", norm, f[2], f[3], f[4],
                                          std::isnan(kappa) ? "" : fmt::format(" k={:g}", kappa), f[6], f[7]);
      Row& row = r.rows[key];
      row.key = key;
      row.normwise = number(f[8], p, line, "normwise_ulp_max");
      row.ulp = number(f[9], p, line, "ulp_max");
      row.nonfinite = number(f[10], p, line, "nonfinite_mismatches");
      row.within = number(f[11], p, line, "within_bound");
      r.hosts.insert(f[12]);
      r.cpus.insert(f[13]);
    });
  }
}

// One side of the comparison: its comma list of reports, pooled. `side` names it in errors.
Report load_side(const std::string& list, const std::string& side) {
  Report rep{Kind::kBench, {}, {}, {}, 0};
  std::stringstream ss(list);
  std::string path;
  while (std::getline(ss, path, ','))
    if (!path.empty()) load(path, rep);
  if (rep.files == 0) throw Error(fmt::format("{}: '{}' names no report", side, list));
  return rep;
}

struct Line {
  std::string key, baseline, current, change, p, p_adjusted, verdict;
  bool regression = false;
  // Benchmark rows, until their verdict: the change of the median, the test, and whether the
  // test can reach alpha at these sample sizes (else the threshold alone decides).
  double relative_change = 0;
  MannWhitney mw;
  double decision_p = 1;  // the p-value the verdict reads: the test's, or after --correction
  std::size_t n_baseline = 0, n_current = 0;  // repetitions
  bool ceiling = false, testable = false;
  std::string pass;
};

// The smallest p-value the exact test gives samples of n1 and n2 values, 2 / C(n1 + n2, n1): both
// samples apart, no value shared (ties across the samples can only make it larger).
double smallest_exact_p(std::size_t n1, std::size_t n2) {
  double arrangements = 1;  // C(n1 + n2, n1)
  for (std::size_t i = 1; i <= n1; ++i) arrangements *= static_cast<double>(n2 + i) / static_cast<double>(i);
  return std::min(1.0, 2 / arrangements);
}

// normbench runs each dtype and shape as one pass, its cases' repetitions interleaved, so a slow
// or fast spell of the machine moves a whole pass: every case in it, the ceilings included, with
// p-values no correction for the number of cases removes. A pass where at least half of the
// ceiling cases moved the same way (their verdicts "machine slower" or "machine faster") and
// some implementation case read the same way gets a warning naming both. The verdicts stand:
// the kernel may have moved too, by more or less than the machine.
void pass_drift_warnings(const std::vector<Line>& lines, std::vector<std::string>& warnings) {
  // Per direction, [0] slower and [1] faster: the verdicts that say so, the ceilings' changes.
  constexpr std::array<const char*, 2> kCeilingVerdict = {"machine slower", "machine faster"},
                                       kCaseVerdict = {"SLOWER", "faster"}, kWord = {"slower", "faster"};
  struct Pass {
    int ceilings = 0;
    std::array<int, 2> cases{};                     // implementation cases that read each way
    std::array<std::vector<double>, 2> ceiling_moves;  // changes of the ceilings that moved each way
  };
  std::map<std::string, Pass> passes;
  for (const Line& l : lines) {
    Pass& p = passes[l.pass];
    p.ceilings += l.ceiling;
    for (std::size_t d = 0; d < 2; ++d) {
      if (l.ceiling && l.verdict == kCeilingVerdict[d]) p.ceiling_moves[d].push_back(l.relative_change);
      if (!l.ceiling && l.verdict == kCaseVerdict[d]) ++p.cases[d];
    }
  }
  for (const auto& [name, p] : passes)
    for (std::size_t d = 0; d < 2; ++d) {
      const std::vector<double>& moves = p.ceiling_moves[d];
      const int moved = static_cast<int>(moves.size());
      if (p.cases[d] == 0 || moved == 0 || 2 * moved < p.ceilings) continue;  // a pass may have no ceiling case
      const auto [lo, hi] = std::minmax_element(moves.begin(), moves.end());
      warnings.push_back(fmt::format(
          "WARNING: the machine ran the {} pass {}: {} of its {} ceiling cases moved {:+.1f}% to {:+.1f}%, and its {} "
          "case(s) that read {} may be the machine's as much as the code's (scripts/ab.sh interleaves the runs)",
          name, kWord[d], moved, p.ceilings, 100 * *lo, 100 * *hi, p.cases[d], kCaseVerdict[d]));
    }
}

// Grows beyond the threshold (relative, with a floor so that 0 -> 1e-9 is not "infinite").
bool grew(double before, double after, double threshold, double floor) {
  if (std::isnan(after) && !std::isnan(before)) return true;
  if (std::isnan(before) || std::isnan(after)) return false;
  return after > before * (1 + threshold) + floor;
}

}  // namespace

int run(int argc, char** argv) {
  std::string baseline_arg, current_arg, filter, format = "text", correction_arg = "none";
  double threshold = 5, alpha = 0.05;
  CLI::App app{"normbench-compare: compare two normbench reports (benchmark or accuracy) and flag regressions.\n"
               "Exit code: 0 no regression, 1 regression found, 2 usage or input error, or no case in both reports."};
  app.add_option("baseline", baseline_arg, "Baseline CSV (a comma list pools the repetitions of several runs)")->required();
  app.add_option("current", current_arg, "Current CSV (a comma list pools the repetitions of several runs)")->required();
  app.add_option("--threshold", threshold, "Change (percent) beyond which a difference counts")->capture_default_str();
  app.add_option("--alpha", alpha, "Significance level of the Mann-Whitney U test")->capture_default_str();
  app.add_option("--correction", correction_arg,
                 "Correct the p-values of the implementation cases for their number (benchmark reports): none, holm "
                 "(the chance of flagging any unchanged case stays <= alpha) or bh (Benjamini-Hochberg: the share of "
                 "unchanged cases among those flagged stays <= alpha)")
      ->check(CLI::IsMember({"none", "holm", "bh"}))
      ->capture_default_str();
  app.add_option("--filter", filter, "Only rows whose key matches this regular expression");
  app.add_option("--format", format, "text, markdown (for CI job summaries) or csv")
      ->check(CLI::IsMember({"text", "markdown", "csv"}))
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "normbench-compare: " << e.what() << " (try --help)\n";
    return 2;
  }
  if (!(threshold >= 0) || !std::isfinite(threshold) || !(alpha > 0 && alpha < 1)) {
    std::cerr << "normbench-compare: --threshold must be finite and >= 0 and --alpha in (0, 1)\n";
    return 2;
  }
  Report base, cur;
  std::optional<std::regex> re;
  try {
    base = load_side(baseline_arg, "baseline");
    cur = load_side(current_arg, "current");
    if (base.kind != cur.kind) throw Error("one report is a benchmark report and the other an accuracy report");
    if (!filter.empty()) re.emplace(filter, std::regex::extended);
  } catch (const Error& e) {
    std::cerr << "normbench-compare: " << e.what() << "\n";
    return 2;
  } catch (const std::regex_error& e) {
    std::cerr << "normbench-compare: --filter is not a valid regular expression: " << e.what() << "\n";
    return 2;
  }
  const double thr = threshold / 100;
  std::vector<Line> lines;
  std::vector<std::string> only_base, only_cur, notes;
  std::vector<double> ceiling_changes;
  bool too_few_noted = false;
  for (const auto& [key, b] : base.rows) {
    if (re && !std::regex_search(key, *re)) continue;
    const auto it = cur.rows.find(key);
    if (it == cur.rows.end()) {
      only_base.push_back(key);
      continue;
    }
    const Row& c = it->second;
    Line l;
    l.key = key;
    if (base.kind == Kind::kBench) {  // the verdict comes below, once every case's p-value is known
      l.relative_change = (c.median - b.median) / b.median;
      l.mw = mann_whitney_u(b.times, c.times);
      l.decision_p = l.mw.p;
      l.n_baseline = b.times.size();
      l.n_current = c.times.size();
      l.ceiling = b.ceiling;
      l.pass = b.pass;
      l.testable = l.mw.min_p <= alpha;
      l.baseline = fmt::format("{:.1f} ns", b.median);
      l.current = fmt::format("{:.1f} ns", c.median);
      l.change = fmt::format("{:+.1f}%", 100 * l.relative_change);
      l.p = l.testable ? fmt::format("{:.3g}", l.mw.p) : "n/a";
      l.p_adjusted = l.p;
      if (!l.testable && !too_few_noted) {
        notes.push_back(fmt::format("too few repetitions for the Mann-Whitney U test ({} vs {}; at least 4 each are needed "
                                    "for alpha = {}): those rows are decided on the threshold alone",
                                    b.times.size(), c.times.size(), alpha));
        too_few_noted = true;
      }
    } else {
      l.baseline = fmt::format("{:.3g} / {:.3g}", b.normwise, b.ulp);
      l.current = fmt::format("{:.3g} / {:.3g}", c.normwise, c.ulp);
      const double change = b.ulp > 0 ? (c.ulp - b.ulp) / b.ulp : (c.ulp > 0 ? INFINITY : 0);
      l.change = std::isfinite(change) ? fmt::format("{:+.1f}%", 100 * change) : "new error";
      l.p = l.p_adjusted = "-";
      std::vector<std::string> why;
      if (grew(b.ulp, c.ulp, thr, 1e-3) || grew(b.normwise, c.normwise, thr, 1e-3)) why.push_back("ULP error grew");
      if (c.nonfinite > b.nonfinite) why.push_back("new non-finite mismatches");
      if (b.within == 1 && c.within == 0) why.push_back("left its bound");
      if (!why.empty()) {
        l.verdict = "WORSE: ";
        for (std::size_t i = 0; i < why.size(); ++i) l.verdict += (i ? ", " : "") + why[i];
        l.regression = true;
      } else {
        l.verdict = c.ulp < b.ulp * (1 - thr) ? "better" : "same";
      }
    }
    lines.push_back(std::move(l));
  }
  for (const auto& [key, c] : cur.rows)
    if ((!re || std::regex_search(key, *re)) && !base.rows.count(key)) only_cur.push_back(key);

  // Benchmark verdicts. The family the correction counts: the implementation cases the test can
  // decide (ceilings measure the machine and are never regressions; they keep plain alpha).
  const bool bench = base.kind == Kind::kBench;
  const Correction correction = correction_arg == "holm" ? Correction::kHolm
                                : correction_arg == "bh" ? Correction::kBenjaminiHochberg
                                                         : Correction::kNone;
  std::string correction_summary;
  if (bench) {
    std::vector<std::size_t> family;
    std::vector<double> raw;
    const Line* least_able = nullptr;  // the case whose sample sizes allow the largest smallest p-value
    double least_able_p = 0;
    for (std::size_t i = 0; i < lines.size(); ++i)
      if (!lines[i].ceiling && lines[i].testable) {
        family.push_back(i);
        raw.push_back(lines[i].mw.p);
        const double smallest = smallest_exact_p(lines[i].n_baseline, lines[i].n_current);
        if (!least_able || smallest > least_able_p) {
          least_able = &lines[i];
          least_able_p = smallest;
        }
      }
    const double m = static_cast<double>(family.size());
    if (correction != Correction::kNone && least_able && least_able_p * m >= alpha) {
      // Silently unable to flag anything is worse than no correction: a CI job would pass a
      // real regression. Say what the sample sizes allow instead: the fewest repetitions a side
      // that are enough.
      std::size_t reps = 2;
      while (smallest_exact_p(reps, reps) * m >= alpha) ++reps;
      std::cerr << fmt::format(
          "normbench-compare: --correction {} over {} cases needs a p-value below alpha / {} = {:.3g} to flag a lone "
          "case, but {} against {} repetitions ({}) cannot give less than {:.3g}: run at least {} repetitions a side "
          "(--benchmark_repetitions, or several reports per side as comma lists), narrow --filter, or use "
          "--correction none\n",
          correction_arg, family.size(), family.size(), alpha / m, least_able->n_baseline, least_able->n_current,
          least_able->key, least_able_p, reps);
      return 2;
    }
    const std::vector<double> adjusted = adjust_p_values(raw, correction);
    for (std::size_t k = 0; k < family.size(); ++k) {
      lines[family[k]].decision_p = adjusted[k];
      lines[family[k]].p_adjusted = fmt::format("{:.3g}", adjusted[k]);
    }
    if (correction != Correction::kNone)
      correction_summary = fmt::format(", p-values corrected by {} over {} cases",
                                       correction == Correction::kHolm ? "Holm" : "Benjamini-Hochberg", family.size());
    for (Line& l : lines) {
      const double change = l.relative_change;
      const bool decided = !l.testable || l.decision_p < alpha;
      if (l.ceiling) {  // the machine's reference moved: drift, reported but never a code regression
        ceiling_changes.push_back(change);
        l.verdict = change > thr && decided ? "machine slower" : change < -thr && decided ? "machine faster" : "same";
      } else if (change > thr && decided) {
        l.verdict = "SLOWER";
        l.regression = true;
      } else if (change < -thr && decided) {
        l.verdict = "faster";
      } else {
        l.verdict = change > thr || change < -thr ? "noise" : "same";
      }
    }
  } else if (correction != Correction::kNone) {
    notes.push_back("--correction applies to benchmark reports (accuracy reports have no p-values): ignored");
  }

  std::vector<std::string> warnings;
  if (base.hosts != cur.hosts || base.cpus != cur.cpus)
    warnings.push_back(fmt::format("WARNING: the reports come from different machines (baseline {} / {}, current {} / {}): "
                                   "differences may be the machine's, not the code's",
                                   fmt::join(base.hosts, " "), fmt::join(base.cpus, " "), fmt::join(cur.hosts, " "),
                                   fmt::join(cur.cpus, " ")));
  if (!ceiling_changes.empty()) {
    std::sort(ceiling_changes.begin(), ceiling_changes.end());
    const double mid = ceiling_changes[ceiling_changes.size() / 2];
    if (std::fabs(mid) > thr / 2)
      warnings.push_back(fmt::format("WARNING: the machine's bandwidth ceiling moved by {:+.1f}% (median over {} "
                                     "ceiling cases) between the runs: part of every difference is the machine's. "
                                     "scripts/ab.sh interleaves the runs to cancel such drift.",
                                     100 * mid, ceiling_changes.size()));
  }
  if (bench) pass_drift_warnings(lines, warnings);  // after the whole-run warnings
  const std::array<std::string, 6> head = {"case", bench ? "baseline (median)" : "baseline (normwise / max ulp)",
                                           bench ? "current (median)" : "current (normwise / max ulp)",
                                           bench ? "change" : "change (max ulp)",
                                           correction == Correction::kNone || !bench
                                               ? "p-value"
                                               : "p (" + correction_arg + ")",
                                           "verdict"};
  int regressions = 0;
  for (const Line& l : lines) regressions += l.regression;

  if (format == "csv") {
    std::cout << "case,baseline,current,change,p_value,verdict,p_adjusted\n";
    for (const Line& l : lines)
      std::cout << fmt::format("{},{},{},{},{},{},{}\n", report::csv_field(l.key), report::csv_field(l.baseline),
                               report::csv_field(l.current), l.change, l.p, report::csv_field(l.verdict), l.p_adjusted);
    for (const auto& k : only_base) std::cout << fmt::format("{},,,,,only in baseline,\n", report::csv_field(k));
    for (const auto& k : only_cur) std::cout << fmt::format("{},,,,,only in current,\n", report::csv_field(k));
    for (const auto& w : warnings) std::cerr << w << "\n";
  } else if (format == "markdown") {
    for (const auto& w : warnings) std::cout << "> **" << w << "**\n\n";
    std::cout << fmt::format("**{} regression(s)** in {} compared cases (threshold {}%, alpha {}{})\n\n", regressions,
                             lines.size(), threshold, alpha, correction_summary);
    std::cout << fmt::format("| {} |\n|---|---|---|---|---|---|\n", fmt::join(head, " | "));
    for (const Line& l : lines)
      std::cout << fmt::format("| `{}` | {} | {} | {} | {} | {} |\n", l.key, l.baseline, l.current, l.change,
                               l.p_adjusted, l.regression ? "**" + l.verdict + "**" : l.verdict);
    for (const auto& n : notes) std::cout << "\n_Note: " << n << "_\n";
    if (!only_base.empty()) std::cout << fmt::format("\nOnly in baseline: `{}`\n", fmt::join(only_base, "`, `"));
    if (!only_cur.empty()) std::cout << fmt::format("\nOnly in current: `{}`\n", fmt::join(only_cur, "`, `"));
  } else {
    for (const auto& w : warnings) std::cout << w << "\n\n";
    std::size_t w0 = head[0].size(), w1 = head[1].size(), w2 = head[2].size();
    for (const Line& l : lines) {
      w0 = std::max(w0, l.key.size());
      w1 = std::max(w1, l.baseline.size());
      w2 = std::max(w2, l.current.size());
    }
    std::cout << fmt::format("{:<{}}  {:>{}}  {:>{}}  {:>16}  {:>8}  {}\n", head[0], w0, head[1], w1, head[2], w2,
                             head[3], head[4], head[5]);
    for (const Line& l : lines)
      std::cout << fmt::format("{:<{}}  {:>{}}  {:>{}}  {:>16}  {:>8}  {}\n", l.key, w0, l.baseline, w1, l.current, w2,
                               l.change, l.p_adjusted, l.verdict);
    for (const auto& n : notes) std::cout << "\nnote: " << n << "\n";
    for (const auto& k : only_base) std::cout << "only in baseline: " << k << "\n";
    for (const auto& k : only_cur) std::cout << "only in current:  " << k << "\n";
    std::cout << fmt::format("\n{} regression(s) in {} compared cases (threshold {}%, alpha {}{})\n", regressions,
                             lines.size(), threshold, alpha, correction_summary);
  }
  if (lines.empty()) {  // a CI step comparing nothing (a --filter typo, the wrong file) must not pass
    std::cerr << fmt::format("normbench-compare: nothing compared: no case{} is in both reports ({} only in baseline, "
                             "{} only in current)\n",
                             re ? fmt::format(" matching --filter '{}'", filter) : "", only_base.size(), only_cur.size());
    return 2;
  }
  if (regressions > 0 && format != "text") {
    for (const Line& l : lines)
      if (l.regression) std::cerr << "regression: " << l.key << " (" << l.verdict << ")\n";
  }
  return regressions > 0 ? 1 : 0;
}

}  // namespace normbench::compare
