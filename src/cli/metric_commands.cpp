#include "cli/metric_commands.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>

#include "cli/table.h"
#include "common/time.h"

namespace ty {
namespace {

constexpr const char* kBlocks[] = {"\u2581", "\u2582", "\u2583", "\u2584",
                                   "\u2585", "\u2586", "\u2587", "\u2588"};

std::string stepText(const Json& p) {
  return p.contains("step") && p["step"].is_number() ? std::to_string(p["step"].get<std::int64_t>())
                                                     : "";
}

std::vector<double> valuesOf(const Json& series) {
  std::vector<double> out;
  for (const Json& p : series.value("points", Json::array())) out.push_back(p.value("value", 0.0));
  return out;
}

}  // namespace

std::string sparkline(const std::vector<double>& values, std::size_t width) {
  if (values.empty() || width == 0) return "";
  std::vector<double> cells;
  if (values.size() <= width) {
    cells = values;
  } else {
    // Bucket i holds points [i*n/w, (i+1)*n/w): every point in one bucket.
    const std::size_t n = values.size();
    for (std::size_t i = 0; i < width; ++i) {
      std::size_t from = i * n / width, to = (i + 1) * n / width;
      double sum = 0;
      for (std::size_t j = from; j < to; ++j) sum += values[j];
      cells.push_back(sum / static_cast<double>(to - from));
    }
  }
  auto [lo, hi] = std::minmax_element(cells.begin(), cells.end());
  const double min = *lo, span = *hi - *lo;
  std::string out;
  for (double v : cells) {
    int level = span > 0 ? static_cast<int>(std::lround((v - min) / span * 7.0)) : 0;
    out += kBlocks[std::clamp(level, 0, 7)];
  }
  return out;
}

std::string formatMetricValue(double v) {
  std::ostringstream out;
  out.precision(6);
  out << v;
  return out.str();
}

void renderMetricList(const Json& list, const std::map<std::string, std::vector<double>>& series,
                      std::ostream& out) {
  const Json metrics = list.value("metrics", Json::array());
  if (metrics.empty()) {
    out << "No metrics reported yet: print TRAINYARD_METRIC {\"step\":1,\"loss\":0.5} lines from "
           "the job (see docs/observability.md)\n";
    return;
  }
  Table t({"NAME", "COUNT", "LATEST", "STEP", "TREND"});
  for (const Json& m : metrics) {
    const std::string name = m.value("name", "");
    const Json latest = m.value("latest", Json::object());
    auto it = series.find(name);
    t.add({name, std::to_string(m.value("count", std::int64_t{0})),
           formatMetricValue(latest.value("value", 0.0)),
           stepText(latest).empty() ? "-" : stepText(latest),
           it == series.end() ? "" : sparkline(it->second)});
  }
  t.print(out);
}

void renderSeriesTable(const Json& series, std::ostream& out) {
  Table t({"STEP", "VALUE", "TIME"});
  for (const Json& p : series.value("points", Json::array())) {
    std::string step = stepText(p);
    t.add({step.empty() ? "-" : step, formatMetricValue(p.value("value", 0.0)),
           formatTimestamp(p.value("time", std::int64_t{0}))});
  }
  t.print(out);
}

void renderSeriesCsv(const Json& series, std::ostream& out) {
  out << "step,value,time\n";
  for (const Json& p : series.value("points", Json::array())) {
    // Full precision: CSV is for programs.
    std::ostringstream v;
    v.precision(17);
    v << p.value("value", 0.0);
    out << stepText(p) << "," << v.str() << "," << formatTimestamp(p.value("time", std::int64_t{0}))
        << "\n";
  }
}

void addMetricCommands(CLI::App& app, const std::shared_ptr<Globals>& g) {
  struct Opts {
    std::string job, name, output;
    int max_points = 0;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "metrics",
      "Training metrics a job reported: names with latest values and trends, or one "
      "series with --name");
  cmd->add_option("JOB", o->job, "Job id")->required();
  cmd->add_option("--name", o->name, "Show this metric's series (step, value, time)");
  cmd->add_option("--max-points", o->max_points,
                  "Thin the series to at most this many points (first, last, evenly spaced)")
      ->check(CLI::Range(0, 100000));
  cmd->add_option("-o,--output", o->output, "Output: table, json, yaml or csv (csv with --name)")
      ->check(CLI::IsMember({"table", "json", "yaml", "csv"}));
  cmd->callback([g, o] {
    std::ostream& out = *g->io.out;
    for (char c : o->job) {
      if (!std::isdigit(static_cast<unsigned char>(c))) {
        usageError(*g, "JOB", "job ids are numbers such as 42 (got \"" + o->job + "\")");
      }
    }
    Globals view = *g;
    if (!o->output.empty()) view.output = o->output;
    if (view.output == "csv" && o->name.empty()) {
      usageError(*g, "--output", "csv needs --name: it prints one series");
    }
    const std::string path = "/api/v1/jobs/" + o->job + "/metrics";
    auto client = connect(*g);
    if (!o->name.empty()) {
      std::string query = "?name=" + queryEncode(o->name);
      if (o->max_points > 0) query += "&max_points=" + std::to_string(o->max_points);
      Json series = orFail(*g, client->get(path + query));
      if (view.output == "csv") return renderSeriesCsv(series, out);
      if (printStructured(view, series)) return;
      return renderSeriesTable(series, out);
    }
    Json list = orFail(*g, client->get(path));
    if (printStructured(view, list)) return;
    std::map<std::string, std::vector<double>> trends;
    for (const Json& m : list.value("metrics", Json::array())) {
      const std::string name = m.value("name", "");
      auto s = client->get(path + "?name=" + queryEncode(name) + "&max_points=48");
      if (s.isOk()) trends[name] = valuesOf(*s);
    }
    renderMetricList(list, trends, out);
  });
}

}  // namespace ty
