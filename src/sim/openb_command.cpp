// `trainyard simulate openb`: the FGD artifact's placement experiment on
// the Alibaba openb traces, for every placement policy we have. Reads the
// CSVs, runs replayOpenb (openb_replay.h) per trace x policy x seed, and
// prints the summary (text or JSON), the per-point curve (CSV) and a chart
// of allocation vs arrivals (SVG).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "sim/openb_replay.h"
#include "sim/report_svg.h"
#include "sim/report_table.h"
#include "sim/simulate_command.h"

namespace ty {
namespace {

struct OpenbOptions {
  std::vector<std::string> nodes;
  std::vector<std::string> pods;
  std::string seeds = "42-51";
  double tune = 1.3;
  std::vector<std::string> policies;
  std::string output = "text";
  std::string csv;
  std::string svg;
  int threads = 1;
};

// "42-51" or "1,2,5" (or a mix).
Result<std::vector<std::uint64_t>> parseSeeds(const std::string& text) {
  std::vector<std::uint64_t> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    std::string part = text.substr(start, comma - start);
    start = comma + 1;
    if (part.empty()) continue;
    try {
      std::size_t dash = part.find('-');
      if (dash == std::string::npos) {
        out.push_back(std::stoull(part));
      } else {
        std::uint64_t a = std::stoull(part.substr(0, dash)), b = std::stoull(part.substr(dash + 1));
        if (b < a || b - a > 10000) return Status::invalidArgument("bad seed range " + part);
        for (std::uint64_t s = a; s <= b; ++s) out.push_back(s);
      }
    } catch (const std::exception&) {
      return Status::invalidArgument("bad seed \"" + part + "\"", "seeds");
    }
  }
  if (out.empty()) return Status::invalidArgument("no seeds", "seeds");
  return out;
}

// "dir/openb_pod_list_gpushare40.csv" -> "gpushare40"; other names: the stem.
std::string traceLabel(const std::string& path) {
  std::string stem = path.substr(path.find_last_of('/') + 1);
  if (stem.size() > 4 && stem.substr(stem.size() - 4) == ".csv") stem.resize(stem.size() - 4);
  const std::string prefix = "openb_pod_list_";
  if (stem.rfind(prefix, 0) == 0) stem = stem.substr(prefix.size());
  return stem;
}

struct Stats {
  double mean = 0, std = 0;
};
Stats stats(const std::vector<double>& v) {
  Stats s;
  std::size_t n = 0;
  for (double x : v) {
    if (!std::isnan(x)) s.mean += x, ++n;
  }
  if (n == 0) return {std::nan(""), std::nan("")};
  s.mean /= static_cast<double>(n);
  for (double x : v) {
    if (!std::isnan(x)) s.std += (x - s.mean) * (x - s.mean);
  }
  s.std = std::sqrt(s.std / static_cast<double>(n));
  return s;
}

// All seeds of one trace x policy.
struct Cell {
  std::string trace;
  std::string policy;
  std::vector<OpenbRunResult> runs;
  double seconds = 0;
  std::vector<double> mean(bool frag) const {
    std::vector<double> out(kOpenbMaxArrivedPct + 1);
    for (std::size_t k = 0; k < out.size(); ++k) {
      std::vector<double> v;
      for (const auto& r : runs) v.push_back(frag ? r.frag_pct[k] : r.alloc_pct[k]);
      out[k] = stats(v).mean;
    }
    return out;
  }
  Stats at(std::size_t k, bool frag, bool unallocated) const {
    std::vector<double> v;
    for (const auto& r : runs) {
      double x = frag ? r.frag_pct[k] : r.alloc_pct[k];
      v.push_back(unallocated ? 100.0 - x : x);
    }
    return stats(v);
  }
};

Status writeFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) return Status::unavailable("cannot write " + path);
  return Status::ok();
}

