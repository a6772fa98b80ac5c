// JSON (and YAML) forms of the model, shared by the store, the API and the
// CLI. Parsing is strict: unknown fields are rejected and named, wrong
// types name the field and the expected form. nlohmann::json exceptions
// never escape this layer.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/status.h"
#include "core/job.h"
#include "core/node.h"

namespace ty {

using Json = nlohmann::json;

// Spec <-> JSON. Durations and memory are written as text ("2h", "16Gi").
Json specToJson(const JobSpec& spec);
Result<JobSpec> specFromJson(const Json& j);

// Ok when `url` can be a webhook target: http:// or https://, a host, no
// user info, no whitespace or control characters, at most 2048 characters.
// InvalidArgument naming `field` ("notify.webhook", "webhook_url") otherwise.
Status checkWebhookUrl(const std::string& url, const std::string& field);

// Parses a request body: JSON, or YAML when `yaml` is set. Errors are
// InvalidArgument with the line/field when known.
Result<Json> parseBody(const std::string& body, bool yaml);
// JSON -> YAML text (for `-o yaml`).
std::string jsonToYaml(const Json& j);

Json jobToJson(const Job& job);
Result<Job> jobFromJson(const Json& j);
Json attemptToJson(const Attempt& a);
Result<Attempt> attemptFromJson(const Json& j);
Json eventToJson(const Event& e);
Result<Event> eventFromJson(const Json& j);
Json placementToJson(const std::vector<ReplicaPlacement>& p);
Result<std::vector<ReplicaPlacement>> placementFromJson(const Json& j);
Json gpuToJson(const GpuInfo& g);

// The one error shape of the API: {"error":{"code","message","field"}}.
Json errorToJson(const Status& s);

}  // namespace ty
