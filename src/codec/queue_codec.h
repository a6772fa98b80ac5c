// The one text form of a queue and its quotas, shared by the config file's
// `scheduler.queues`, the store (queues are kept as this JSON) and the API
// (PUT /api/v1/queues/{name} takes it, GET and PUT answer with it):
//
//   {"name": "nlp", "project": "nlp", "cohort": "lab", "weight": 2,
//    "quota": {"gpu": {"nominal": 8, "borrowing_limit": 4, "lending_limit": 8},
//              "gpu:A100": {"nominal": 8}, "cpu": {"nominal": 0.5},
//              "memory": {"nominal": "512Gi"}}}
//
// GPU and CPU amounts are numbers of units (fractions down to a thousandth),
// memory takes a unit ("16Gi") or is a number of bytes. Reading is strict:
// unknown fields are refused and every error names its field by its dotted
// path. Stateless and thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/status.h"
#include "core/queue.h"

namespace ty {

using Json = nlohmann::json;

// The rule for queue and cohort names, the same as for users and projects
// (store/identity.h): 1-64 characters of [a-z0-9._-], so that a name is safe
// unquoted in a URL path (/api/v1/queues/{name}), a log line or a shell.
bool validQueueName(const std::string& name);

// Reads one queue at `path` ("scheduler.queues[0]" in the config file, ""
// for an API body) into `queue`, replacing every field. A name already in
// `queue` stands when `j` gives none (the API takes it from the URL); the
// project defaults to the name. `what` names the document in messages
// ("config", "queue"). Runs validateQueue() on the result; InvalidArgument
// naming the field otherwise, and `queue` is then left unchanged.
Status readQueue(const Json& j, const std::string& path, QueueConfig& queue,
                 const char* what = "config");

// The checks every queue must pass, however it was made: valid names
// (queue, project, cohort), a weight above 0 and at most 1000, known
// resource names, amounts that are not negative, and a lending_limit no
// larger than nominal. InvalidArgument naming the field under `path`.
Status validateQueue(const QueueConfig& queue, const std::string& path = "");

// The queue in the form readQueue() reads: readQueue(queueToJson(q)) gives q
// back exactly. Limits that are unset are left out.
Json queueToJson(const QueueConfig& queue);

// "gpu nominal 8 borrowing 4 lending 8; memory nominal 512Gi" (or "no
// quota"): the quotas in one short line, for audit records and logs.
std::string describeQuotas(const QueueConfig& queue);

// The resource names a quota may be given for: "gpu", "gpu:<model>", "cpu",
// "memory".
bool knownQuotaResource(const std::string& resource);

}  // namespace ty
