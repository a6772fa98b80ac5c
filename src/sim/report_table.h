// A table of rows and named columns, and its two renderings: CSV for
// files and aligned text for a terminal. Generic: the openb and job replay
// reports both build a Table. Values; thread-compatible.
#pragma once

#include <string>
#include <vector>

namespace ty {

struct Table {
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;  // each as long as columns
  void addRow(std::vector<std::string> row) { rows.push_back(std::move(row)); }
};

// RFC 4180: a header line, then one line per row; cells with a comma,
// quote or newline are quoted with inner quotes doubled.
std::string toCsv(const Table& table);
// Columns padded to their widest cell, two spaces apart; cells that look
// like numbers are right-aligned, the rest left-aligned.
std::string toAlignedText(const Table& table);
// "12.35", with `decimals` digits; "-" for NaN.
std::string formatNumber(double value, int decimals = 2);

}  // namespace ty
