// parseFakeGpus: GPUs described on the command line, for machines without any.

#include <cctype>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/gpu_provider.h"

namespace ty {
namespace {

constexpr char kField[] = "--fake-gpus";
constexpr char kExpected[] =
    "expected COUNTxMODEL[-<N>GB] parts separated by commas, e.g. \"4xA100-80GB\" or "
    "\"2xH100-80GB,2xL40S-48GB\"";
constexpr int kMaxPerPart = 64;
constexpr int kMaxTotal = 256;
constexpr std::int64_t kMaxGib = 65536;
constexpr std::int64_t kGib = std::int64_t{1} << 30;

bool isDigit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

bool isModelChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

Status badPart(std::string_view part, const std::string& why) {
  return Status::invalidArgument(
      "bad part \"" + std::string(part) + "\": " + why + "; " + kExpected, kField);
}

// Memory from a trailing "-<N>GB" (GiB, case-insensitive unit); 0 when the
// model carries none. -1 when the suffix is there but out of range.
std::int64_t memoryFromModel(std::string_view model) {
  if (model.size() < 4) return 0;
  std::string_view unit = model.substr(model.size() - 2);
  if (std::tolower(static_cast<unsigned char>(unit[0])) != 'g' ||
      std::tolower(static_cast<unsigned char>(unit[1])) != 'b') {
    return 0;
  }
  std::size_t end = model.size() - 2;
  std::size_t begin = end;
  while (begin > 0 && isDigit(model[begin - 1])) --begin;
  if (begin == end || begin == 0 || model[begin - 1] != '-') return 0;
  if (end - begin > 6) return -1;
  std::int64_t gib = 0;
  for (std::size_t i = begin; i < end; ++i) gib = gib * 10 + (model[i] - '0');
  if (gib < 1 || gib > kMaxGib) return -1;
  return gib * kGib;
}

}  // namespace

Result<std::vector<GpuInfo>> parseFakeGpus(const std::string& spec, const std::string& node) {
  if (trim(spec).empty()) {
    return Status::invalidArgument(std::string("empty; ") + kExpected, kField);
  }
  std::vector<GpuInfo> gpus;
  std::string_view rest = spec;
  while (true) {
    std::size_t comma = rest.find(',');
    std::string_view part = trim(rest.substr(0, comma));
    if (part.empty()) return badPart(part, "empty part");

    // Optional leading count: digits followed by 'x'.
    int count = 1;
    std::string_view model = part;
    if (isDigit(part.front())) {
      std::size_t i = 0;
      std::int64_t n = 0;
      while (i < part.size() && isDigit(part[i])) {
        n = n * 10 + (part[i] - '0');
        if (n > kMaxPerPart)
          return badPart(part, "count must be 1.." + std::to_string(kMaxPerPart));
        ++i;
      }
      if (i == part.size() || (part[i] != 'x' && part[i] != 'X')) {
        return badPart(part, "a count must be followed by 'x' and a model");
      }
      if (n < 1) return badPart(part, "count must be 1.." + std::to_string(kMaxPerPart));
      count = static_cast<int>(n);
      model = part.substr(i + 1);
    }
    if (model.empty()) return badPart(part, "missing model");
    if (!std::isalpha(static_cast<unsigned char>(model.front()))) {
      return badPart(part, "a model must start with a letter");
    }
    for (char c : model) {
      if (!isModelChar(c)) {
        return badPart(part, std::string("character '") + c +
                                 "' not allowed in a model (letters, digits, '-', '_', '.')");
      }
    }
    std::int64_t memory = memoryFromModel(model);
    if (memory < 0) {
      return badPart(part, "memory must be 1.." + std::to_string(kMaxGib) + " GB");
    }
    if (gpus.size() + static_cast<std::size_t>(count) > static_cast<std::size_t>(kMaxTotal)) {
      return Status::invalidArgument(
          "more than " + std::to_string(kMaxTotal) + " GPUs in total; " + kExpected, kField);
    }
    for (int k = 0; k < count; ++k) {
      GpuInfo gpu;
      gpu.index = static_cast<int>(gpus.size());
      // Real NVML UUIDs read "GPU-<hex groups>"; the fake keeps the prefix and
      // stays readable and unique per node.
      gpu.uuid = "GPU-fake-" + node + "-" + std::to_string(gpu.index);
      gpu.model = std::string(model);
      gpu.memory_bytes = memory;
      gpus.push_back(std::move(gpu));
    }
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return gpus;
}

}  // namespace ty
