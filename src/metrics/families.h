// Builders for the metric families every exporter of the server registers.
// Each family is a name, a help text and a registry: the builder chain of
// prometheus-cpp says the same thing in three calls, so the code that
// declares many families (the control plane, the GPU exporters) goes
// through these one-liners instead.
//
// The registry owns the returned family; it lives until the caller removes
// it (prometheus::Registry::Remove) or the registry is destroyed. Thread-safe
// as prometheus::Registry::Register is.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

namespace ty {

inline prometheus::Family<prometheus::Gauge>& gaugeFamily(prometheus::Registry& registry,
                                                          const char* name, const char* help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(registry);
}

inline prometheus::Family<prometheus::Counter>& counterFamily(prometheus::Registry& registry,
                                                              const char* name, const char* help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(registry);
}

inline prometheus::Family<prometheus::Histogram>& histogramFamily(prometheus::Registry& registry,
                                                                  const char* name,
                                                                  const char* help) {
  return prometheus::BuildHistogram().Name(name).Help(help).Register(registry);
}

}  // namespace ty
