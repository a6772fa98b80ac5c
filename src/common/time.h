// Time as values: Timestamp is milliseconds since the Unix epoch, Duration
// milliseconds. Nothing here reads a clock; see clock.h for that seam.
#pragma once

#include <cstdint>
#include <string>

namespace ty {

using Timestamp = std::int64_t;  // ms since epoch
using DurationMs = std::int64_t;

// RFC 3339 in UTC with milliseconds: "2026-11-29T23:03:00.123Z".
std::string formatTimestamp(Timestamp t);

// "2h", "90s", "1h30m", "500ms", "2d" -> milliseconds. Returns -1 when the
// text is not a duration.
DurationMs parseDuration(const std::string& text);
// 7200000 -> "2h"; 5400000 -> "1h30m".
std::string formatDuration(DurationMs d);

}  // namespace ty
