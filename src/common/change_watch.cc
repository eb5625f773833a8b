#include "common/change_watch.h"

#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <thread>

namespace hpc {
namespace {

constexpr uint32_t kEntryEvents = IN_CLOSE_WRITE | IN_MODIFY | IN_ATTRIB | IN_CREATE | IN_DELETE | IN_MOVED_FROM |
                                  IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF;

std::string Parent(const std::string& path) {
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string Base(const std::string& path) {
  auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool IsDirectory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

ChangeWatch::ChangeWatch(std::vector<std::string> paths) : paths_(std::move(paths)) {
  fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd_ >= 0) AddWatches();
}

ChangeWatch::~ChangeWatch() {
  if (fd_ >= 0) ::close(fd_);
}

void ChangeWatch::AddWatches() {
  missing_parent_ = false;
  for (const auto& path : paths_) {
    // Adding a watch again for the same directory returns the same descriptor.
    int wd = ::inotify_add_watch(fd_, Parent(path).c_str(), kEntryEvents);
    if (wd >= 0)
      names_in_dir_[wd].insert(Base(path));
    else
      missing_parent_ = true;
    if (IsDirectory(path)) {
      int self = ::inotify_add_watch(fd_, path.c_str(), kEntryEvents);
      if (self >= 0) whole_dirs_.insert(self);
    }
  }
}

bool ChangeWatch::Drain() {
  alignas(struct inotify_event) char buf[8192];
  bool relevant = false;
  bool rewatch = false;
  for (;;) {
    ssize_t n = ::read(fd_, buf, sizeof(buf));
    if (n <= 0) break;
    for (char* p = buf; p < buf + n;) {
      auto* ev = reinterpret_cast<struct inotify_event*>(p);
      p += sizeof(struct inotify_event) + ev->len;
      if (ev->mask & IN_IGNORED) {  // the watched directory went away
        names_in_dir_.erase(ev->wd);
        whole_dirs_.erase(ev->wd);
        rewatch = true;
        continue;
      }
      if (whole_dirs_.count(ev->wd)) {
        relevant = true;
        continue;
      }
      auto it = names_in_dir_.find(ev->wd);
      if (it == names_in_dir_.end() || ev->len == 0 || !it->second.count(ev->name)) continue;
      relevant = true;
      // A watched path created (or replaced) as a directory: watch its entries too.
      if (ev->mask & (IN_CREATE | IN_MOVED_TO)) rewatch = true;
    }
  }
  if (rewatch) AddWatches();
  return relevant;
}

bool ChangeWatch::Wait(std::chrono::milliseconds timeout) {
  if (fd_ < 0) {
    std::this_thread::sleep_for(timeout);
    return false;
  }
  // A directory that did not exist yet (a volume the first pass creates) is looked for again.
  if (missing_parent_) AddWatches();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    struct pollfd pfd {
      fd_, POLLIN, 0
    };
    int r = ::poll(&pfd, 1, static_cast<int>(left.count()));
    if (r < 0) return false;  // a signal (EINTR): let the caller look at its flags
    if (r == 0) continue;     // the deadline is checked again
    if (Drain()) return true;
  }
}

}  // namespace hpc
