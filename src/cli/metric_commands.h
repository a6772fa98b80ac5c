// `trainyard metrics JOB [--name NAME] [--max-points N] [-o table|json|yaml|csv]`:
// the training metrics a job reported. Without --name, every metric with
// its count, latest value and a sparkline of its series; with --name, that
// series as a table (step, value, time), JSON or CSV.
//
// The rendering is pure functions over the API's JSON, tested without a
// server.
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "cli/command_support.h"

namespace ty {

void addMetricCommands(CLI::App& app, const std::shared_ptr<Globals>& g);

// `values` as a line of `width` block characters (U+2581..U+2588), low to
// high between the series' min and max; each character the mean of its
// share of the points. Fewer values than width: one character each. Empty
// for no values; a flat series is a flat line at the bottom.
std::string sparkline(const std::vector<double>& values, std::size_t width = 24);

// A metric value as people read it: up to 6 significant digits.
std::string formatMetricValue(double v);

// The table of GET /api/v1/jobs/{id}/metrics: NAME COUNT LATEST STEP TREND,
// the trend from `series` (name -> values, oldest first; missing: blank).
void renderMetricList(const Json& list, const std::map<std::string, std::vector<double>>& series,
                      std::ostream& out);
// One series (GET ...?name=): a STEP VALUE TIME table, or CSV with the
// header "step,value,time" (time in RFC 3339 UTC, step empty when unset).
void renderSeriesTable(const Json& series, std::ostream& out);
void renderSeriesCsv(const Json& series, std::ostream& out);

}  // namespace ty
