#include "runtime/local/hosts_file.h"

#include <set>

namespace hpc::runtime::local {
namespace {

bool IsBlank(const std::string& line) {
  return !line.empty() && line[0] == '#' && line.find_first_not_of(' ', 1) == std::string::npos;
}

std::string WithoutTrailingSpaces(const std::string& line) {
  auto end = line.find_last_not_of(' ');
  return end == std::string::npos ? "" : line.substr(0, end + 1);
}

}  // namespace

std::string NextHostsContent(const std::string& current, const std::vector<std::string>& lines) {
  // The file's lines without their newlines; a last line without one is not ours: dropped.
  std::vector<std::string> slots;
  size_t start = 0;
  for (size_t nl; (nl = current.find('\n', start)) != std::string::npos; start = nl + 1) {
    slots.push_back(current.substr(start, nl - start));
  }
  std::set<std::string> wanted(lines.begin(), lines.end());
  std::set<std::string> placed;
  for (auto& slot : slots) {
    const std::string text = WithoutTrailingSpaces(slot);
    if (wanted.count(text) && !placed.count(text)) {
      placed.insert(text);
    } else if (!IsBlank(slot) && !slot.empty()) {
      slot = "#" + std::string(slot.size() - 1, ' ');
    }
  }
  for (const auto& line : lines) {
    if (placed.count(line)) continue;
    placed.insert(line);
    bool reused = false;
    for (auto& slot : slots) {
      if (IsBlank(slot) && slot.size() >= line.size()) {
        slot = line + std::string(slot.size() - line.size(), ' ');
        reused = true;
        break;
      }
    }
    if (!reused) slots.push_back(line);
  }
  std::string out;
  for (const auto& slot : slots) out += slot + "\n";
  return out;
}

}  // namespace hpc::runtime::local
