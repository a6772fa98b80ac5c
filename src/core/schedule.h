// The scheduler core: a pure function from a snapshot to a Decision.
//
// Algorithm (first version): pending jobs in order of priority (high
// first), then submission order. Each job is a gang: all replicas are
// placed in one pass or none are. Whole GPUs, best fit: a replica goes to
// the node whose free GPUs of a matching model are fewest but enough, so
// large free blocks stay whole. A job that cannot be placed now gets an
// explanation in words; jobs behind it may still start if they fit (no
// reservation yet: that comes with backfill).
//
// Same input, same Decision: no clock, thread, file or socket.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/ids.h"
#include "common/rng.h"
#include "common/status.h"
#include "common/time.h"
#include "core/cluster.h"
#include "core/job.h"
#include "core/node.h"

namespace ty {

struct PendingJob {
  JobId id;
  int priority = 0;
  Timestamp submitted = 0;
  Resources per_replica;
  int replicas = 1;
};

struct QueueSnapshot {
  std::vector<PendingJob> pending;
};

struct PolicyConfig {
  // Reserved for the policies the scheduler issue adds.
};

struct Placement {
  JobId job;
  std::vector<ReplicaPlacement> replicas;
};

struct Explanation {
  JobId job;
  int position = 0;     // 1-based place among waiting jobs
  std::string message;  // "Waiting: needs 4 GPUs, 2 free on node local"
};

struct Decision {
  std::vector<Placement> placements;
  std::vector<Explanation> waiting;
};

Decision schedule(const ClusterSnapshot& cluster, const QueueSnapshot& queues,
                  const PolicyConfig& config, Timestamp now, Rng& rng);

// Whether a job with this spec could ever run on an empty cluster of these
// nodes. Returns Infeasible naming the field ("resources.gpus: needs 16
// GPUs; the largest node has 8") otherwise.
Status checkFeasible(const JobSpec& spec, const std::vector<NodeInfo>& nodes);

}  // namespace ty
