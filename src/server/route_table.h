// The server's routes, registered with cpp-httplib and remembered, so that a request for a
// known path with another method is answered 405 with the methods it has (Allow), not 404.
#pragma once

#include <httplib.h>

#include <algorithm>
#include <functional>
#include <regex>
#include <string>
#include <utility>
#include <vector>

namespace hpc::cp {

class RouteTable {
 public:
  // `on_handler`: told when a handler starts, the request (body included) having been read.
  explicit RouteTable(httplib::Server& s, std::function<void(const httplib::Request&)> on_handler = nullptr)
      : s_(s), on_handler_(std::move(on_handler)) {}
  void Get(const std::string& pattern, httplib::Server::Handler h) {
    s_.Get(pattern, Wrap("GET", pattern, std::move(h)));
  }
  void Post(const std::string& pattern, httplib::Server::Handler h) {
    s_.Post(pattern, Wrap("POST", pattern, std::move(h)));
  }
  void Put(const std::string& pattern, httplib::Server::Handler h) {
    s_.Put(pattern, Wrap("PUT", pattern, std::move(h)));
  }
  void Delete(const std::string& pattern, httplib::Server::Handler h) {
    s_.Delete(pattern, Wrap("DELETE", pattern, std::move(h)));
  }
  void Patch(const std::string& pattern, httplib::Server::Handler h) {
    s_.Patch(pattern, Wrap("PATCH", pattern, std::move(h)));
  }

  // The template of the route whose handler ran for the request this thread answered last (its
  // pattern's groups shown as {}), for metrics; "unmatched" when no handler ran, so labels stay
  // bounded whatever clients ask for. Taking it resets it for the thread's next request.
  static std::string TakeTemplate() {
    std::string t = CurrentTemplate().empty() ? "unmatched" : CurrentTemplate();
    CurrentTemplate().clear();
    return t;
  }

  // Every route as (method, template), in the order registered: what the API serves, for the
  // check that the OpenAPI document describes each.
  std::vector<std::pair<std::string, std::string>> Routes() const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& [re, r] : routes_) out.emplace_back(r.method, r.tmpl);
    return out;
  }

  struct Route {
    std::string method;
    std::string tmpl;     // its pattern's groups shown as {}
    std::string pattern;  // the regular expression a request's path must match whole
    // What each {} of the template matches: its pattern's top-level groups as written, an
    // optional one with its '?'.
    std::vector<std::string> groups;
  };
  // Every route, in the order registered (OpenApiDocument completes the document from them).
  std::vector<Route> All() const {
    std::vector<Route> out;
    for (const auto& [re, r] : routes_) out.push_back(r);
    return out;
  }

  // The methods `path` is served with, comma separated ("" when no route has it).
  std::string Allow(const std::string& path) const {
    std::vector<std::string> methods;
    for (const auto& [re, r] : routes_) {
      if (std::regex_match(path, re) && std::find(methods.begin(), methods.end(), r.method) == methods.end()) {
        methods.push_back(r.method);
      }
    }
    std::string out;
    for (const auto& m : methods) out += (out.empty() ? "" : ", ") + m;
    return out;
  }

 private:
  static std::string& CurrentTemplate() {
    thread_local std::string current;
    return current;
  }
  httplib::Server::Handler Wrap(const std::string& method, const std::string& pattern, httplib::Server::Handler h) {
    Add(method, pattern);
    return [hook = on_handler_, tmpl = routes_.back().second.tmpl, h = std::move(h)](const httplib::Request& req,
                                                                                     httplib::Response& res) {
      CurrentTemplate() = tmpl;
      if (hook) hook(req);
      h(req, res);
    };
  }
  void Add(const std::string& method, const std::string& pattern) {
    Route r{method, "", pattern, {}};
    int depth = 0;
    size_t start = 0;
    for (size_t i = 0; i < pattern.size(); ++i) {
      const char c = pattern[i];
      if (c == '\\' && i + 1 < pattern.size()) {  // an escaped character is itself, never a group
        if (depth == 0) r.tmpl += pattern.substr(i, 2);
        ++i;
        continue;
      }
      if (c == '(' && depth++ == 0) {
        r.tmpl += "{}";
        start = i;
      }
      if (depth == 0 && !(c == '?' && i > 0 && pattern[i - 1] == ')')) r.tmpl += c;  // an optional group is a {} too
      if (c == ')' && --depth == 0) {
        const bool optional = i + 1 < pattern.size() && pattern[i + 1] == '?';
        r.groups.push_back(pattern.substr(start, i - start + 1 + (optional ? 1 : 0)));
      }
    }
    routes_.emplace_back(std::regex(pattern), std::move(r));
  }
  httplib::Server& s_;
  std::function<void(const httplib::Request&)> on_handler_;
  std::vector<std::pair<std::regex, Route>> routes_;
};

}  // namespace hpc::cp
