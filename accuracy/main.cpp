// normbench-accuracy: every registered implementation against the long-double reference, over
// seeded input distributions (a condition-number sweep among them) or the user's own tensors.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "harness.hpp"
#include "normbench/cli.hpp"
#include "normbench/listing.hpp"
#include "normbench/normbench.hpp"
#include "normbench/reference.hpp"
#include "normbench/report.hpp"
#include "npy.hpp"
#include "peers.hpp"

namespace normbench::accuracy {
namespace {
namespace fs = std::filesystem;

using cli::Shape;

// The reference keeps three long doubles per element: cap what --shape may ask for.
Shape parse_accuracy_shape(const std::string& text) {
  const Shape s = cli::parse_shape(text);
  if (s.rows * s.cols > (std::int64_t{1} << 28))
    throw Error(fmt::format("shape '{}' has more than 2^28 elements, too many for the long-double reference", text));
  return s;
}

// Default shapes: cols 7, 768, 4096 with a few rows each and one row of 65537 (three chunks of the
// long-row path; BatchNorm reads them as (N, C) and skips 1x65537 in training), a channels-first
// input (N 2, C 64, HW 100) and its channels-last form (BatchNorm only).
std::vector<Shape> default_shapes() {
  return {{16, 7}, {8, 768}, {4, 4096}, {1, 65537}, {2, 6400, 64}, {2, 6400, 64, true}};
}

std::string g(double v) { return report::num(v); }

struct Options {
  std::vector<std::string> norms, impls, dtypes, dists, shapes, variants;
  std::string report_path, input, input_dtype, dump_dir;
  std::vector<double> eps;
  std::uint64_t seed = 1;
  int threads = 0;
  bool list = false;
};

int run(int argc, char** argv) {
  peers::register_all();
  Options o;
  CLI::App app{"normbench-accuracy: error of every registered implementation against a long-double reference,\n"
               "over seeded input distributions or your own .npy tensors. Writes a CSV (see reports/README.md)."};
  app.add_option("--norm", o.norms, "Norms (layernorm, rmsnorm, groupnorm, batchnorm; comma list; default all)");
  app.add_option("--impl", o.impls, "Implementations (comma list; default all; see --list)");
  app.add_option("--dtype", o.dtypes, "dtypes (f32, f64, bf16, f16; comma list; default all)");
  app.add_option("--variant", o.variants,
                 "Variants (standard, eps-outside, unbiased, rms-shift, param-free, gemma, storage, residual-add, inference; "
                 "comma list; default all; each runs where it applies, see the README's variant table)");
  app.add_option("--dist", o.dists,
                 "Distributions: normal, uniform, offset (kappa 1..1e8), outliers, heavy, constant, range, special "
                 "(comma list; default all)");
  app.add_option("--shape", o.shapes, "Shapes RxC, NxCxS or NxSxC:nlc (channels last, BatchNorm only) (repeatable; default 16x7, 8x768, "
                 "4x4096, 1x65537, 2x64x100, 2x100x64:nlc)");
  app.add_option("--eps", o.eps, "eps (default 1e-5 for LayerNorm, 1e-6 for RMSNorm)")->expected(1);
  app.add_option("--seed", o.seed, "Seed of the generated inputs")
      ->check(CLI::Validator(  // CLI11 had let -1 wrap to 2^64 - 1 unannounced
          [](std::string& v) -> std::string {
            return cli::parse_number<std::uint64_t>(v) ? std::string{}
                                                       : fmt::format("'{}' is not a whole number in [0, 2^64 - 1]", v);
          },
          "UINT64"))
      ->capture_default_str();
  app.add_option("--threads", o.threads, "Threads for threaded implementations (default: all cores)")
      ->check(CLI::Range(1, kMaxThreads));
  app.add_option("--input", o.input, "A .npy tensor (C order; float32/float64/float16, or uint16 with --input-dtype bf16), "
                                     "normalized over its last axis instead of the generated distributions");
  app.add_option("--input-dtype", o.input_dtype, "Set to bf16 when --input holds bfloat16 bits as uint16");
  app.add_option("--dump", o.dump_dir, "Write every output and the reference as .npy into this directory");
  app.add_option("--report", o.report_path, "CSV path (default reports/out/accuracy-<host>-<UTC time>.csv)");
  app.add_flag("--list", o.list, "Print the implementation registry as CSV and exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "normbench-accuracy: " << e.what() << " (try --help)\n";
    return 2;
  }
  if (o.list) {
    std::cout << listing_csv();
    for (const std::string& s : peers::status()) std::cout << "# " << s << "\n";
    return 0;
  }

  std::vector<Norm> norms;
  std::vector<const VariantPreset*> variants;
  std::vector<const Implementation*> impls;
  std::vector<DType> dtypes;
  std::vector<DistCase> dists;
  std::vector<Shape> shapes;
  NpyArray user;
  report::MachineInfo machine;
  std::string report_path;
  const int threads = o.threads > 0 ? o.threads : std::max(1, static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
  try {
    for (const auto& n : cli::split_list(o.norms)) norms.push_back(parse_norm(n));
    if (norms.empty()) norms.assign(std::begin(kAllNorms), std::end(kAllNorms));
    for (const auto& v : cli::split_list(o.variants)) variants.push_back(&find_variant(v));
    if (variants.empty())
      for (const VariantPreset& v : variant_presets()) variants.push_back(&v);
    for (const auto& i : cli::split_list(o.impls)) impls.push_back(&find_implementation(i));
    if (impls.empty())
      for (const Implementation& impl : registry()) impls.push_back(&impl);
    if (!o.eps.empty() && (!(o.eps[0] >= 0) || !std::isfinite(o.eps[0])))
      throw Error(fmt::format("--eps must be a finite number >= 0 (got {})", o.eps[0]));
    if (!o.input_dtype.empty() && o.input_dtype != "bf16")
      throw Error(fmt::format("--input-dtype: only bf16 is meaningful (got '{}')", o.input_dtype));
    if (!o.input.empty()) {
      if (!o.dists.empty() || !o.shapes.empty() || !o.dtypes.empty())
        throw Error("--input replaces --dist, --shape and --dtype (the file decides them)");
      user = read_npy(o.input, o.input_dtype == "bf16");
      dtypes = {user.dtype};
      dists = {DistCase{fs::path(o.input).stem().string(), std::numeric_limits<double>::quiet_NaN()}};
      shapes = {{user.rows, user.cols}};
    } else {
      for (const auto& d : cli::split_list(o.dtypes)) dtypes.push_back(parse_dtype(d));
      if (dtypes.empty()) dtypes.assign(std::begin(kAllDTypes), std::end(kAllDTypes));
      std::vector<std::string> names = cli::split_list(o.dists);
      if (names.empty()) names.assign(std::begin(kDistributions), std::end(kDistributions));
      dists = expand(names);
      for (const auto& s : cli::split_list(o.shapes)) shapes.push_back(parse_accuracy_shape(s));
      if (shapes.empty()) shapes = default_shapes();
    }
    if (!o.dump_dir.empty()) {
      fs::create_directories(o.dump_dir);
      report::check_writable((fs::path(o.dump_dir) / "probe").string());
    }
    machine = report::collect_machine_info();
    report_path = o.report_path.empty() ? report::default_report_path("accuracy", machine) : o.report_path;
    report::check_writable(report_path);
  } catch (const Error& e) {
    std::cerr << "normbench-accuracy: " << e.what() << "\n";
    return 2;
  } catch (const fs::filesystem_error& e) {
    std::cerr << "normbench-accuracy: " << e.what() << "\n";
    return 2;
  }

  report::CsvTable table(report::accuracy_columns());
  const auto machine_values = report::machine_values(machine);

  // Summary: normwise / max ULP per (norm, dtype, impl) at offset kappa 1, 1e4, 1e8.
  struct Cell {
    double normwise = 0, ulp = 0;
    bool seen = false;
  };
  std::map<std::tuple<int, int, std::string, double>, Cell> summary;
  // Variants: worst normwise error against their own reference and against the standard form,
  // per (norm, variant, dtype, implementation), over the distributions that ran.
  struct Drift {
    double own = 0, drift = 0;
  };
  std::map<std::tuple<int, std::string, int, std::string>, Drift> drifts;
  std::vector<std::string> exceeded_finite, exceeded_nonfinite;  // see exceeded_bound_summary

  std::size_t groups = 0, group = 0;
  for (Norm n : norms)
    for (DType t : dtypes)
      groups += static_cast<std::size_t>(std::count_if(variants.begin(), variants.end(), [&](const VariantPreset* v) {
                  return v->applies(n, t);
                })) * dists.size() *
                static_cast<std::size_t>(std::count_if(shapes.begin(), shapes.end(),
                                                       [&](const Shape& s) { return cli::shape_applies(n, s); }));
  // Ctrl-C or SIGTERM: the case running finishes, the rest are skipped, and the summary and the
  // report hold the cases that ran.
  cli::stop_on_signal("\n[accuracy] stopping after the case running; the report keeps the cases that finished. Once "
                      "more to stop at once, without a report.\n");
  const auto start = std::chrono::steady_clock::now();
  for (Norm n : norms)
    for (DType t : dtypes)
      for (const VariantPreset* variant : variants)
      for (const DistCase& dc : dists)
        for (const Shape& s : shapes) {
          if (!variant->applies(n, t) || !cli::shape_applies(n, s)) continue;
          if (cli::stop_signal() != 0) continue;
          ++group;  // after a signal: the cases that ran
          const bool standard = variant->name == "standard";
          std::vector<const Implementation*> todo;
          for (const Implementation* impl : impls)
            if (impl->supports(n, t) && (standard || impl->supports_variants)) todo.push_back(impl);
          if (todo.empty()) continue;
          const double eps = o.eps.empty() ? default_eps(n) : o.eps[0];
          const Problem base = cli::make_problem(n, t, s, eps);
          if (variant->variant.unbiased && s.cols < 2) continue;  // undefined (torch gives NaN)
          // BatchNorm with one value per channel: training is an error (as in torch), and in inference a
          // unit of one value turns the normwise error into the elementwise one, unbounded where y ~ 0.
          if (n == Norm::kBatchNorm && stat_cols(base) < 2) continue;
          const PreparedCase pc = o.input.empty() ? prepare(base, dc, o.seed, *variant)
                                                  : prepare(base, user.data, o.seed, *variant);
          const std::string vtag = standard ? "" : fmt::format("-{}", variant->name);
          const ReferenceResult& ref = pc.reference;
          const std::string shape_tag = cli::shape_name(s);
          const std::string dist_tag = dc.label();
          if (!o.dump_dir.empty()) {
            std::vector<double> r(ref.y.begin(), ref.y.end());
            write_npy_f64((fs::path(o.dump_dir) / fmt::format("{}-{}{}-{}-{}-reference.npy", dist_tag, norm_name(n),
                                                               vtag, dtype_name(t), shape_tag)).string(),
                          s.rows, s.cols, r);
          }
          for (const Implementation* impl : todo) {
            std::vector<unsigned char> y;
            const CaseMetrics m = run_case(*impl, pc, threads, &y);
            if (!o.dump_dir.empty())
              write_npy((fs::path(o.dump_dir) / fmt::format("{}-{}{}-{}-{}-{}.npy", dist_tag, norm_name(n), vtag,
                                                             dtype_name(t), shape_tag, impl->name)).string(),
                        t, s.rows, s.cols, y.data());
            std::vector<std::string> row = {
                std::to_string(report::kAccuracySchemaVersion), std::string(norm_name(n)), std::string(variant->name),
                std::string(impl->name),
                std::string(impl->family), impl->target(), std::string(dtype_name(t)), dc.dist, g(dc.kappa_target),
                std::to_string(s.rows), std::to_string(s.cols), std::to_string(channel_count(pc.problem)),
                std::to_string(group_count(pc.problem)), std::string(layout_name(pc.problem)), g(eps), std::to_string(o.seed), std::to_string(threads),
                std::string(variance_algorithm_name(impl->variance_algorithm)), std::string(impl->accumulator),
                g(m.normwise_ulp_max), g(m.ulp_max), g(m.ulp_mean), g(m.rel_err_max), g(m.abs_err_max),
                g(m.frac_correctly_rounded), g(m.mean_rel_err_max), g(m.rstd_rel_err_max), g(m.var_rel_err_max),
                g(m.nmse), std::to_string(m.nonfinite_mismatches), g(m.kappa_max), g(m.bound),
                m.within_bound ? "1" : "0", g(m.drift_normwise_ulp_max), g(m.drift_nmse)};
            row.insert(row.end(), machine_values.begin(), machine_values.end());
            table.add_row(std::move(row));
            if (!m.within_bound)
              (std::isfinite(m.var_rel_err_max) ? exceeded_finite : exceeded_nonfinite)
                  .push_back(fmt::format("{} {}{} {} {} {}: variance error {:.3g} > bound {:.3g} (kappa up to {:.3g})",
                                         impl->name, norm_name(n), vtag, dtype_name(t), dist_tag, shape_tag,
                                         m.var_rel_err_max, 2 * m.bound, m.kappa_max));
            if (!standard && !std::isnan(m.normwise_ulp_max) && !std::isnan(m.drift_normwise_ulp_max) &&
                (dc.dist == "normal" || !o.input.empty())) {
              Drift& d = drifts[{static_cast<int>(n), std::string(variant->name), static_cast<int>(t),
                                 std::string(impl->name)}];
              d.own = std::max(d.own, m.normwise_ulp_max);
              d.drift = std::max(d.drift, m.drift_normwise_ulp_max);
            }
            if (standard && dc.dist == "offset") {
              Cell& c = summary[{static_cast<int>(n), static_cast<int>(t), std::string(impl->name), dc.kappa_target}];
              if (!std::isnan(m.normwise_ulp_max)) {  // NaN: nothing finite to measure (e.g. f16 overflow)
                c.normwise = std::max(c.normwise, m.normwise_ulp_max);
                c.ulp = std::max(c.ulp, m.ulp_max);
                c.seen = true;
              }
            }
          }
          const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          std::cerr << fmt::format("[accuracy] {}/{} {}{} {} {} {}, {:.0f}s elapsed, about {:.0f}s left\n", group,
                                   groups, norm_name(n), vtag, dtype_name(t), dist_tag, shape_tag, elapsed,
                                   elapsed / group * (groups - group));
        }

  const int signal_received = cli::stop_signal();
  if (signal_received != 0)
    std::cerr << fmt::format("[accuracy] {}: stopped after {} of {} cases; the {} not run are not in the summary or "
                             "the report\n",
                             strsignal(signal_received), group, groups, groups - group);
  if (table.size() == 0) {
    if (signal_received != 0) {
      std::cerr << "[accuracy] nothing ran, no report written\n";
      return cli::stop_exit_code();
    }
    // A selection that measures nothing must not pass as a run (as normbench's --benchmark_filter).
    std::cerr << "normbench-accuracy: nothing to measure: no selected implementation runs the selected norms, dtypes, "
                 "variants and shapes (see --list and the README's variant table; the unbiased variance needs 2+ "
                 "columns, BatchNorm 2+ values per channel)\n";
    return 2;
  }

  // Console summary.
  if (!summary.empty()) {
    std::cout << "\nnormwise error / max elementwise error, in ulps of the output dtype, on offset rows "
                 "(worst over shapes):\n";
    std::cout << fmt::format("{:<10} {:<5} {:<12} {:>22} {:>22} {:>22}\n", "norm", "dtype", "impl", "kappa=1",
                             "kappa=1e4", "kappa=1e8");
    for (Norm n : norms)
      for (DType t : dtypes)
        for (const Implementation* impl : impls) {
          std::string line = fmt::format("{:<10} {:<5} {:<12}", norm_name(n), dtype_name(t), impl->name);
          bool any = false;
          for (double k : {1.0, 1e4, 1e8}) {
            const auto it = summary.find({static_cast<int>(n), static_cast<int>(t), std::string(impl->name), k});
            if (it == summary.end()) {
              line += fmt::format(" {:>22}", "-");
              continue;
            }
            any = true;
            line += fmt::format(" {:>22}", it->second.seen ? fmt::format("{:.3g} / {:.3g}", it->second.normwise,
                                                                          it->second.ulp)
                                                           : "n/a (none finite)");
          }
          if (any) std::cout << line << "\n";
        }
  }
  if (!drifts.empty()) {
    std::cout << "\nvariants: normwise error in ulps against the variant's own reference / against the standard "
                 "form's (drift),\non N(0,1) rows (or --input), worst over shapes; highway and naive:\n";
    std::cout << fmt::format("{:<10} {:<13} {:<5} {:>24} {:>24}\n", "norm", "variant", "dtype", "highway", "naive");
    for (Norm n : norms)
      for (const VariantPreset* v : variants)
        for (DType t : dtypes) {
          std::string line = fmt::format("{:<10} {:<13} {:<5}", norm_name(n), v->name, dtype_name(t));
          bool any = false;
          for (std::string_view impl : {"highway", "naive"}) {
            const auto it = drifts.find({static_cast<int>(n), std::string(v->name), static_cast<int>(t), std::string(impl)});
            if (it == drifts.end()) {
              line += fmt::format(" {:>24}", "-");
              continue;
            }
            any = true;
            line += fmt::format(" {:>24}", fmt::format("{:.3g} / {:.3g}", it->second.own, it->second.drift));
          }
          if (any) std::cout << line << "\n";
        }
  }
  if (const std::string summary = exceeded_bound_summary(exceeded_finite, exceeded_nonfinite); !summary.empty()) {
    std::cout << "\n" << summary;
  } else {
    std::cout << "\nEvery case stayed within its algorithm's variance bound.\n";
  }
  try {
    table.write_atomically(report_path);
  } catch (const Error& e) {
    std::cerr << "normbench-accuracy: " << e.what() << "\n";
    return 1;
  }
  std::cout << fmt::format("\nwrote {} rows to {}\n", table.size(), report_path);
  return cli::stop_exit_code();
}

}  // namespace
}  // namespace normbench::accuracy

int main(int argc, char** argv) {
  try {
    return normbench::accuracy::run(argc, argv);
  } catch (const normbench::Error& e) {
    std::cerr << "normbench-accuracy: " << e.what() << "\n";
    return 2;
  }
}
