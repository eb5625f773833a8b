#include "slurm/job_files.h"

#include <map>
#include <regex>
#include <sstream>

namespace hpc::slurm {

namespace {

// The fields of one `scontrol show job -o` line. Values may hold spaces (paths, commands), so a
// value runs to the next " Key=": a key is a word of letters, digits and ':' or '_'.
std::map<std::string, std::string> ScontrolFields(const std::string& line) {
  static const std::regex kKey(R"((?:^| )([A-Za-z][A-Za-z0-9_:/]*)=)");
  std::map<std::string, std::string> fields;
  std::string key;
  size_t value_start = 0;
  for (auto it = std::sregex_iterator(line.begin(), line.end(), kKey); it != std::sregex_iterator(); ++it) {
    if (!key.empty()) fields[key] = line.substr(value_start, static_cast<size_t>(it->position(0)) - value_start);
    key = (*it)[1];
    value_start = static_cast<size_t>(it->position(0) + it->length(0));
  }
  if (!key.empty()) fields[key] = line.substr(value_start);
  return fields;
}

std::optional<int64_t> ParseInt(const std::string& s) {
  if (s.empty() || s.size() > 18 || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stoll(s);
}

}  // namespace

std::vector<std::string> ScontrolJobCommand(int64_t job_id) {
  return {"scontrol", "show", "job", "-o", std::to_string(job_id)};
}

std::vector<std::string> SacctJobFilesCommand(int64_t job_id) {
  return {"sacct",
          "-n",
          "-P",
          "-X",
          "-a",
          "--expand-patterns",
          "-j",
          std::to_string(job_id),
          "--format=JobIDRaw,Submit,User,State,NodeList,StdOut,StdErr"};
}

std::optional<JobFiles> ParseScontrolJob(const std::string& text, int64_t job_id) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto f = ScontrolFields(line);
    if (f["JobId"] != std::to_string(job_id)) continue;
    JobFiles out;
    out.user = f["UserId"].substr(0, f["UserId"].find('('));
    out.submit_time = ParseInt(f["SubmitTime"]).value_or(0);
    out.state = f["JobState"];
    out.stdout_path = f["StdOut"];
    out.stderr_path = f["StdErr"];
    out.node = f["BatchHost"];
    return out;
  }
  return std::nullopt;
}

std::optional<JobFiles> ParseSacctJob(const std::string& text, int64_t job_id, int64_t submit_time) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    // JobIDRaw|Submit|User|State|NodeList|StdOut|StdErr: the paths last, split at the last '|'.
    std::vector<std::string> head;
    size_t start = 0;
    for (int i = 0; i < 5; ++i) {
      size_t bar = line.find('|', start);
      if (bar == std::string::npos) break;
      head.push_back(line.substr(start, bar - start));
      start = bar + 1;
    }
    const size_t last = line.rfind('|');
    if (head.size() < 5 || last < start) continue;
    if (ParseInt(head[0]) != job_id || ParseInt(head[1]) != submit_time) continue;
    JobFiles f;
    f.submit_time = submit_time;
    f.user = head[2];
    f.state = head[3].substr(0, head[3].find(' '));  // "CANCELLED by 1001"
    f.node = head[4] == "None assigned" ? "" : FirstHost(head[4]);
    f.stdout_path = line.substr(start, last - start);
    f.stderr_path = line.substr(last + 1);
    return f;
  }
  return std::nullopt;
}

std::string FirstHost(const std::string& hostlist) {
  std::string first = hostlist.substr(0, hostlist.find(','));
  const size_t open = hostlist.find('[');
  if (open == std::string::npos || open > hostlist.find(',')) return first;
  const size_t end = hostlist.find_first_of("-,]", open + 1);
  return hostlist.substr(0, open) + hostlist.substr(open + 1, end - open - 1);
}

}  // namespace hpc::slurm
