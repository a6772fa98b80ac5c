#include "core/node.h"

#include <algorithm>
#include <cctype>

namespace ty {

bool gpuModelMatches(const std::vector<std::string>& selector, const std::string& model) {
  if (selector.empty()) return true;
  auto lower = [](std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
  };
  std::string m = lower(model);
  return std::any_of(selector.begin(), selector.end(), [&](const std::string& want) {
    return m.find(lower(want)) != std::string::npos;
  });
}

}  // namespace ty
