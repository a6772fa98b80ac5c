// ObjectReader: a strict reader over one JSON (or YAML-as-JSON) object,
// shared by job specs and the server config. Every field read is marked;
// finish() names the first field nobody asked for. Errors are
// InvalidArgument naming the field by its dotted path ("resources.gpus")
// and the form expected. Not thread-safe; borrows the JSON it reads.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "common/quantity.h"
#include "common/status.h"
#include "common/time.h"

namespace ty {

using Json = nlohmann::json;

class ObjectReader {
 public:
  // `prefix` is the path of this object ("" for the top level), `what`
  // names the top-level object in errors ("spec", "config").
  ObjectReader(const Json& j, std::string prefix, std::string what = "spec");

  Status check() const;  // InvalidArgument unless the value is an object
  std::string path(const std::string& key) const;
  // The value of `key`, or null when absent or null; marks it as read.
  const Json* get(const std::string& key);

  // Each reader leaves `out` unchanged when the key is absent.
  Status string(const std::string& key, std::string& out);
  Status boolean(const std::string& key, bool& out);
  Status integer(const std::string& key, int& out, long long lo, long long hi);
  Status duration(const std::string& key, DurationMs& out);  // "90s", "2h"; bare numbers: seconds
  Status quantity(const std::string& key, Quantity& out, const char* example);
  Status memory(const std::string& key, std::int64_t& out);                  // "16Gi" or bytes
  Status stringList(const std::string& key, std::vector<std::string>& out);  // "a" or ["a", "b"]
  Status stringMap(const std::string& key, std::map<std::string, std::string>& out);
  // InvalidArgument naming the first key that was never read.
  Status finish() const;

 private:
  const Json& j_;
  std::string prefix_;
  std::string what_;
  std::set<std::string> seen_;
};

}  // namespace ty
