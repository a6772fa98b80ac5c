#include "metrics/exposition.h"

#include <prometheus/text_serializer.h>

#include <sstream>

namespace ty {

std::string serializeText(const prometheus::Registry& registry) {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry.Collect());
  return out.str();
}

}  // namespace ty
