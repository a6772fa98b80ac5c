#include "server/config.h"

#include <fstream>
#include <sstream>

#include "codec/job_codec.h"
#include "codec/object_reader.h"
#include "common/units.h"

namespace ty {

Status readConfig(const Json& j, ServerConfig& c) {
  ObjectReader r(j, "", "config");
  TY_RETURN_IF_ERROR(r.check());
  TY_RETURN_IF_ERROR(r.string("listen", c.listen));
  TY_RETURN_IF_ERROR(r.string("data_dir", c.data_dir));
  TY_RETURN_IF_ERROR(r.string("fake_gpus", c.fake_gpus));
  TY_RETURN_IF_ERROR(r.string("nvml_library", c.nvml_library));
  TY_RETURN_IF_ERROR(r.string("node_name", c.node_name));
  auto body = static_cast<std::int64_t>(c.max_body_bytes);
  TY_RETURN_IF_ERROR(r.memory("max_body_bytes", body));
  if (body < 1024) return Status::invalidArgument("must be at least 1Ki", "max_body_bytes");
  c.max_body_bytes = static_cast<std::size_t>(body);
  TY_RETURN_IF_ERROR(r.integer("worker_threads", c.worker_threads, 4, 1024));
  TY_RETURN_IF_ERROR(r.memory("log_max_bytes", c.log_max_bytes));
  if (c.log_max_bytes < 4096) return Status::invalidArgument("must be at least 4Ki", "log_max_bytes");
  TY_RETURN_IF_ERROR(r.integer("log_max_files", c.log_max_files, 1, 100));
  TY_RETURN_IF_ERROR(r.string("podman", c.podman));
  TY_RETURN_IF_ERROR(r.string("container_runtime", c.container_runtime));
  TY_RETURN_IF_ERROR(r.string("container_network", c.container_network));
  TY_RETURN_IF_ERROR(r.boolean("cgroups", c.cgroups));
  return r.finish();
}

Status loadConfigFile(const std::string& path, ServerConfig& c) {
  std::ifstream in(path);
  if (!in) return Status::invalidArgument("cannot read " + path, "--config");
  std::stringstream text;
  text << in.rdbuf();
  auto parsed = parseBody(text.str(), /*yaml=*/true);
  if (!parsed.isOk()) return parsed.status().withContext(path);
  Status st = readConfig(*parsed, c);
  if (!st.isOk()) return st.withContext(path);
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
