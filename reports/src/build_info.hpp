#pragma once
// Filled in by CMake: how this binary was built.
namespace normbench::build_info {
inline constexpr const char* kCompiler = NORMBENCH_COMPILER;
inline constexpr const char* kCompilerFlags = NORMBENCH_COMPILER_FLAGS;
inline constexpr const char* kBuildType = NORMBENCH_BUILD_TYPE;
const char* git_commit();  // generated at build time (cmake/git_commit.cmake)
}  // namespace normbench::build_info
