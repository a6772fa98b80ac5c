#include "codec/object_reader.h"

#include <cstdio>

#include "common/units.h"

namespace ty {

ObjectReader::ObjectReader(const Json& j, std::string prefix, std::string what)
    : j_(j), prefix_(std::move(prefix)), what_(std::move(what)) {}

Status ObjectReader::check() const {
  if (!j_.is_object()) {
    return Status::invalidArgument("must be an object", prefix_.empty() ? what_ : prefix_);
  }
  return Status::ok();
}

std::string ObjectReader::path(const std::string& key) const {
  return prefix_.empty() ? key : prefix_ + "." + key;
}

const Json* ObjectReader::get(const std::string& key) {
  seen_.insert(key);
  auto it = j_.find(key);
  if (it == j_.end() || it->is_null()) return nullptr;
  return &*it;
}

Status ObjectReader::string(const std::string& key, std::string& out) {
  const Json* v = get(key);
  if (!v) return Status::ok();
  if (!v->is_string()) return Status::invalidArgument("must be a string", path(key));
  out = v->get<std::string>();
  return Status::ok();
}

Status ObjectReader::boolean(const std::string& key, bool& out) {
  const Json* v = get(key);
  if (!v) return Status::ok();
  if (!v->is_boolean()) return Status::invalidArgument("must be true or false", path(key));
  out = v->get<bool>();
  return Status::ok();
}

Status ObjectReader::integer(const std::string& key, int& out, long long lo, long long hi) {
  const Json* v = get(key);
  if (!v) return Status::ok();
  if (!v->is_number_integer()) return Status::invalidArgument("must be a whole number", path(key));
  long long n = v->get<long long>();
  if (n < lo || n > hi) {
    return Status::invalidArgument(
        "must be between " + std::to_string(lo) + " and " + std::to_string(hi), path(key));
  }
  out = static_cast<int>(n);
  return Status::ok();
}

Status ObjectReader::duration(const std::string& key, DurationMs& out) {
  const Json* v = get(key);
  if (!v) return Status::ok();
  // Bare numbers are seconds; at most about 100 years.
  if (v->is_number_integer() && v->get<long long>() >= 0 &&
      v->get<long long>() <= 3'153'600'000LL) {
    out = v->get<long long>() * 1000;
    return Status::ok();
  }
  DurationMs d = v->is_string() ? parseDuration(v->get<std::string>()) : -1;
  if (d < 0) {
    return Status::invalidArgument("must be a duration such as \"90s\", \"30m\" or \"2h\"",
                                   path(key));
  }
  out = d;
  return Status::ok();
}

Status ObjectReader::quantity(const std::string& key, Quantity& out, const char* example) {
  const Json* v = get(key);
  if (!v) return Status::ok();
  std::optional<Quantity> q;
  if (v->is_number_integer() && v->get<long long>() >= 0 && v->get<long long>() < (1LL << 40)) {
    q = Quantity::whole(v->get<long long>());
  } else if (v->is_number_float() && v->get<double>() >= 0) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", v->get<double>());
    q = parseQuantity(buf);
  } else if (v->is_string()) {
    q = parseQuantity(v->get<std::string>());
  }
  if (!q) {
    return Status::invalidArgument(
        std::string("must be a non-negative number such as ") + example + " (at most 3 decimals)",
        path(key));
  }
  out = *q;
  return Status::ok();
}

Status ObjectReader::memory(const std::string& key, std::int64_t& out) {
  const Json* v = get(key);
  if (!v) return Status::ok();
  std::optional<std::int64_t> bytes;
  if (v->is_number_integer() && v->get<long long>() >= 0) bytes = v->get<long long>();
  if (v->is_string()) bytes = parseMemory(v->get<std::string>());
  if (!bytes) {
    return Status::invalidArgument(
        "must be an amount of memory such as \"16Gi\", \"512Mi\" or a number of bytes", path(key));
  }
  out = *bytes;
  return Status::ok();
}

Status ObjectReader::stringList(const std::string& key, std::vector<std::string>& out) {
  const Json* v = get(key);
  if (!v) return Status::ok();
  if (v->is_string()) {
    out = {v->get<std::string>()};
    return Status::ok();
  }
  if (!v->is_array()) return Status::invalidArgument("must be a list of strings", path(key));
  out.clear();
  for (size_t i = 0; i < v->size(); ++i) {
    if (!(*v)[i].is_string()) {
      return Status::invalidArgument("must be a string", path(key) + "[" + std::to_string(i) + "]");
    }
    out.push_back((*v)[i].get<std::string>());
  }
  return Status::ok();
}

Status ObjectReader::stringMap(const std::string& key, std::map<std::string, std::string>& out) {
  const Json* v = get(key);
  if (!v) return Status::ok();
  if (!v->is_object()) return Status::invalidArgument("must be a map of name: value", path(key));
  out.clear();
  for (auto it = v->begin(); it != v->end(); ++it) {
    if (it->is_string()) {
      out[it.key()] = it->get<std::string>();
    } else if (it->is_number() || it->is_boolean()) {
      out[it.key()] = it->dump();
    } else {
      return Status::invalidArgument("must be a string", path(key) + "." + it.key());
    }
  }
  return Status::ok();
}

Status ObjectReader::finish() const {
  for (auto it = j_.begin(); it != j_.end(); ++it) {
    if (!seen_.count(it.key())) {
      return Status::invalidArgument("unknown field; remove it or check its spelling",
                                     path(it.key()));
    }
  }
  return Status::ok();
}

}  // namespace ty
