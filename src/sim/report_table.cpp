#include "sim/report_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ty {
namespace {

std::string csvCell(const std::string& cell) {
  if (cell.find_first_of(",\"\n\r") == std::string::npos) return cell;
  std::string out = "\"";
  for (char c : cell) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

bool looksNumeric(const std::string& cell) {
  if (cell.empty()) return false;
  return std::all_of(cell.begin(), cell.end(), [](char c) {
    return (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || c == '%' || c == 'e';
  });
}

}  // namespace

std::string toCsv(const Table& table) {
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    for (std::size_t i = 0; i < cells.size(); ++i) {
      if (i) out += ',';
      out += csvCell(cells[i]);
    }
    out += '\n';
  };
  line(table.columns);
  for (const auto& r : table.rows) line(r);
  return out;
}

std::string toAlignedText(const Table& table) {
  std::vector<std::size_t> width(table.columns.size(), 0);
  auto measure = [&](const std::vector<std::string>& cells) {
    for (std::size_t i = 0; i < cells.size() && i < width.size(); ++i) {
      width[i] = std::max(width[i], cells[i].size());
    }
  };
  measure(table.columns);
  for (const auto& r : table.rows) measure(r);
  std::string out;
  auto line = [&](const std::vector<std::string>& cells, bool header) {
    std::string l;
    for (std::size_t i = 0; i < width.size(); ++i) {
      const std::string cell = i < cells.size() ? cells[i] : "";
      std::string pad(width[i] - std::min(width[i], cell.size()), ' ');
      if (i) l += "  ";
      l += (!header && looksNumeric(cell)) ? pad + cell : cell + pad;
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + '\n';
  };
  line(table.columns, true);
  for (const auto& r : table.rows) line(r, false);
  return out;
}

std::string formatNumber(double value, int decimals) {
  if (std::isnan(value)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

}  // namespace ty
