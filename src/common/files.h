// Small filesystem helpers. Writes are atomic (temp file + rename) unless said otherwise,
// so a crash never leaves a half-written state file behind.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/result.h"

namespace hpc::files {

Result<std::string> Read(const std::string& path);
// The whole file if it holds at most `max_bytes`; an error naming its size otherwise.
Result<std::string> ReadAtMost(const std::string& path, size_t max_bytes);
bool Exists(const std::string& path);
Status MakeDirs(const std::string& path, mode_t mode = 0755);
// Writes via a temp file and rename; the file ends with `mode`, owned by uid/gid when given.
Status WriteAtomic(const std::string& path, const std::string& content, mode_t mode = 0644,
                   uid_t uid = static_cast<uid_t>(-1), gid_t gid = static_cast<gid_t>(-1));
// Rewrites the file's content keeping its inode, for files that are bind-mounted into pods
// (a rename would leave the mounts showing the old inode). Written over the old content, then
// cut to length: a reader meanwhile never sees it empty, and unchanged leading bytes unchanged.
Status WriteInPlace(const std::string& path, const std::string& content, mode_t mode = 0644);
Status RemoveAll(const std::string& path);
std::vector<std::string> ListDir(const std::string& path);
// A fresh directory under $TMPDIR (or /tmp) named prefix-XXXXXX.
Result<std::string> MakeTempDir(const std::string& prefix);

// An exclusive flock(2) on `path`, held until the lock is destroyed: a file (made, mode 0600,
// when missing) or an existing directory. Waits for other holders, in any process.
class FileLock {
 public:
  static Result<FileLock> Take(const std::string& path);
  FileLock(FileLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  FileLock& operator=(FileLock&&) = delete;
  ~FileLock();

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace hpc::files
