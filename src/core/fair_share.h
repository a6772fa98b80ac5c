// Fair share: weighted Dominant Resource Fairness over GPUs, CPUs and memory
// (Ghodsi et al., NSDI 2011), with past usage decayed by a half-life as in
// Slurm's multifactor fair-share factor (PriorityDecayHalfLife).
//
// A queue's share is its dominant share divided by its weight: for each of
// GPU, CPU and memory, what it holds now as a fraction of the cluster plus
// its decayed past usage as a fraction of what the whole cluster could have
// used over the same decay window; the largest of the three counts. Lower
// share goes first among jobs of equal priority. Share only orders jobs: it
// never preempts by itself.
//
// The caller keeps each queue's DecayedUsage and advances it with
// accumulateUsage() between passes; these are pure functions.
#pragma once

#include "common/time.h"

namespace ty {

// What a queue holds at one moment: milli-GPU, millicores, bytes.
struct ResourceRate {
  double gpu = 0;
  double cpu = 0;
  double memory = 0;
  ResourceRate& operator+=(const ResourceRate& o) {
    gpu += o.gpu;
    cpu += o.cpu;
    memory += o.memory;
    return *this;
  }
  ResourceRate& operator-=(const ResourceRate& o) {
    gpu -= o.gpu;
    cpu -= o.cpu;
    memory -= o.memory;
    return *this;
  }
};

// Past usage, each unit held for each millisecond, weighted by 2^(-age / half_life).
struct DecayedUsage {
  double gpu = 0;     // milli-GPU * ms
  double cpu = 0;     // millicore * ms
  double memory = 0;  // byte * ms
};

// 2^(-elapsed / half_life); 1 when half_life <= 0 (no decay).
double decayFactor(DurationMs elapsed, DurationMs half_life);
DecayedUsage decayUsage(const DecayedUsage& usage, DurationMs elapsed, DurationMs half_life);
// The usage after holding `held` for `elapsed` more milliseconds. Exact for
// any step size: one call over 10 minutes equals ten calls of one minute.
DecayedUsage accumulateUsage(const DecayedUsage& usage, const ResourceRate& held,
                             DurationMs elapsed, DurationMs half_life);

// Weighted dominant share (see above). `capacity` is the whole cluster.
double dominantShare(const ResourceRate& held, const DecayedUsage& usage,
                     const ResourceRate& capacity, DurationMs half_life, double weight);

}  // namespace ty
