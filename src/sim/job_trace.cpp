#include "sim/job_trace.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>

#include "sim/trace_csv.h"

namespace ty {
namespace {

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
// days_from_civil), so parsing needs no time zone database or clock.
std::int64_t daysFromCivil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

bool parseInt(std::string_view s, int& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

}  // namespace

Result<Timestamp> parseTraceTime(std::string_view text) {
  // Fixed layout: YYYY-MM-DD HH:MM:SS.
  auto bad = [&] {
    return Status::invalidArgument("expected \"YYYY-MM-DD HH:MM:SS\", got \"" + std::string(text) +
                                   "\"");
  };
  if (text.size() != 19 || text[4] != '-' || text[7] != '-' || text[10] != ' ' || text[13] != ':' ||
      text[16] != ':') {
    return bad();
  }
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  if (!parseInt(text.substr(0, 4), y) || !parseInt(text.substr(5, 2), mo) ||
      !parseInt(text.substr(8, 2), d) || !parseInt(text.substr(11, 2), h) ||
      !parseInt(text.substr(14, 2), mi) || !parseInt(text.substr(17, 2), s)) {
    return bad();
  }
  static constexpr int kDaysIn[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (mo < 1 || mo > 12 || d < 1 || d > kDaysIn[mo - 1] || (mo == 2 && d == 29 && !leap) ||
      h > 23 || mi > 59 || s > 59) {
    return bad();
  }
  const std::int64_t days = daysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d));
  return ((days * 24 + h) * 60 + mi) * 60'000 + static_cast<std::int64_t>(s) * 1000;
}

Result<std::vector<TraceJob>> parsePhillyCsv(std::istream& in, const std::string& source) {
  std::string line;
  if (!std::getline(in, line)) {
    return Status::invalidArgument(source + ":1: empty file; expected a header line");
  }
  // Column positions by header name, so files with extra or reordered
  // columns still read.
  static const char* kNeeded[] = {"timestamp", "duration", "num_gpus", "cluster"};
  std::map<std::string, std::size_t, std::less<>> header;
  std::vector<std::string_view> names = splitCsvFields(line);
  for (std::size_t i = 0; i < names.size(); ++i) header.emplace(std::string(trim(names[i])), i);
  std::size_t col[4];
  for (int k = 0; k < 4; ++k) {
    auto it = header.find(kNeeded[k]);
    if (it == header.end()) {
      return Status::invalidArgument(source + ":1: header has no column \"" + kNeeded[k] +
                                     "\" (needs timestamp, duration, num_gpus, cluster)");
    }
    col[k] = it->second;
  }
  const std::size_t width = names.size();

  std::vector<TraceJob> out;
  int line_no = 1;
  while (std::getline(in, line)) {
    ++line_no;
    if (trim(line).empty()) continue;
    std::vector<std::string_view> f = splitCsvFields(line);
    const std::string where = source + ":" + std::to_string(line_no) + ": ";
    if (f.size() != width) {
      return Status::invalidArgument(where + "expected " + std::to_string(width) +
                                     " columns, got " + std::to_string(f.size()));
    }
    auto columnError = [&](int k, const std::string& what) {
      return Status::invalidArgument(where + "column " + std::to_string(col[k] + 1) + " (" +
                                     kNeeded[k] + "): " + what);
    };
    TraceJob job;
    job.line = line_no;
    Result<Timestamp> t = parseTraceTime(trim(f[col[0]]));
    if (!t.isOk()) return columnError(0, t.status().message());
    job.submitted = *t;

    // Durations are written as seconds with a fraction ("2951.0").
    const std::string dur_text(trim(f[col[1]]));
    double seconds = 0;
    auto [dp, dec] = std::from_chars(dur_text.data(), dur_text.data() + dur_text.size(), seconds);
    if (dur_text.empty() || dec != std::errc() || dp != dur_text.data() + dur_text.size() ||
        !std::isfinite(seconds) || seconds < 0) {
      return columnError(1, "expected a number of seconds >= 0, got \"" + dur_text + "\"");
    }
    job.duration = std::llround(seconds * 1000.0);

    // Accept "8" and "8.0"; anything else is not a GPU count.
    std::string_view gpus_text = trim(f[col[2]]);
    if (gpus_text.size() > 2 && gpus_text.substr(gpus_text.size() - 2) == ".0") {
      gpus_text.remove_suffix(2);
    }
    if (!parseInt(gpus_text, job.gpus) || job.gpus < 1) {
      return columnError(
          2, "expected a whole number of GPUs >= 1, got \"" + std::string(trim(f[col[2]])) + "\"");
    }
    job.queue = std::string(trim(f[col[3]]));
    if (job.queue.empty()) return columnError(3, "empty VC name");
    out.push_back(std::move(job));
  }
  return out;
}

Result<std::vector<TraceJob>> readPhillyCsv(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::notFound("cannot open trace " + path);
  return parsePhillyCsv(in, path);
}

std::vector<TraceJob> selectWindow(std::vector<TraceJob> jobs, const TraceWindow& window) {
  std::stable_sort(jobs.begin(), jobs.end(), [](const TraceJob& a, const TraceJob& b) {
    if (a.submitted != b.submitted) return a.submitted < b.submitted;
    return a.line < b.line;
  });
  std::vector<TraceJob> out;
  for (auto& j : jobs) {
    if (window.from && j.submitted < *window.from) continue;
    if (window.until && j.submitted >= *window.until) break;
    if (window.limit != 0 && out.size() >= window.limit) break;
    j.id = static_cast<std::int64_t>(out.size()) + 1;
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace ty
