// A line chart of named series rendered as a standalone SVG (no scripts,
// no external fonts): axes with ticks, one coloured polyline per series and
// a legend. Generic: openb draws allocation vs arrivals, the job replay
// draws its own series. Values; thread-compatible.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ty {

struct ChartSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y); NaN y breaks the line
};

struct LineChart {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<ChartSeries> series;
  // Axis ranges; unset: from the data.
  std::optional<std::pair<double, double>> x_range;
  std::optional<std::pair<double, double>> y_range;
  int width = 720;
  int height = 480;
};

std::string toSvg(const LineChart& chart);

}  // namespace ty
