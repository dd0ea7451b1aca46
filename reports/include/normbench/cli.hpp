// Command-line helpers shared by the normbench binaries.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace normbench::cli {

struct Shape {
  std::int64_t rows;
  std::int64_t cols;
  bool operator==(const Shape&) const = default;
};

std::string shape_name(const Shape& s);  // "128x4096"

// Parses "RxC" with R, C >= 1 and R*C*16 addressable; throws normbench::Error with the reason.
Shape parse_shape(std::string_view text);

// Splits every item at commas ("a,b" "c" -> a b c), dropping empty parts.
std::vector<std::string> split_list(const std::vector<std::string>& items);

}  // namespace normbench::cli
