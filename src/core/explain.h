// Why a job waits, in plain words. The capacity message keeps the form
// "Waiting: needs 4 GPUs, 0 free on node local": the server compares
// messages with their numbers blanked to decide whether a job's reason
// changed, so the words must stay put while the counts move.
#pragma once

#include <string>

#include "common/ids.h"
#include "core/cluster.h"

namespace ty {

// Names the node that comes closest to holding one replica and what it
// lacks. `replicas` > 1 adds "2 replicas of" to the need.
std::string explainCapacity(const ClusterState& state, const ReplicaShape& shape, int replicas);
// "Waiting: needs 4 GPUs; the free ones are reserved by backfill for job 7, first in line"
std::string explainReserved(const ReplicaShape& shape, int replicas, JobId holder);
// "Waiting for 2 preempted jobs to stop"
std::string explainPreempting(int victims);
// "4 GPUs of type A100", "0.5 GPUs": what one replica asks of GPUs.
std::string describeGpus(const ReplicaShape& shape);

}  // namespace ty