Status runOpenb(const OpenbOptions& opt) {
  auto seeds = parseSeeds(opt.seeds);
  if (!seeds.isOk()) return seeds.status();
  if (opt.tune <= 0 || opt.tune > 10) return Status::invalidArgument("--tune must be in (0, 10]");
  std::vector<std::string> policies = opt.policies;
  if (policies.empty()) policies = {"random", "best-fit", "packing", "fgd", "trainyard"};
  for (const auto& p : policies) {
    auto made = makePlacementPolicy(p, {});
    if (!made.isOk()) return made.status();
  }
  if (opt.output != "text" && opt.output != "json") {
    return Status::invalidArgument("-o must be text or json");
  }

  std::vector<Cell> cells;
  for (const std::string& node_path : opt.nodes) {
    auto node_text = readTextFile(node_path);
    if (!node_text.isOk()) return node_text.status();
    auto nodes = parseOpenbNodes(*node_text, node_path);
    if (!nodes.isOk()) return nodes.status();
    const ClusterSnapshot cluster = openbSnapshot(*nodes);
    for (const std::string& pod_path : opt.pods) {
      auto pod_text = readTextFile(pod_path);
      if (!pod_text.isOk()) return pod_text.status();
      auto pods = parseOpenbPods(*pod_text, pod_path);
      if (!pods.isOk()) return pods.status();
      const Workload workload = openbWorkload(*pods, 0.95);
      const Workload all_shapes = openbWorkload(*pods, 1.0);
      std::string label = traceLabel(pod_path);
      if (opt.nodes.size() > 1) label += "@" + traceLabel(node_path);
      for (const std::string& policy_name : policies) {
        Cell cell{label, policy_name, std::vector<OpenbRunResult>(seeds->size()), 0};
        auto t0 = std::chrono::steady_clock::now();
        // Seeds are independent: each worker has its own policy object.
        std::size_t next = 0;
        std::mutex mu;
        auto worker = [&] {
          auto policy = std::move(makePlacementPolicy(policy_name, all_shapes).value());
          while (true) {
            std::size_t i;
            {
              std::lock_guard<std::mutex> lock(mu);
              if (next >= seeds->size()) return;
              i = next++;
            }
            cell.runs[i] = replayOpenb(cluster, *pods, workload, *policy, opt.tune, (*seeds)[i]);
          }
        };
        std::vector<std::thread> workers;
        for (int t = 1; t < std::max(opt.threads, 1); ++t) workers.emplace_back(worker);
        worker();
        for (auto& w : workers) w.join();
        cell.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        for (const auto& r : cell.runs) {
          if (!r.consistent) {
            return Status::internal("policy " + policy_name + " over-committed on " + label);
          }
        }
        std::fprintf(stderr, "%s %s: %zu seeds in %.1f s\n", label.c_str(), policy_name.c_str(),
                     seeds->size(), cell.seconds);
        cells.push_back(std::move(cell));
      }
    }
  }

  const std::vector<std::size_t> points = {80, 90, 100, 110, 120, 130};
  if (opt.output == "json") {
    nlohmann::json j = nlohmann::json::array();
    for (const Cell& c : cells) {
      nlohmann::json row;
      row["trace"] = c.trace;
      row["policy"] = c.policy;
      row["seeds"] = c.runs.size();
      Stats u = c.at(100, false, true), f = c.at(100, true, false);
      row["unallocated_gpu_pct_at_100"] = {{"mean", u.mean}, {"std", u.std}};
      row["frag_pct_at_100"] = {{"mean", f.mean}, {"std", f.std}};
      nlohmann::json alloc;
      for (std::size_t k : points) alloc[std::to_string(k)] = c.at(k, false, false).mean;
      row["alloc_pct_at_arrived"] = alloc;
      row["seconds"] = c.seconds;
      j.push_back(row);
    }
    std::cout << j.dump(2) << "\n";
  } else {
    Table t;
    t.columns = {"trace", "policy", "unalloc@100", "±", "frag@100", "±"};
    for (std::size_t k : points) t.columns.push_back("alloc@" + std::to_string(k));
    for (const Cell& c : cells) {
      Stats u = c.at(100, false, true), f = c.at(100, true, false);
      std::vector<std::string> row = {c.trace,
                                      c.policy,
                                      formatNumber(u.mean),
                                      formatNumber(u.std),
                                      formatNumber(f.mean),
                                      formatNumber(f.std)};
      for (std::size_t k : points) row.push_back(formatNumber(c.at(k, false, false).mean));
      t.addRow(std::move(row));
    }
    std::cout << "GPU allocation (% of capacity) at arrived = k% of capacity; mean over "
              << seeds->size() << " seeds, tune " << opt.tune << "\n"
              << toAlignedText(t);
  }

  if (!opt.csv.empty()) {
    Table t;
    t.columns = {"policy", "trace", "seeds", "arrived_pct", "alloc_pct", "frag_pct"};
    for (const Cell& c : cells) {
      auto alloc = c.mean(false), frag = c.mean(true);
      for (std::size_t k = 0; k < alloc.size(); ++k) {
        t.addRow({c.policy, c.trace, std::to_string(c.runs.size()), std::to_string(k),
                  formatNumber(alloc[k], 3), formatNumber(frag[k], 3)});
      }
    }
    TY_RETURN_IF_ERROR(writeFile(opt.csv, toCsv(t)));
  }
  if (!opt.svg.empty()) {
    LineChart chart;
    chart.title = "GPU allocation vs arrived GPU request (openb)";
    chart.x_label = "arrived GPU request (% of capacity)";
    chart.y_label = "allocated GPU (% of capacity)";
    chart.x_range = {{80, 130}};
    chart.y_range = {{75, 100}};
    for (const Cell& c : cells) {
      ChartSeries s;
      s.name = c.policy + (opt.pods.size() * opt.nodes.size() > 1 ? " " + c.trace : "");
      auto alloc = c.mean(false);
      for (std::size_t k = 0; k < alloc.size(); ++k) {
        s.points.emplace_back(static_cast<double>(k), alloc[k]);
      }
      chart.series.push_back(std::move(s));
    }
    TY_RETURN_IF_ERROR(writeFile(opt.svg, toSvg(chart)));
  }
  return Status::ok();
}

}  // namespace

