#include "npy.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <regex>

#include <fmt/format.h>

#include "normbench/error.hpp"

namespace normbench::accuracy {
namespace {
constexpr char kMagic[] = "\x93NUMPY";

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw Error(fmt::format("{}: {}", path, what));
}

std::string header_value(const std::string& header, const std::string& key, const std::string& path) {
  const std::regex re("['\"]" + key + "['\"]\\s*:\\s*('[^']*'|\"[^\"]*\"|True|False|\\([^)]*\\))");
  std::smatch m;
  if (!std::regex_search(header, m, re)) fail(path, fmt::format("header has no '{}' entry", key));
  return m[1];
}

std::string descr_of(DType t) {
  switch (t) {
    case DType::kF32: return "<f4";
    case DType::kF64: return "<f8";
    case DType::kF16: return "<f2";
    case DType::kBF16: return "<u2";
  }
  return "";
}

void write_raw(const std::string& path, const std::string& descr, std::int64_t rows, std::int64_t cols,
               const void* data, std::size_t bytes) {
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}, {}), }}", descr, rows, cols);
  const std::size_t unpadded = 10 + header.size() + 1;  // magic(6) version(2) len(2) header '\n'
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error(fmt::format("{}: cannot create file", path));
  out.write(kMagic, 6);
  const unsigned char version[2] = {1, 0};
  out.write(reinterpret_cast<const char*>(version), 2);
  const std::uint16_t len = static_cast<std::uint16_t>(header.size());
  const unsigned char len_le[2] = {static_cast<unsigned char>(len & 0xFF), static_cast<unsigned char>(len >> 8)};
  out.write(reinterpret_cast<const char*>(len_le), 2);
  out << header;
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
  if (!out) throw Error(fmt::format("{}: write failed", path));
}
}  // namespace

NpyArray read_npy(const std::string& path, bool bf16_for_uint16) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open file");
  char magic[6] = {};
  unsigned char version[2] = {};
  if (!in.read(magic, 6) || std::memcmp(magic, kMagic, 6) != 0) fail(path, "not a NumPy .npy file (bad magic)");
  if (!in.read(reinterpret_cast<char*>(version), 2)) fail(path, "truncated header");
  std::uint32_t header_len = 0;
  if (version[0] == 1) {
    unsigned char b[2];
    if (!in.read(reinterpret_cast<char*>(b), 2)) fail(path, "truncated header");
    header_len = b[0] | (b[1] << 8);
  } else if (version[0] == 2 || version[0] == 3) {
    unsigned char b[4];
    if (!in.read(reinterpret_cast<char*>(b), 4)) fail(path, "truncated header");
    header_len = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<std::uint32_t>(b[3]) << 24);
  } else {
    fail(path, fmt::format("unsupported .npy format version {}.{}", version[0], version[1]));
  }
  if (header_len > (1u << 20)) fail(path, "header length is implausible");
  std::string header(header_len, '\0');
  if (!in.read(header.data(), header_len)) fail(path, "truncated header");

  std::string descr = header_value(header, "descr", path);
  descr = descr.substr(1, descr.size() - 2);
  NpyArray a;
  if (descr == "<f4" || descr == "=f4") a.dtype = DType::kF32;
  else if (descr == "<f8" || descr == "=f8") a.dtype = DType::kF64;
  else if (descr == "<f2" || descr == "=f2") a.dtype = DType::kF16;
  else if (descr == "<u2" || descr == "=u2") {
    if (!bf16_for_uint16) fail(path, "dtype uint16: pass --input-dtype bf16 if it holds bfloat16 bits");
    a.dtype = DType::kBF16;
  } else if (descr[0] == '>') {
    fail(path, fmt::format("big-endian dtype '{}' is not supported", descr));
  } else {
    fail(path, fmt::format("unsupported dtype '{}' (float32, float64, float16, or uint16 holding bfloat16)", descr));
  }
  if (header_value(header, "fortran_order", path) != "False") fail(path, "Fortran-order arrays are not supported");
  if (bf16_for_uint16 && a.dtype != DType::kBF16) fail(path, fmt::format("--input-dtype bf16 given, but the file holds '{}'", descr));

  const std::string shape = header_value(header, "shape", path);
  std::vector<std::int64_t> dims;
  const std::regex num("[0-9]+");
  for (auto it = std::sregex_iterator(shape.begin(), shape.end(), num); it != std::sregex_iterator(); ++it) {
    if (it->str().size() > 18) fail(path, fmt::format("shape overflows (shape {})", shape));  // stoll's range
    dims.push_back(std::stoll(it->str()));
  }
  if (dims.empty()) fail(path, "0-d arrays are not supported (need at least one axis)");
  a.cols = dims.back();
  a.rows = 1;
  for (std::size_t i = 0; i + 1 < dims.size(); ++i)
    if (__builtin_mul_overflow(a.rows, dims[i], &a.rows)) fail(path, "shape overflows");
  if (a.rows == 0 || a.cols == 0) fail(path, fmt::format("empty array (shape {})", shape));
  std::int64_t elements = 0, bytes = 0;
  if (__builtin_mul_overflow(a.rows, a.cols, &elements) ||
      __builtin_mul_overflow(elements, static_cast<std::int64_t>(dtype_size(a.dtype)), &bytes))
    fail(path, fmt::format("shape overflows (shape {})", shape));
  // The buffer grows with the data read, a chunk at a time: a header that claims more than the
  // file holds must not allocate it (a corrupt shape had thrown bad_alloc). No seeking, so a pipe
  // (--input <(...)) reads as a file does.
  constexpr std::int64_t kChunkBytes = std::int64_t{64} << 20;
  std::int64_t found = 0;
  while (found < bytes) {
    const std::int64_t want = std::min(kChunkBytes, bytes - found);
    a.data.resize(static_cast<std::size_t>(found + want));
    in.read(reinterpret_cast<char*>(a.data.data()) + found, want);
    found += in.gcount();
    if (in.gcount() < want) break;
  }
  if (found < bytes) fail(path, fmt::format("truncated data: expected {} bytes for shape {}, found {}", bytes, shape, found));
  if (in.peek() != std::char_traits<char>::eof()) fail(path, "unexpected data after the array");
  return a;
}

void write_npy(const std::string& path, DType dtype, std::int64_t rows, std::int64_t cols, const void* data) {
  write_raw(path, descr_of(dtype), rows, cols, data, static_cast<std::size_t>(rows * cols) * dtype_size(dtype));
}

void write_npy_f64(const std::string& path, std::int64_t rows, std::int64_t cols, const std::vector<double>& data) {
  write_raw(path, "<f8", rows, cols, data.data(), data.size() * sizeof(double));
}

}  // namespace normbench::accuracy
