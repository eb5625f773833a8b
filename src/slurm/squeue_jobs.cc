#include "slurm/squeue_jobs.h"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <optional>

#include <fmt/format.h>

#include "slurm/rest_client.h"
#include "slurm/sizes.h"

namespace hpc::slurm {

namespace {

// What squeue says on stderr of a --Format field it does not know.
constexpr const char* kUnknownField = "Invalid job format specification: ";

// Fields are separated by the ASCII unit separator, which no value Slurm prints contains (names,
// reasons, dependencies, node lists and TRES strings are printable text).
constexpr char kSeparator = '\x1f';

// squeue's --Format fields, in the order the parser reads them. A width of 0 prints the whole
// value, unpadded and uncut.
enum Field : size_t {
  kJobId,
  kUser,
  kState,
  kReason,
  kPartition,
  kNodes,
  kSubmitTime,
  kStartTime,
  kNodeCount,
  kCpus,
  kMinCpusPerNode,
  kMinMemory,    // per node or per CPU: squeue does not say which (see MemoryRequest)
  kTres,         // the request ("cpu=2,mem=200M,node=1,billing=2") while pending, the allocation after
  kTresPerNode,  // "gres/gpu:2"
  kOverSubscribe,
  kExclusive,   // 26.05 has it, 24.11 not (unknown there: printed empty)
  kArrayTasks,  // a pending array's tasks ("1-5%2"), a task's own index, or N/A
  kDependency,
  kPriority,
  kRestarts,
  kFieldCount,
};

constexpr const char* kFieldNames[] = {"JobID",     "UserName",    "State",      "Reason",        "Partition",
                                       "NodeList",  "SubmitTime",  "StartTime",  "NumNodes",      "NumCPUs",
                                       "MinCpus",   "MinMemory",   "tres-alloc", "tres-per-node", "OverSubscribe",
                                       "Exclusive", "ArrayTaskID", "Dependency", "PriorityLong",  "RestartCnt"};
static_assert(std::size(kFieldNames) == kFieldCount, "a name for each field, in order");

// Whether the job asked for whole nodes. Where squeue prints Exclusive (26.05) an exclusive job
// shows NODE, USER, MCS or TOPO there, and OverSubscribe is NO for every job; where it does not
// (24.11, 22.05: the field is empty, and squeue says on stderr that it does not know it),
// OverSubscribe NO is how an exclusive job shows (OK otherwise).
bool Exclusive(std::string_view exclusive, std::string_view oversubscribe) {
  if (exclusive.empty()) return oversubscribe == "NO";
  return exclusive == "NODE" || exclusive == "USER" || exclusive == "MCS" || exclusive == "TOPO";
}

// squeue prints a job's description in place of its reason when Slurm wrote one
// ("ReqNodeNotAvail, UnavailableNodes:cpu-[0-1]"): the reason is what comes before its ", ".
// (Reasons themselves hold no ", ": the longest, Nodes_required_for_job_are_DOWN,_DRAINED_...,
// joins with ",_".)
std::string_view ReasonOf(std::string_view printed) { return printed.substr(0, printed.find(", ")); }

// squeue prints a flag in place of a job's base state: COMPLETING, CONFIGURING, REQUEUED...
// CONFIGURING is a running job whose nodes still boot, as slurmrestd says it (slurm_client.h).
void SetState(SlurmJob& job, std::string_view printed) {
  job.configuring = printed == "CONFIGURING";
  job.state = job.configuring ? "RUNNING" : std::string(printed);
}

std::vector<std::string_view> Split(std::string_view line) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t sep; (sep = line.find(kSeparator, start)) != std::string_view::npos; start = sep + 1) {
    out.push_back(line.substr(start, sep - start));
  }
  out.push_back(line.substr(start));
  return out;
}

// Slurm's placeholders for "none": N/A, (null), an empty field.
bool Unset(std::string_view v) { return v.empty() || v == "N/A" || v == "(null)"; }

std::optional<int64_t> Number(std::string_view v) {
  int64_t n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size()) return std::nullopt;
  return n;
}

// A field that holds a count or a time: unset fields are 0; anything else unreadable is an error.
Result<int64_t> Count(std::string_view v, Field f, int line) {
  if (Unset(v) || v == "Unknown") return 0;
  auto n = Number(v);
  if (!n) return Status::Errorf("squeue line {}: {} is not a number: {:.40}", line, kFieldNames[f], v);
  return *n;
}

// The value a TRES string ("cpu=2,mem=200M,node=1,billing=2") gives `key`; empty when none.
std::string_view TresValue(std::string_view tres, std::string_view key) {
  for (size_t start = 0; start <= tres.size();) {
    size_t comma = tres.find(',', start);
    if (comma == std::string_view::npos) comma = tres.size();
    std::string_view item = tres.substr(start, comma - start);
    if (item.size() > key.size() && item.substr(0, key.size()) == key && item[key.size()] == '=') {
      return item.substr(key.size() + 1);
    }
    start = comma + 1;
  }
  return {};
}

// squeue prints a job's memory request without saying whether it is per node or per CPU; Slurm's
// request TRES holds the total, which is the per-CPU value times the CPUs, or the per-node value
// times the nodes. Where both products agree (as many CPUs as nodes) the two readings ask the
// same of every node.
void MemoryRequest(SlurmJob& job, int64_t min_memory_mib, std::string_view tres) {
  const int64_t total = ParseSlurmSizeKiB(std::string(TresValue(tres, "mem"))) / 1024;
  const int64_t nodes = std::max<int64_t>(1, Number(TresValue(tres, "node")).value_or(0));
  if (min_memory_mib > 0 && total == min_memory_mib * job.cpus && job.cpus != nodes) {
    job.memory_per_cpu = min_memory_mib;
  } else {
    job.memory_per_node = min_memory_mib;
  }
}

