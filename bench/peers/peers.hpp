// Peer backends (other libraries' kernels), registered into the same registry as our own so
// the benchmark, the accuracy harness and the tests treat them alike.
#pragma once

#include <string>
#include <vector>

namespace normbench::peers {

// Registers every peer this build has (idempotent). Call at start-up, before registry().
void register_all();

// One line per known peer: whether it is built in, and what it covers or why not.
std::vector<std::string> status();

}  // namespace normbench::peers
