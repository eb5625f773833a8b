#include "common/files.h"

#include <atomic>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <sstream>

namespace hpc::files {
namespace fs = std::filesystem;

Result<std::string> Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Errorf("{}: cannot read: {}", path, std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result<std::string> ReadAtMost(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Errorf("{}: cannot read: {}", path, std::strerror(errno));
  // Read one byte past the limit, never the whole of a huge file or an endless pipe.
  std::string out(max_bytes + 1, '\0');
  in.read(out.data(), static_cast<std::streamsize>(out.size()));
  out.resize(static_cast<size_t>(in.gcount()));
  if (out.size() > max_bytes) {
    struct stat st;
    std::string size =
        ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) ? fmt::format("{} bytes", st.st_size) : "more than that";
    return Status::Errorf("{}: is {}; the limit is {} bytes", path, size, max_bytes);
  }
  return out;
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

Status MakeDirs(const std::string& path, mode_t mode) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) return Status::Errorf("{}: cannot create directory: {}", path, ec.message());
  ::chmod(path.c_str(), mode);
  return Status::Ok();
}

static Status WriteAll(int fd, const std::string& content, const std::string& path) {
  size_t off = 0;
  while (off < content.size()) {
    ssize_t n = ::write(fd, content.data() + off, content.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::Errorf("{}: write failed: {}", path, std::strerror(errno));
    }
    off += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status WriteAtomic(const std::string& path, const std::string& content, mode_t mode, uid_t uid, gid_t gid) {
  // Unique per writer, threads of one process included: two writers of the same file must not
  // share a temp file (one would rename the other's away).
  static std::atomic<uint64_t> counter{0};
  std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return Status::Errorf("{}: cannot create: {}", tmp, std::strerror(errno));
  Status st = WriteAll(fd, content, tmp);
  // The mode is set explicitly: open() honours the umask, and secrets must be exactly 0600.
  if (st.ok() && ::fchmod(fd, mode) != 0) st = Status::Errorf("{}: chmod: {}", tmp, std::strerror(errno));
  if (st.ok() && (uid != static_cast<uid_t>(-1) || gid != static_cast<gid_t>(-1)) && ::fchown(fd, uid, gid) != 0) {
    st = Status::Errorf("{}: chown: {}", tmp, std::strerror(errno));
  }
  if (st.ok() && ::fsync(fd) != 0) st = Status::Errorf("{}: fsync: {}", tmp, std::strerror(errno));
  ::close(fd);
  if (st.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    st = Status::Errorf("{}: rename: {}", path, std::strerror(errno));
  }
  if (!st.ok()) ::unlink(tmp.c_str());
  return st;
}

Status WriteInPlace(const std::string& path, const std::string& content, mode_t mode) {
  // Not O_TRUNC: the new content goes over the old and only then is the rest cut off, so a
  // concurrent reader never finds the file empty (glibc rereads /etc/hosts on every lookup).
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, mode);
  if (fd < 0) return Status::Errorf("{}: cannot open: {}", path, std::strerror(errno));
  Status st = WriteAll(fd, content, path);
  if (st.ok() && ::ftruncate(fd, static_cast<off_t>(content.size())) != 0) {
    st = Status::Errorf("{}: truncate: {}", path, std::strerror(errno));
  }
  ::fchmod(fd, mode);
  ::close(fd);
  return st;
}

Status RemoveAll(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec) return Status::Errorf("{}: cannot remove: {}", path, ec.message());
  return Status::Ok();
}

std::vector<std::string> ListDir(const std::string& path) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(path, ec)) out.push_back(e.path().filename());
  std::sort(out.begin(), out.end());
  return out;
}

Result<std::string> MakeTempDir(const std::string& prefix) {
  const char* base = std::getenv("TMPDIR");
  std::string templ = std::string(base && *base ? base : "/tmp") + "/" + prefix + "-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) {
    return Status::Errorf("cannot create temp dir {}: {}", templ, std::strerror(errno));
  }
  return templ;
}

Result<FileLock> FileLock::Take(const std::string& path) {
  struct stat st;
  const bool dir = ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  const int fd = dir ? ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                     : ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Status::Errorf("cannot open {} to lock it: {}", path, std::strerror(errno));
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno != EINTR) {
      const int err = errno;
      ::close(fd);
      return Status::Errorf("cannot lock {}: {}", path, std::strerror(err));
    }
  }
  return FileLock(fd);
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace hpc::files
