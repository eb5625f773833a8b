#include "server/openapi.h"

#include <cctype>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "openapi_base.h"  // generated from openapi_base.json
#include "server/route_table.h"

namespace hpc::cp {
using nlohmann::json;

namespace {

constexpr const char* kMethods[] = {"get", "put", "post", "delete", "patch"};

// A path value's schema from its route's group: whole numbers as integers, anything else a
// string matched whole by the group.
json ValueSchema(const std::string& group) {
  if (group == "([0-9]+)" || group == R"((\d+))") return {{"type", "integer"}, {"minimum", 0}};
  return {{"type", "string"}, {"pattern", "^" + group + "$"}};
}

// "get" + "/projects/{project}/jobs/stats" -> "getProjectsProjectJobsStats".
std::string OperationId(const std::string& method, const std::string& path) {
  std::string id = method;
  bool upper = true;
  for (char c : path) {
    if (!std::isalnum(static_cast<unsigned char>(c))) {
      upper = true;
      continue;
    }
    id += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return id;
}

json ErrorResponse(const std::string& description) {
  return {{"description", description},
          {"content", {{"application/json", {{"schema", {{"$ref", "#/components/schemas/Error"}}}}}}}};
}

const RouteTable::Route* RouteFor(const std::vector<RouteTable::Route>& routes, const std::string& served_path,
                                  const std::string& method) {
  static const std::regex kParam(R"(\{[A-Za-z]+\})");
  const std::string tmpl = std::regex_replace(served_path, kParam, "{}");
  for (const auto& r : routes) {
    std::string m = r.method;
    for (auto& c : m) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (r.tmpl == tmpl && m == method) return &r;
  }
  return nullptr;
}

std::vector<std::string> ParamNames(const std::string& path) {
  static const std::regex kParam(R"(\{([A-Za-z]+)\})");
  std::vector<std::string> names;
  for (auto it = std::sregex_iterator(path.begin(), path.end(), kParam); it != std::sregex_iterator(); ++it) {
    names.push_back((*it)[1]);
  }
  return names;
}

// The path item's parameters: each path value declared once, with its route's pattern.
void DeclarePathValues(const std::string& path, const RouteTable::Route* route, json& item) {
  const auto names = ParamNames(path);
  if (names.empty()) return;
  const auto groups = route ? route->groups : std::vector<std::string>{};
  std::set<std::string> declared;
  for (const auto& p : item.value("parameters", json::array())) declared.insert(p.value("name", ""));
  json& parameters = item["parameters"];
  if (!parameters.is_array()) parameters = json::array();
  for (size_t i = 0; i < names.size(); ++i) {
    if (declared.count(names[i])) continue;
    parameters.push_back({{"name", names[i]},
                          {"in", "path"},
                          {"required", true},
                          {"schema", i < groups.size() ? ValueSchema(groups[i]) : json{{"type", "string"}}}});
  }
}

// The answers the route table and the authentication in front of every route imply.
void CompleteOperation(const std::string& method, const std::string& path, bool has_path_values, json& op) {
  if (!op.contains("operationId")) op["operationId"] = OperationId(method, path);
  // The console's session needs its CSRF header on anything but a read.
  if (!op.contains("security") && method != "get") {
    op["security"] = json::array({{{"bearer", json::array()}}, {{"session", json::array()}, {"csrf", json::array()}}});
  }
  const bool authenticated = !op.contains("security") || !op["security"].empty();
  json& responses = op["responses"];
  const std::string summary = op.value("summary", "");
  auto add = [&](const char* code, const std::string& description) {
    if (!responses.contains(code)) responses[code] = {{"description", description}};
  };
  if (authenticated) {
    add("401", "no valid credentials (a bearer token, or the console's session)");
    add("429", "too many failed sign-ins from this address: Retry-After says when to try again");
  }
  if (summary.rfind("Agent:", 0) == 0) add("403", "not this data plane's agent (an admin's token included)");
  if (summary.rfind("Admin:", 0) == 0) add("403", "not an admin");
  if (has_path_values) add("404", "no such path: a value does not match its pattern, or names nothing here");
  if (op.contains("requestBody") || (op.contains("parameters") && !op["parameters"].empty())) {
    add("400", "malformed: the message names the field");
  }
  for (auto it = responses.begin(); it != responses.end(); ++it) {
    if (std::atoi(it.key().c_str()) >= 400 && !it.value().contains("content")) {
      it.value() = ErrorResponse(it.value().value("description", ""));
    }
  }
}

}  // namespace

json OpenApiBase() { return json::parse(kOpenApiBase); }

json OpenApiDocument(const RouteTable& routes) {
  json doc = OpenApiBase();
  const auto all = routes.All();
  for (auto it = doc["paths"].begin(); it != doc["paths"].end(); ++it) {
    json& item = it.value();
    // Paths beside /api/v1 (its servers say "/") are served as written.
    const bool beside = item.contains("servers");
    const std::string served = beside ? it.key() : "/api/v1" + it.key();
    const RouteTable::Route* route = nullptr;
    for (const char* m : kMethods) {
      if (item.contains(m) && !route) route = RouteFor(all, served, m);
    }
    DeclarePathValues(it.key(), route, item);
    const bool has_path_values = !ParamNames(it.key()).empty();
    for (const char* m : kMethods) {
      if (item.contains(m)) CompleteOperation(m, it.key(), has_path_values, item[m]);
    }
  }
  return doc;
}

}  // namespace hpc::cp
