#include "sim/trace_csv.h"

#include <charconv>
#include <fstream>
#include <map>
#include <sstream>

namespace ty {

std::vector<std::string_view> splitCsvFields(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    std::size_t comma = line.find(',', start);
    if (comma == std::string_view::npos) {
      out.push_back(line.substr(start));
      return out;
    }
    out.push_back(line.substr(start, comma - start));
    start = comma + 1;
  }
}

namespace {

// A CSV with a header row, walked row by row; cells by column name.
class CsvTable {
 public:
  CsvTable(std::string_view text, std::string_view source) : text_(text), source_(source) {}

  // Reads the header and checks the required columns are there.
  Status open(const std::vector<std::string>& required) {
    std::string_view header;
    if (!nextLine(header)) return Status::invalidArgument(std::string(source_) + ": empty file");
    auto names = splitCsvFields(header);
    for (std::size_t i = 0; i < names.size(); ++i) columns_[std::string(names[i])] = i;
    for (const auto& r : required) {
      if (!columns_.count(r)) {
        return Status::invalidArgument(std::string(source_) + ":" + std::to_string(line_) +
                                       ": missing column " + r);
      }
    }
    return Status::ok();
  }

  // Advances to the next non-empty row; false at the end.
  bool next() {
    std::string_view line;
    while (nextLine(line)) {
      if (line.empty()) continue;
      row_ = splitCsvFields(line);
      return true;
    }
    return false;
  }

  bool has(const std::string& column) const { return columns_.count(column) > 0; }

  Result<std::string_view> text(const std::string& column) const {
    auto it = columns_.find(column);
    if (it == columns_.end() || it->second >= row_.size()) {
      if (it == columns_.end()) return std::string_view{};
      return error(column, "missing value");
    }
    return row_[it->second];
  }

  Result<std::int64_t> integer(const std::string& column) const {
    auto t = text(column);
    if (!t.isOk()) return t.status();
    std::string_view s = *t;
    std::int64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size()) {
      return error(column, "\"" + std::string(s) + "\" is not an integer");
    }
    if (v < 0) return error(column, "\"" + std::string(s) + "\" is negative");
    return v;
  }

  Status error(const std::string& column, const std::string& what) const {
    return Status::invalidArgument(
        std::string(source_) + ":" + std::to_string(line_) + ": column " + column + ": " + what,
        column);
  }
  std::size_t line() const { return line_; }

 private:
  bool nextLine(std::string_view& line) {
    if (pos_ >= text_.size()) return false;
    std::size_t nl = text_.find('\n', pos_);
    if (nl == std::string_view::npos) nl = text_.size();
    line = text_.substr(pos_, nl - pos_);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    pos_ = nl + 1;
    ++line_;
    return true;
  }

  std::string_view text_;
  std::string_view source_;
  std::size_t pos_ = 0;
  std::size_t line_ = 0;
  std::map<std::string, std::size_t> columns_;
  std::vector<std::string_view> row_;
};

}  // namespace

Result<std::vector<OpenbNode>> parseOpenbNodes(std::string_view text, std::string_view source) {
  CsvTable t(text, source);
  TY_RETURN_IF_ERROR(t.open({"sn", "cpu_milli", "memory_mib", "gpu", "model"}));
  std::vector<OpenbNode> out;
  while (t.next()) {
    OpenbNode n;
    TY_ASSIGN_OR_RETURN(auto name, t.text("sn"));
    TY_ASSIGN_OR_RETURN(auto cpu, t.integer("cpu_milli"));
    TY_ASSIGN_OR_RETURN(auto mem, t.integer("memory_mib"));
    TY_ASSIGN_OR_RETURN(auto gpus, t.integer("gpu"));
    TY_ASSIGN_OR_RETURN(auto model, t.text("model"));
    if (name.empty()) return t.error("sn", "empty node name");
    if (gpus > 64) return t.error("gpu", std::to_string(gpus) + " GPUs on one node");
    if (gpus > 0 && model.empty()) return t.error("model", "GPU node without a model");
    n.name = std::string(name);
    n.cpu_milli = cpu;
    n.memory_mib = mem;
    n.gpus = static_cast<int>(gpus);
    n.model = std::string(model);
    out.push_back(std::move(n));
  }
  return out;
}

Result<std::vector<OpenbPod>> parseOpenbPods(std::string_view text, std::string_view source) {
  CsvTable t(text, source);
  TY_RETURN_IF_ERROR(t.open({"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"}));
  std::vector<OpenbPod> out;
  while (t.next()) {
    OpenbPod p;
    TY_ASSIGN_OR_RETURN(auto name, t.text("name"));
    TY_ASSIGN_OR_RETURN(auto cpu, t.integer("cpu_milli"));
    TY_ASSIGN_OR_RETURN(auto mem, t.integer("memory_mib"));
    TY_ASSIGN_OR_RETURN(auto num_gpu, t.integer("num_gpu"));
    TY_ASSIGN_OR_RETURN(auto gpu_milli, t.integer("gpu_milli"));
    TY_ASSIGN_OR_RETURN(auto spec, t.text("gpu_spec"));
    if (name.empty()) return t.error("name", "empty pod name");
    if (num_gpu > 64) return t.error("num_gpu", std::to_string(num_gpu) + " GPUs in one pod");
    if (gpu_milli > 1000) return t.error("gpu_milli", "above 1000");
    if (num_gpu > 1 && gpu_milli != 1000) {
      return t.error("gpu_milli", "a share below 1000 needs num_gpu 1");
    }
    if (num_gpu > 0 && gpu_milli == 0) return t.error("gpu_milli", "0 with num_gpu > 0");
    p.name = std::string(name);
    p.cpu_milli = cpu;
    p.memory_mib = mem;
    p.num_gpu = static_cast<int>(num_gpu);
    p.gpu_milli = num_gpu == 0 ? 0 : static_cast<int>(gpu_milli);
    std::size_t start = 0;
    while (start < spec.size()) {
      std::size_t bar = spec.find('|', start);
      if (bar == std::string_view::npos) bar = spec.size();
      if (bar > start) p.gpu_spec.emplace_back(spec.substr(start, bar - start));
      start = bar + 1;
    }
    out.push_back(std::move(p));
  }
  return out;
}

Result<std::string> readTextFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::notFound("cannot open " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace ty
