#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>

#include "common/clock.h"
#include "common/quantity.h"
#include "common/time.h"
#include "common/units.h"

namespace ty {
namespace {

struct UnitScale {
  const char* name;
  std::int64_t scale;
};

constexpr UnitScale kDurationUnits[] = {
    {"ms", 1}, {"s", 1000}, {"m", 60'000}, {"h", 3'600'000}, {"d", 86'400'000}};
constexpr UnitScale kMemoryUnits[] = {{"", 1},
                                      {"Ki", 1LL << 10},
                                      {"Mi", 1LL << 20},
                                      {"Gi", 1LL << 30},
                                      {"Ti", 1LL << 40},
                                      {"K", 1000},
                                      {"k", 1000},
                                      {"M", 1'000'000},
                                      {"G", 1'000'000'000},
                                      {"T", 1'000'000'000'000LL}};

// The scale of `unit` in `table`; 0 when it is not there.
template <size_t N>
std::int64_t unitScale(const UnitScale (&table)[N], const std::string& unit) {
  for (const auto& u : table) {
    if (unit == u.name) return u.scale;
  }
  return 0;
}

}  // namespace

std::string Quantity::toString() const {
  std::int64_t abs_milli = milli_ < 0 ? -milli_ : milli_;
  std::string out = (milli_ < 0 ? "-" : "") + std::to_string(abs_milli / 1000);
  std::int64_t frac = abs_milli % 1000;
  if (frac != 0) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "%03lld", static_cast<long long>(frac));
    std::string f = buf;
    while (!f.empty() && f.back() == '0') f.pop_back();
    out += "." + f;
  }
  return out;
}

Timestamp SystemClock::now() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string formatTimestamp(Timestamp t) {
  std::time_t secs = static_cast<std::time_t>(t / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(t % 1000));
  return buf;
}

DurationMs parseDuration(const std::string& text) {
  if (text.empty()) return -1;
  DurationMs total = 0;
  size_t i = 0;
  while (i < text.size()) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return -1;
    std::int64_t n = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      n = n * 10 + (text[i] - '0');
      if (n > 1'000'000'000'000LL) return -1;
      ++i;
    }
    std::string unit;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) unit += text[i++];
    std::int64_t scale = unitScale(kDurationUnits, unit);
    if (scale == 0) return -1;
    // At most about 100 years in all: no overflow, no absurd values.
    constexpr DurationMs kMax = 3'153'600'000'000LL;
    if (n > kMax / scale || total > kMax - n * scale) return -1;
    total += n * scale;
  }
  return total;
}

std::string formatDuration(DurationMs d) {
  if (d == 0) return "0s";
  std::string out;
  struct Unit {
    const char* name;
    DurationMs ms;
  };
  static constexpr Unit kUnits[] = {
      {"d", 86'400'000}, {"h", 3'600'000}, {"m", 60'000}, {"s", 1000}, {"ms", 1}};
  for (const auto& u : kUnits) {
    if (d >= u.ms) {
      out += std::to_string(d / u.ms) + u.name;
      d %= u.ms;
    }
  }
  return out;
}

std::optional<std::int64_t> parseMemory(const std::string& text) {
  size_t i = 0;
  std::int64_t n = 0;
  if (text.empty()) return std::nullopt;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    n = n * 10 + (text[i] - '0');
    if (n > (1LL << 50)) return std::nullopt;
    ++i;
  }
  if (i == 0) return std::nullopt;
  std::string suffix = text.substr(i);
  std::int64_t scale = unitScale(kMemoryUnits, suffix);
  if (scale == 0) return std::nullopt;
  if (n > (INT64_MAX / scale)) return std::nullopt;
  return n * scale;
}

std::string formatMemory(std::int64_t bytes) {
  static constexpr struct {
    const char* s;
    std::int64_t v;
  } kUnits[] = {{"Ti", 1LL << 40}, {"Gi", 1LL << 30}, {"Mi", 1LL << 20}, {"Ki", 1LL << 10}};
  for (const auto& u : kUnits) {
    if (bytes >= u.v && bytes % u.v == 0) return std::to_string(bytes / u.v) + u.s;
  }
  for (const auto& u : kUnits) {
    if (bytes >= u.v) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.1f%s", static_cast<double>(bytes) / u.v, u.s);
      return buf;
    }
  }
  return std::to_string(bytes);
}

std::optional<Quantity> parseQuantity(const std::string& text) {
  if (text.empty()) return std::nullopt;
  if (text.back() == 'm') {
    std::string digits = text.substr(0, text.size() - 1);
    if (digits.empty() || digits.size() > 12) return std::nullopt;
    for (char c : digits)
      if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    return Quantity::fromMilli(std::stoll(digits));
  }
  size_t dot = text.find('.');
  std::string whole = text.substr(0, dot);
  std::string frac = dot == std::string::npos ? "" : text.substr(dot + 1);
  if (whole.empty() || whole.size() > 12 || frac.size() > 3) return std::nullopt;
  if (dot != std::string::npos && frac.empty()) return std::nullopt;
  for (char c : whole + frac)
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
  while (frac.size() < 3) frac += '0';
  return Quantity::fromMilli(std::stoll(whole) * 1000 + std::stoll(frac));
}

}  // namespace ty
