#include "sim/report_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <tuple>

namespace ty {
namespace {

std::string escapeXml(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string tickLabel(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", std::round(v * 100) / 100);
  return buf;
}

// A "nice" tick step giving about `count` ticks over `span`.
double tickStep(double span, int count) {
  double raw = span / count;
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= m * mag) return m * mag;
  }
  return 10 * mag;
}

const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                         "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

}  // namespace

std::string toSvg(const LineChart& chart) {
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  for (const auto& s : chart.series) {
    for (auto [x, y] : s.points) {
      if (std::isnan(y)) continue;
      x0 = std::min(x0, x);
      x1 = std::max(x1, x);
      y0 = std::min(y0, y);
      y1 = std::max(y1, y);
    }
  }
  if (chart.x_range) std::tie(x0, x1) = *chart.x_range;
  if (chart.y_range) std::tie(y0, y1) = *chart.y_range;
  if (!std::isfinite(x0) || !std::isfinite(x1)) x0 = 0, x1 = 1;
  if (!std::isfinite(y0) || !std::isfinite(y1)) y0 = 0, y1 = 1;
  if (x1 <= x0) x1 = x0 + 1;
  if (y1 <= y0) y1 = y0 + 1;

  const double left = 70, right = 170, top = 40, bottom = 60;
  const double w = chart.width, h = chart.height;
  const double pw = w - left - right, ph = h - top - bottom;
  auto px = [&](double x) { return left + (x - x0) / (x1 - x0) * pw; };
  auto py = [&](double y) { return top + ph - (y - y0) / (y1 - y0) * ph; };

  std::string o;
  o += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(w) + "\" height=\"" + num(h) +
       "\" viewBox=\"0 0 " + num(w) + " " + num(h) +
       "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  o += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o += "<text x=\"" + num(w / 2) + "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">" +
       escapeXml(chart.title) + "</text>\n";
  // Grid and ticks.
  const double xs = tickStep(x1 - x0, 8), ys = tickStep(y1 - y0, 6);
  for (double x = std::ceil(x0 / xs) * xs; x <= x1 + 1e-9; x += xs) {
    o += "<line x1=\"" + num(px(x)) + "\" y1=\"" + num(top) + "\" x2=\"" + num(px(x)) + "\" y2=\"" +
         num(top + ph) + "\" stroke=\"#e0e0e0\"/>\n";
    o += "<text x=\"" + num(px(x)) + "\" y=\"" + num(top + ph + 18) + "\" text-anchor=\"middle\">" +
         tickLabel(x) + "</text>\n";
  }
  for (double y = std::ceil(y0 / ys) * ys; y <= y1 + 1e-9; y += ys) {
    o += "<line x1=\"" + num(left) + "\" y1=\"" + num(py(y)) + "\" x2=\"" + num(left + pw) +
         "\" y2=\"" + num(py(y)) + "\" stroke=\"#e0e0e0\"/>\n";
    o += "<text x=\"" + num(left - 8) + "\" y=\"" + num(py(y) + 4) + "\" text-anchor=\"end\">" +
         tickLabel(y) + "</text>\n";
  }
  o += "<rect x=\"" + num(left) + "\" y=\"" + num(top) + "\" width=\"" + num(pw) + "\" height=\"" +
       num(ph) + "\" fill=\"none\" stroke=\"black\"/>\n";
  o += "<text x=\"" + num(left + pw / 2) + "\" y=\"" + num(h - 15) + "\" text-anchor=\"middle\">" +
       escapeXml(chart.x_label) + "</text>\n";
  o += "<text transform=\"translate(18," + num(top + ph / 2) +
       ") rotate(-90)\" text-anchor=\"middle\">" + escapeXml(chart.y_label) + "</text>\n";
  // Series: a NaN or out-of-range point ends one polyline.
  for (std::size_t i = 0; i < chart.series.size(); ++i) {
    const auto& s = chart.series[i];
    const char* color = kColors[i % (sizeof kColors / sizeof *kColors)];
    std::string pts;
    auto flush = [&] {
      if (!pts.empty()) {
        o += "<polyline fill=\"none\" stroke=\"" + std::string(color) +
             "\" stroke-width=\"2\" points=\"" + pts + "\"/>\n";
      }
      pts.clear();
    };
    for (auto [x, y] : s.points) {
      if (std::isnan(y) || x < x0 || x > x1) {
        flush();
        continue;
      }
      double cy = std::clamp(py(y), top, top + ph);
      if (!pts.empty()) pts += ' ';
      pts += num(px(x)) + "," + num(cy);
    }
    flush();
    const double ly = top + 10 + 20 * static_cast<double>(i);
    o += "<line x1=\"" + num(left + pw + 12) + "\" y1=\"" + num(ly) + "\" x2=\"" +
         num(left + pw + 36) + "\" y2=\"" + num(ly) + "\" stroke=\"" + color +
         "\" stroke-width=\"2\"/>\n";
    o += "<text x=\"" + num(left + pw + 42) + "\" y=\"" + num(ly + 4) + "\">" + escapeXml(s.name) +
         "</text>\n";
  }
  o += "</svg>\n";
  return o;
}

}  // namespace ty
