#include "server/config.h"

#include <fstream>
#include <sstream>

#include "codec/job_codec.h"
#include "common/units.h"

namespace ty {

Status loadConfigFile(const std::string& path, ServerConfig& c) {
  std::ifstream in(path);
  if (!in) return Status::invalidArgument("cannot read " + path, "--config");
  std::stringstream text;
  text << in.rdbuf();
  auto parsed = parseBody(text.str(), /*yaml=*/true);
  if (!parsed.isOk()) return parsed.status().withContext(path);
  const Json& j = *parsed;
  if (!j.is_object()) return Status::invalidArgument(path + ": must be a map of settings");
  auto bad = [&](const std::string& key, const std::string& why) {
    return Status::invalidArgument(path + ": " + key + ": " + why, key);
  };
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const Json& v = *it;
    auto str = [&](std::string& out) -> Status {
      if (!v.is_string()) return bad(k, "must be a string");
      out = v.get<std::string>();
      return Status::ok();
    };
    auto integer = [&](auto& out, long long lo, long long hi) -> Status {
      if (!v.is_number_integer() || v.get<long long>() < lo || v.get<long long>() > hi) {
        return bad(k, "must be a whole number between " + std::to_string(lo) + " and " +
                          std::to_string(hi));
      }
      out = static_cast<std::remove_reference_t<decltype(out)>>(v.get<long long>());
      return Status::ok();
    };
    auto memory = [&](auto& out) -> Status {
      std::optional<std::int64_t> b;
      if (v.is_number_integer()) b = v.get<std::int64_t>();
      if (v.is_string()) b = parseMemory(v.get<std::string>());
      if (!b || *b <= 0) return bad(k, "must be an amount such as \"64Mi\"");
      out = static_cast<std::remove_reference_t<decltype(out)>>(*b);
      return Status::ok();
    };
    Status st;
    if (k == "listen")
      st = str(c.listen);
    else if (k == "data_dir")
      st = str(c.data_dir);
    else if (k == "fake_gpus")
      st = str(c.fake_gpus);
    else if (k == "nvml_library")
      st = str(c.nvml_library);
    else if (k == "node_name")
      st = str(c.node_name);
    else if (k == "max_body_bytes")
      st = memory(c.max_body_bytes);
    else if (k == "worker_threads")
      st = integer(c.worker_threads, 4, 1024);
    else if (k == "log_max_bytes")
      st = memory(c.log_max_bytes);
    else if (k == "log_max_files")
      st = integer(c.log_max_files, 1, 100);
    else if (k == "podman")
      st = str(c.podman);
    else if (k == "container_runtime")
      st = str(c.container_runtime);
    else if (k == "container_network")
      st = str(c.container_network);
    else if (k == "cgroups") {
      if (!v.is_boolean())
        st = bad(k, "must be true or false");
      else
        c.cgroups = v.get<bool>();
    } else {
      st = bad(k, "unknown setting; see docs/configuration.md");
    }
    TY_RETURN_IF_ERROR(st);
  }
  return Status::ok();
}

Status parseListen(const std::string& listen, std::string& host, int& port) {
  auto colon = listen.rfind(':');
  auto fail = [&] {
    return Status::invalidArgument(
        "must be HOST:PORT such as 127.0.0.1:8080 (got \"" + listen + "\")", "--listen");
  };
  if (colon == std::string::npos || colon == 0) return fail();
  host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  std::string p = listen.substr(colon + 1);
  if (p.empty() || p.size() > 5) return fail();
  for (char ch : p) {
    if (!std::isdigit(static_cast<unsigned char>(ch))) return fail();
  }
  port = std::stoi(p);
  if (port > 65535) return fail();
  return Status::ok();
}

}  // namespace ty
