#include "runtime/hosting/logging.hpp"

#include <memory>
#include <vector>

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "runtime/hosting/terminal_progress.hpp"

namespace crucible::runtime {

namespace {

// The terminal's sink: a live progress line is erased first, so a message starts on a line of its own.
class beside_progress_sink final : public spdlog::sinks::sink {
 public:
  explicit beside_progress_sink(spdlog::sink_ptr inner) : inner_(std::move(inner)) {}
  void log(const spdlog::details::log_msg& msg) override {
    terminal_progress::erase_current();
    inner_->log(msg);
  }
  void flush() override { inner_->flush(); }
  void set_pattern(const std::string& pattern) override { inner_->set_pattern(pattern); }
  void set_formatter(std::unique_ptr<spdlog::formatter> f) override { inner_->set_formatter(std::move(f)); }

 private:
  spdlog::sink_ptr inner_;
};

}  // namespace

void init_logging(const std::string& level, const std::string& file, bool quiet_terminal) {
  std::vector<spdlog::sink_ptr> sinks;
  auto term = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  auto lvl = spdlog::level::from_str(level);
  term->set_level(quiet_terminal ? std::max(lvl, spdlog::level::warn) : lvl);
  term->set_pattern("[%H:%M:%S] %^%l%$ %v");
  auto beside = std::make_shared<beside_progress_sink>(term);
  beside->set_level(term->level());
  sinks.push_back(beside);
  if (!file.empty()) {
    auto f = std::make_shared<spdlog::sinks::basic_file_sink_mt>(file, false);
    f->set_level(lvl);
    f->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%l] [t%t] %v");
    sinks.push_back(f);
  }
  auto logger = std::make_shared<spdlog::logger>("crucible", sinks.begin(), sinks.end());
  logger->set_level(lvl);
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(logger);
  spdlog::flush_every(std::chrono::seconds(2));
}

}  // namespace crucible::runtime
