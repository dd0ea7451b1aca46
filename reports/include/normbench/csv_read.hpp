// Reading normbench CSV reports with fast-cpp-csv-parser (libfccp). The column count is a
// compile-time parameter of the parser, so readers name the columns they expect; a missing
// column, a truncated line or a malformed quote becomes normbench::Error naming file and line.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <utility>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-truncation"  // in libfccp's error-message code
#include <libfccp/csv.h>
#pragma GCC diagnostic pop

#include "normbench/error.hpp"

namespace normbench::report {

template <std::size_t N>
class CsvRows {
 public:
  using Row = std::array<std::string, N>;

  // Opens `path` and checks its header holds `columns` (in any order: rows come back in the order
  // of `columns`); other columns are an error unless allow_extra_columns; a missing column is an
  // error unless allow_missing_columns (its field then reads as empty: columns added by a later
  // schema version).
  CsvRows(const std::string& path, const std::array<std::string, N>& columns, bool allow_extra_columns = false,
          bool allow_missing_columns = false)
      : path_(path) {
    try {
      reader_ = std::make_unique<Reader>(path);
      read_header(columns, allow_extra_columns, allow_missing_columns, std::make_index_sequence<N>{});
    } catch (const io::error::base& e) {
      throw Error(describe(e));
    }
  }

  // Reads the next row; false at the end of the file.
  bool next(Row& row) {
    row = Row{};
    try {
      return read_row(row, std::make_index_sequence<N>{});
    } catch (const io::error::base& e) {
      throw Error(describe(e));
    }
  }

  unsigned line() const { return reader_->get_file_line(); }
  const std::string& path() const { return path_; }

 private:
  using Reader = io::CSVReader<N, io::trim_chars<>, io::double_quote_escape<',', '"'>>;

  template <std::size_t... I>
  void read_header(const std::array<std::string, N>& columns, bool allow_extra, bool allow_missing,
                   std::index_sequence<I...>) {
    const io::ignore_column flags = (allow_extra ? io::ignore_extra_column : io::ignore_no_column) |
                                    (allow_missing ? io::ignore_missing_column : io::ignore_no_column);
    reader_->read_header(flags, columns[I]...);
  }
  template <std::size_t... I>
  bool read_row(Row& row, std::index_sequence<I...>) {
    return reader_->read_row(row[I]...);
  }
  std::string describe(const io::error::base& e) const {
    std::string what = e.what();
    if (what.find(path_) == std::string::npos) what = path_ + ": " + what;
    return what;
  }

  std::string path_;
  std::unique_ptr<Reader> reader_;
};

}  // namespace normbench::report
