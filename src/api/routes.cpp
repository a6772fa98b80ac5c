#include "api/routes.h"

#include <set>
#include <utility>

namespace ty {

Status Caller::allow(auth::Permission permission, const auth::Target& target,
                     std::string_view what) {
  checked = true;
  return auth::decisionStatus(auth::authorize(principal, permission, target), permission, what);
}

Status validateRoutes(const std::vector<Route>& routes) {
  std::set<std::pair<std::string, std::string>> seen;
  for (const Route& r : routes) {
    std::string name = r.doc.method + " " + r.doc.path;
    if (r.access.kind == Access::Kind::kUndeclared) {
      return Status::invalidArgument(
          "route " + name +
              " declares no access: give it Access::publicRoute(), fixed() or "
              "resource() with the permission it needs",
          "routes");
    }
    if (!r.handler) return Status::invalidArgument("route " + name + " has no handler", "routes");
    if (!seen.emplace(r.doc.method, r.doc.path).second) {
      return Status::invalidArgument("route " + name + " is declared twice", "routes");
    }
  }
  return Status::ok();
}

std::string routeRegex(const std::string& path) {
  std::string out;
  for (size_t i = 0; i < path.size(); ++i) {
    size_t close = path[i] == '{' ? path.find('}', i) : std::string::npos;
    if (close == std::string::npos) {
      out += path[i];
    } else {
      // Names never contain '/', so a parameter cannot swallow a segment;
      // the handlers check the full name rules.
      std::string_view param(path.data() + i, close - i + 1);
      if (param == "{id}") {
        out += R"((\d+))";
      } else if (param == "{file}") {
        // No leading dot: neither "." nor ".." nor a hidden file can match.
        out += R"(([A-Za-z0-9_-][A-Za-z0-9._-]*))";
      } else {
        out += R"(([a-z0-9._-]+))";
      }
      i = close;
    }
  }
  return out;
}

}  // namespace ty
