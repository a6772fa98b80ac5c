// The Prometheus text exposition of a registry, for GET /metrics.
#pragma once

#include <prometheus/registry.h>

#include <string>

namespace ty {

// The Content-Type of the text format (0.0.4) that Prometheus scrapes.
inline constexpr char kPrometheusTextContentType[] = "text/plain; version=0.0.4; charset=utf-8";

// Every family of `registry` in the text format (prometheus::TextSerializer).
// Thread-safe as prometheus::Registry::Collect is: may run while other
// threads update the registry's metrics.
std::string serializeText(const prometheus::Registry& registry);

}  // namespace ty
