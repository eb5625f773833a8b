#include "runtime/local/cpu_sets.h"

#include <algorithm>
#include <charconv>
#include <set>
#include <tuple>

#include <fmt/format.h>

namespace hpc::runtime::local {
namespace {

Result<int> CpuNumber(std::string_view text, const std::string& whole) {
  int n = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || n < 0 || n > 65535) {
    return Status::Errorf("cpu list \"{}\": \"{}\" is not a CPU number", whole, text);
  }
  return n;
}

}  // namespace

Result<std::vector<int>> ParseCpuList(const std::string& text) {
  std::string trimmed = text;
  while (!trimmed.empty() && (trimmed.back() == '\n' || trimmed.back() == ' ')) trimmed.pop_back();
  std::set<int> cpus;
  size_t start = 0;
  while (start < trimmed.size()) {
    size_t comma = trimmed.find(',', start);
    if (comma == std::string::npos) comma = trimmed.size();
    const std::string_view item(trimmed.data() + start, comma - start);
    const size_t dash = item.find('-');
    ASSIGN_OR_RETURN(int first, CpuNumber(item.substr(0, dash), trimmed));
    int last = first;
    if (dash != std::string_view::npos) {
      ASSIGN_OR_RETURN(last, CpuNumber(item.substr(dash + 1), trimmed));
    }
    if (last < first) return Status::Errorf("cpu list \"{}\": range \"{}\" runs backwards", trimmed, item);
    for (int c = first; c <= last; ++c) cpus.insert(c);
    start = comma + 1;
  }
  return std::vector<int>(cpus.begin(), cpus.end());
}

std::string FormatCpuList(std::vector<int> cpus) {
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += j == i ? std::to_string(cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]);
    i = j + 1;
  }
  return out;
}

std::vector<int> LeastLoadedCpus(const std::vector<int>& available, const CpuLoad& load, int count) {
  if (count <= 0 || static_cast<size_t>(count) >= available.size()) return available;
  auto on = [](const std::map<int, int>& pods, int cpu) {
    auto it = pods.find(cpu);
    return it == pods.end() ? 0 : it->second;
  };
  std::vector<int> order = available;
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return std::tuple(on(load.siblings, a), on(load.all, a), a) < std::tuple(on(load.siblings, b), on(load.all, b), b);
  });
  order.resize(static_cast<size_t>(count));
  std::sort(order.begin(), order.end());
  return order;
}

}  // namespace hpc::runtime::local
