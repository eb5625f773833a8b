#include "common/log.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>

namespace hpc::log {

void InitConsole(bool verbose) {
  auto logger = spdlog::stderr_color_mt("hpcplane");
  logger->set_pattern("%^%l%$: %v");
  logger->set_level(verbose ? spdlog::level::debug : spdlog::level::warn);
  spdlog::set_default_logger(logger);
}

void UseServiceFormat() {
  auto logger = spdlog::default_logger();
  logger->set_pattern("[%Y-%m-%dT%H:%M:%S.%e] [%l] %v");
  if (logger->level() > spdlog::level::info) logger->set_level(spdlog::level::info);
  logger->flush_on(spdlog::level::info);
}

void InitFile(const std::string& path, bool verbose) {
  auto logger = spdlog::basic_logger_mt("hpcplane", path);
  logger->set_pattern("[%Y-%m-%dT%H:%M:%S.%e] [%l] %v");
  logger->set_level(verbose ? spdlog::level::debug : spdlog::level::info);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

}  // namespace hpc::log