// "1-5%2" -> 2; 0 without a limit.
int ArrayLimit(std::string_view tasks) {
  auto pct = tasks.find('%');
  if (pct == std::string_view::npos) return 0;
  return static_cast<int>(Number(tasks.substr(pct + 1)).value_or(0));
}

Result<SlurmJob> ParseLine(std::string_view line, int n) {
  auto f = Split(line);
  // squeue ends every field with the separator, the last one included.
  if (f.size() == kFieldCount + 1 && f.back().empty()) f.pop_back();
  if (f.size() != kFieldCount) {
    return Status::Errorf("squeue line {}: {} fields, expected {}", n, f.size(), static_cast<size_t>(kFieldCount));
  }
  SlurmJob job;
  ASSIGN_OR_RETURN(job.job_id, Count(f[kJobId], kJobId, n));
  if (job.job_id <= 0) return Status::Errorf("squeue line {}: no job id", n);
  job.user = f[kUser];
  SetState(job, f[kState]);
  job.reason = ReasonOf(f[kReason]);  // "None" as Slurm says it
  job.partition = f[kPartition];
  job.nodes = Unset(f[kNodes]) ? "" : f[kNodes];
  ASSIGN_OR_RETURN(job.submit_time, Count(f[kSubmitTime], kSubmitTime, n));
  ASSIGN_OR_RETURN(job.start_time, Count(f[kStartTime], kStartTime, n));
  ASSIGN_OR_RETURN(int64_t nodes, Count(f[kNodeCount], kNodeCount, n));
  ASSIGN_OR_RETURN(int64_t cpus, Count(f[kCpus], kCpus, n));
  ASSIGN_OR_RETURN(int64_t min_cpus, Count(f[kMinCpusPerNode], kMinCpusPerNode, n));
  job.node_count = static_cast<int>(std::clamp<int64_t>(nodes, 1, 1 << 20));
  job.cpus = static_cast<int>(std::clamp<int64_t>(cpus, 1, 1 << 24));
  job.min_cpus_per_node = static_cast<int>(std::clamp<int64_t>(min_cpus, 1, 1 << 20));
  MemoryRequest(job, Unset(f[kMinMemory]) ? 0 : ParseSlurmSizeKiB(std::string(f[kMinMemory])) / 1024, f[kTres]);
  job.gpus_per_node = Unset(f[kTresPerNode]) ? 0 : GpusIn(std::string(f[kTresPerNode]));
  job.exclusive = Exclusive(f[kExclusive], f[kOverSubscribe]);
  if (!Unset(f[kArrayTasks])) {
    job.array_task_string = f[kArrayTasks];
    job.array_max_tasks = ArrayLimit(f[kArrayTasks]);
  }
  job.dependency = Unset(f[kDependency]) ? "" : f[kDependency];
  auto priority = Number(f[kPriority]);
  job.priority = priority ? *priority : -1;
  job.restart_count = static_cast<int>(Number(f[kRestarts]).value_or(0));
  return job;
}

}  // namespace

std::vector<std::string> SqueueListingCommand() {
  std::string format;
  for (size_t i = 0; i < kFieldCount; ++i) {
    if (i > 0) format += ',';
    format += fmt::format("{}:0{}", kFieldNames[i], kSeparator);
  }
  return {"squeue", "--noheader", "--states=all", "--Format=" + format};
}

Result<std::vector<SlurmJob>> ParseSqueueListing(std::string_view text) {
  std::vector<SlurmJob> jobs;
  int n = 0;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++n;
    if (line.empty()) continue;
    ASSIGN_OR_RETURN(SlurmJob job, ParseLine(line, n));
    jobs.push_back(std::move(job));
  }
  return jobs;
}

Result<std::vector<SlurmJob>> SqueueJobs(runtime::PodRuntime* rt, const std::string& controller_pod) {
  runtime::ExecOptions o;
  o.user = "slurm";
  // Times as unix seconds; a pending array's whole task list (64 characters by default).
  o.env = {{"SLURM_TIME_FORMAT", "%s"}, {"SLURM_BITSTR_LEN", "0"}};
  o.argv = SqueueListingCommand();
  o.timeout = std::chrono::milliseconds(30000);
  ASSIGN_OR_RETURN(ProcessResult r, rt->Exec(controller_pod, o));
  if (!r.ok()) {
    std::string err = r.err.empty() ? r.out : r.err;
    while (!err.empty() && err.back() == '\n') err.pop_back();
    return Status::Errorf("squeue failed (exit {}): {}", r.exit_code, err);
  }
  // A field squeue does not know is printed empty, said only on stderr: Exclusive before 26.05 is
  // expected; any other would read as "none" for every job.
  for (size_t at = 0; (at = r.err.find(kUnknownField, at)) != std::string::npos;) {
    at += std::string_view(kUnknownField).size();
    std::string_view field = std::string_view(r.err).substr(at);
    field = field.substr(0, field.find_first_of("\r\n"));
    if (field != kFieldNames[kExclusive]) return Status::Errorf("squeue does not know the field {}", field);
  }
  return ParseSqueueListing(r.out);
}

}  // namespace hpc::slurm
