#include "core/fair_share.h"

#include <algorithm>
#include <cmath>

namespace ty {
namespace {

// ln 2: converts a half-life into the mean lifetime of a unit of usage.
constexpr double kLn2 = 0.69314718055994530942;

}  // namespace

double decayFactor(DurationMs elapsed, DurationMs half_life) {
  if (half_life <= 0 || elapsed <= 0) return 1;
  return std::exp2(-static_cast<double>(elapsed) / static_cast<double>(half_life));
}

DecayedUsage decayUsage(const DecayedUsage& usage, DurationMs elapsed, DurationMs half_life) {
  double f = decayFactor(elapsed, half_life);
  return {usage.gpu * f, usage.cpu * f, usage.memory * f};
}

DecayedUsage accumulateUsage(const DecayedUsage& usage, const ResourceRate& held,
                             DurationMs elapsed, DurationMs half_life) {
  if (elapsed <= 0) return usage;
  // The integral of held * 2^(-(elapsed - t) / h) over [0, elapsed]; without
  // decay simply held * elapsed.
  double weight = static_cast<double>(elapsed);
  if (half_life > 0) {
    weight = static_cast<double>(half_life) / kLn2 * (1 - decayFactor(elapsed, half_life));
  }
  DecayedUsage out = decayUsage(usage, elapsed, half_life);
  out.gpu += held.gpu * weight;
  out.cpu += held.cpu * weight;
  out.memory += held.memory * weight;
  return out;
}

double dominantShare(const ResourceRate& held, const DecayedUsage& usage,
                     const ResourceRate& capacity, DurationMs half_life, double weight) {
  // The whole cluster held for the decay window: the mean lifetime h / ln 2.
  // Without decay past usage cannot be normalised and only current holdings count.
  double window = half_life > 0 ? static_cast<double>(half_life) / kLn2 : 0;
  auto part = [&](double now, double past, double cap) {
    if (cap <= 0) return 0.0;
    double share = now / cap;
    if (window > 0) share += past / (cap * window);
    return share;
  };
  double dominant =
      std::max({part(held.gpu, usage.gpu, capacity.gpu), part(held.cpu, usage.cpu, capacity.cpu),
                part(held.memory, usage.memory, capacity.memory)});
  return dominant / (weight > 0 ? weight : 1);
}

}  // namespace ty
