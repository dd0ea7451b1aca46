#include "normbench/compare.hpp"

int main(int argc, char** argv) { return normbench::compare::run(argc, argv); }
