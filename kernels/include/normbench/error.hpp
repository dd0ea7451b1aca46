#pragma once
#include <stdexcept>
#include <string>

namespace normbench {
// The one error channel of the library: every rejected input throws this, with a message
// naming the offending argument. Nothing is written to output buffers before validation passes.
class Error : public std::invalid_argument {
 public:
  explicit Error(const std::string& what) : std::invalid_argument(what) {}
};
}  // namespace normbench
