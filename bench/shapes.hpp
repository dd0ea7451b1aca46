// Shape sets of the benchmark (rows x cols of LayerNorm/RMSNorm problems).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace normbench::bench {

struct Shape {
  std::int64_t rows;
  std::int64_t cols;
  bool operator==(const Shape&) const = default;
};

std::string shape_name(const Shape& s);  // "128x4096"

// Parses "RxC" with R, C >= 1 and R*C*8 addressable; throws normbench::Error with the reason.
Shape parse_shape(std::string_view text);

inline constexpr std::string_view kShapeSets[] = {"quick", "transformer", "cache-sweep", "odd", "full"};
// Throws Error for an unknown set name (listing the known ones).
std::vector<Shape> shape_set(std::string_view name);

}  // namespace normbench::bench
