// Shape sets of the benchmark (rows x cols of LayerNorm/RMSNorm problems).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "normbench/cli.hpp"

namespace normbench::bench {

using cli::parse_shape;
using cli::Shape;
using cli::shape_name;

inline constexpr std::string_view kShapeSets[] = {"quick", "transformer", "cache-sweep", "odd", "cnn", "full"};
// Throws Error for an unknown set name (listing the known ones).
std::vector<Shape> shape_set(std::string_view name);

}  // namespace normbench::bench
