// NumPy .npy files (format versions 1.0, 2.0 and 3.0; C order; little-endian float32, float64,
// float16, and bfloat16 stored as uint16). Arrays are read as rows x cols over the last axis.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "normbench/dtype.hpp"

namespace normbench::accuracy {

struct NpyArray {
  DType dtype;
  std::int64_t rows = 0;  // product of all axes but the last (1 for a 1-D array)
  std::int64_t cols = 0;  // last axis
  std::vector<unsigned char> data;  // rows*cols elements of dtype, little-endian
};

// Reads `path`. A uint16 array is bf16 only when bf16_for_uint16 is set (numpy has no bfloat16).
// Throws normbench::Error naming the file and what is wrong: not an .npy file, unsupported
// version, dtype or byte order, Fortran order, empty or 0-d shape, truncated data, trailing data.
NpyArray read_npy(const std::string& path, bool bf16_for_uint16);

// Writes a 2-D array (format 1.0). bf16 is written as uint16; long double data as float64.
void write_npy(const std::string& path, DType dtype, std::int64_t rows, std::int64_t cols, const void* data);
void write_npy_f64(const std::string& path, std::int64_t rows, std::int64_t cols, const std::vector<double>& data);

}  // namespace normbench::accuracy
