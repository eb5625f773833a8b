// Wakes a polling loop as soon as one of a few paths changes, instead of waking it on a short
// tick to stat(2) them. Built on inotify: each path's directory is watched for that name (so a
// file written in place, replaced by rename, created or removed is seen), and a path that is a
// directory is watched itself for entries coming and going. Changes are hints only: the caller
// still compares what it reads (e.g. mtimes), so a missed or spurious wake-up costs at most one
// timeout. A path whose directory does not exist yet is watched once it does. Without inotify (limits reached) Wait
// simply sleeps out its timeout.
#pragma once

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace hpc {

class ChangeWatch {
 public:
  explicit ChangeWatch(std::vector<std::string> paths);
  ~ChangeWatch();
  ChangeWatch(const ChangeWatch&) = delete;
  ChangeWatch& operator=(const ChangeWatch&) = delete;

  // Returns true as soon as one of the paths may have changed, false after `timeout` without a
  // change (or when a signal interrupted the wait).
  bool Wait(std::chrono::milliseconds timeout);
  bool watching() const { return fd_ >= 0; }

 private:
  void AddWatches();
  bool Drain();  // reads pending events; true if one concerns a watched path

  std::vector<std::string> paths_;
  int fd_ = -1;
  std::map<int, std::set<std::string>> names_in_dir_;  // watch -> the names it is for
  std::set<int> whole_dirs_;                           // watches where any entry counts
  bool missing_parent_ = false;                        // some path's directory does not exist yet
};

}  // namespace hpc
