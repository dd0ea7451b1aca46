#include "normbench/listing.hpp"

#include <fmt/format.h>

#include "normbench/normbench.hpp"
#include "normbench/report.hpp"

namespace normbench {

std::string listing_csv() {
  std::string out =
      "implementation,family,norms,dtypes,accumulator,variance_algorithm,deterministic_across_threads,"
      "uses_threads,supports_variants,target,description\n";
  for (const Implementation& impl : registry()) {
    std::string norms, dtypes;
    for (Norm n : impl.norms) norms += fmt::format("{}{}", norms.empty() ? "" : " ", norm_name(n));
    for (DType t : impl.dtypes) dtypes += fmt::format("{}{}", dtypes.empty() ? "" : " ", dtype_name(t));
    const std::string fields[] = {std::string(impl.name), std::string(impl.family), norms, dtypes,
                                  std::string(impl.accumulator),
                                  std::string(variance_algorithm_name(impl.variance_algorithm)),
                                  impl.deterministic_across_threads ? "1" : "0", impl.uses_threads ? "1" : "0",
                                  impl.supports_variants ? "1" : "0", impl.target(), std::string(impl.description)};
    for (std::size_t i = 0; i < std::size(fields); ++i) {
      if (i) out += ',';
      out += report::csv_field(fields[i]);
    }
    out += "\n";
  }
  out += "\n# variants (--variant): name,norms,storage_dtypes_only,formula,used_by\n";
  for (const VariantPreset& v : variant_presets()) {
    std::string norms;
    for (Norm n : v.norms) norms += fmt::format("{}{}", norms.empty() ? "" : " ", norm_name(n));
    out += fmt::format("# {},{},{},{},{}\n", v.name, norms, v.storage_dtypes_only ? 1 : 0, report::csv_field(std::string(v.formula)),
                       report::csv_field(std::string(v.used_by)));
  }
  return out;
}

}  // namespace normbench
