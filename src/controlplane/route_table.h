// The server's routes, registered with cpp-httplib and remembered, so that a request for a
// known path with another method is answered 405 with the methods it has (Allow), not 404.
#pragma once

#include <httplib.h>

#include <regex>
#include <string>
#include <utility>
#include <vector>

namespace hpc::cp {

class RouteTable {
 public:
  explicit RouteTable(httplib::Server& s) : s_(s) {}
  void Get(const std::string& pattern, httplib::Server::Handler h) { Add("GET", pattern), s_.Get(pattern, std::move(h)); }
  void Post(const std::string& pattern, httplib::Server::Handler h) { Add("POST", pattern), s_.Post(pattern, std::move(h)); }
  void Put(const std::string& pattern, httplib::Server::Handler h) { Add("PUT", pattern), s_.Put(pattern, std::move(h)); }
  void Delete(const std::string& pattern, httplib::Server::Handler h) {
    Add("DELETE", pattern), s_.Delete(pattern, std::move(h));
  }

  // The methods `path` is served with, comma separated ("" when no route has it).
  std::string Allow(const std::string& path) const {
    std::vector<std::string> methods;
    for (const auto& [re, method] : routes_) {
      if (std::regex_match(path, re) && std::find(methods.begin(), methods.end(), method) == methods.end()) {
        methods.push_back(method);
      }
    }
    std::string out;
    for (const auto& m : methods) out += (out.empty() ? "" : ", ") + m;
    return out;
  }

 private:
  void Add(const std::string& method, const std::string& pattern) { routes_.emplace_back(std::regex(pattern), method); }
  httplib::Server& s_;
  std::vector<std::pair<std::regex, std::string>> routes_;
};

}  // namespace hpc::cp
