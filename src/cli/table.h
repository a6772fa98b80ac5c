// A plain-text table for people: columns padded to their widest cell.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace ty {

class Table {
 public:
  explicit Table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print(std::ostream& out) const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

// "3s", "5m", "2h", "4d": how long ago `then_ms` was, for tables.
std::string ago(std::int64_t now_ms, std::int64_t then_ms);

// "2025-03-01 14:05:09" in the local time zone, for times people compare
// with their own clock (audit records, token expiry); "-" for 0 or less.
std::string localTime(std::int64_t ms);

}  // namespace ty