void addOpenbCommand(CLI::App& simulate) {
  auto opt = std::make_shared<OpenbOptions>();
  CLI::App* cmd = simulate.add_subcommand(
      "openb", "Placement replay of an Alibaba openb pod trace (FGD protocol)");
  cmd->add_option("--nodes", opt->nodes, "Node list CSV (sn,cpu_milli,memory_mib,gpu,model)")
      ->required()
      ->delimiter(',');
  cmd->add_option("--pods", opt->pods,
                  "Pod list CSV(s) (name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec]); "
                  "repeat or comma-separate to run several traces")
      ->required()
      ->delimiter(',');
  cmd->add_option("--seeds", opt->seeds, "Seeds, e.g. 42-51 or 1,2,3")->capture_default_str();
  cmd->add_option("--tune", opt->tune, "Inflate pods to this multiple of GPU capacity")
      ->capture_default_str();
  cmd->add_option("--policies", opt->policies,
                  "Placement policies (default: random,best-fit,packing,fgd,trainyard)")
      ->delimiter(',');
  cmd->add_option("-o,--output", opt->output, "Summary format: text or json")
      ->capture_default_str();
  cmd->add_option("--csv", opt->csv, "Write the per-point curve to this CSV file");
  cmd->add_option("--svg", opt->svg, "Write allocation vs arrivals as an SVG line chart");
  cmd->add_option("--threads", opt->threads, "Seeds replayed in parallel")->capture_default_str();
  cmd->callback([opt] {
    Status s = runOpenb(*opt);
    if (!s.isOk()) {
      std::cerr << "trainyard simulate openb: " << s.message() << "\n";
      throw CLI::RuntimeError(2);
    }
  });
}

}  // namespace ty
