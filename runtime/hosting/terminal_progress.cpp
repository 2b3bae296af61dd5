#include "runtime/hosting/terminal_progress.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace crucible::runtime {

namespace {

std::mutex& terminal_mutex() {
  static std::mutex m;
  return m;
}
terminal_progress* current = nullptr;  // the instance whose live line is on the screen; under terminal_mutex

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int terminal_width(std::FILE* out) {
  winsize ws{};
  if (ioctl(fileno(out), TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20) return ws.ws_col;
  return 100;
}

// Cut to `width` bytes without splitting a UTF-8 sequence (a task's name or a phase may carry one).
std::string fit(std::string s, size_t width) {
  if (s.size() <= width) return s;
  size_t n = width;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  s.resize(n);
  return s;
}

}  // namespace

std::string format_duration(double seconds) {
  if (!(seconds >= 0)) seconds = 0;
  const long long s = std::llround(seconds);
  char buf[32];
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%llds", s);
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, (s % 3600) / 60);
  return buf;
}

double remaining_s(const progress_state& s) {
  double left = -1;
  if (s.total > 0 && s.per_unit_s > 0) {
    const double since = s.unit_at_s >= 0 ? std::max(0.0, s.elapsed_s - s.unit_at_s) : 0.0;
    left = std::max(0.0, std::max(0.0, s.total - s.done) * s.per_unit_s - since);
  }
  if (s.limit_s > 0) {
    const double by_time = std::max(0.0, s.limit_s - s.elapsed_s);
    left = left < 0 ? by_time : std::min(left, by_time);
  }
  return left;
}

double progress_fraction(const progress_state& s) {
  double f = -1;
  if (s.total > 0) f = std::clamp(s.done / s.total, 0.0, 1.0);
  if (s.limit_s > 0) f = std::max(f, std::clamp(s.elapsed_s / s.limit_s, 0.0, 1.0));
  return f;
}

std::string render_progress(const progress_state& s, int width, unsigned tick) {
  static const char spin[] = {'|', '/', '-', '\\'};
  std::string head;
  head += spin[tick % 4];
  head += ' ';
  head += s.phase;
  const double f = progress_fraction(s);
  if (f >= 0) {
    constexpr int bar = 16;
    const int filled = static_cast<int>(std::floor(f * bar));
    head += " [" + std::string(static_cast<size_t>(filled), '#') +
            std::string(static_cast<size_t>(bar - filled), '.') + "]";
    char pct[16];
    std::snprintf(pct, sizeof pct, " %3.0f%%", 100 * f);
    head += pct;
  }
  std::string tail;
  auto add = [&](const std::string& part) {
    if (!part.empty()) tail += " · " + part;
  };
  if (!s.unit.empty() && (s.total > 0 || s.done > 0)) {
    char units[64];
    if (s.total > 0)
      std::snprintf(units, sizeof units, "%s %.0f/%.0f", s.unit.c_str(), s.done, s.total);
    else
      std::snprintf(units, sizeof units, "%s %.0f", s.unit.c_str(), s.done);
    add(units);
  }
  add(format_duration(s.elapsed_s) + (s.limit_s > 0 ? "/" + format_duration(s.limit_s) : ""));
  if (const double left = remaining_s(s); left >= 0 && f < 1) add("ETA " + format_duration(left));
  std::string line = head + tail;
  if (!s.detail.empty()) line += " · " + s.detail;
  return fit(line, static_cast<size_t>(std::max(width, 10)));
}

terminal_progress::terminal_progress(std::FILE* out, bool live) : out_(out), live_(live) {
  last_print_ = now_s();
}

terminal_progress::~terminal_progress() {
  erase();
  std::lock_guard<std::mutex> lock(terminal_mutex());
  if (current == this) current = nullptr;
}

bool terminal_progress::is_live(std::FILE* out) {
  const char* term = std::getenv("TERM");
  return isatty(fileno(out)) && !(term && std::strcmp(term, "dumb") == 0);
}

void terminal_progress::update(const progress_state& s) {
  std::lock_guard<std::mutex> lock(terminal_mutex());
  const bool new_phase = s.phase != last_phase_;
  state_ = s;
  last_phase_ = s.phase;
  if (live_) {
    draw_locked(new_phase);
    return;
  }
  const double t = now_s();
  if (new_phase || t - last_print_ >= heartbeat_s) {
    std::fprintf(out_, "%s\n", render_progress(state_, 160).substr(2).c_str());  // no spinner in a log
    std::fflush(out_);
    last_print_ = t;
  }
}

void terminal_progress::draw_locked(bool force) {
  const double t = now_s();
  if (!force && t - last_draw_ < 0.1) return;
  last_draw_ = t;
  // The terminal's last column is left free: writing it wraps some terminals to the next line.
  const std::string text = render_progress(state_, terminal_width(out_) - 1, tick_++);
  std::fprintf(out_, "\r%s\033[K", text.c_str());
  std::fflush(out_);
  shown_ = true;
  current = this;
}

void terminal_progress::line(const std::string& text) {
  std::lock_guard<std::mutex> lock(terminal_mutex());
  if (live_ && shown_) std::fprintf(out_, "\r\033[K");
  std::fprintf(out_, "%s\n", text.c_str());
  last_print_ = now_s();
  if (live_ && shown_) draw_locked(true);
  std::fflush(out_);
}

void terminal_progress::erase() {
  std::lock_guard<std::mutex> lock(terminal_mutex());
  if (!live_ || !shown_) return;
  std::fprintf(out_, "\r\033[K");
  std::fflush(out_);
  shown_ = false;
  if (current == this) current = nullptr;
}

void terminal_progress::erase_current() {
  std::lock_guard<std::mutex> lock(terminal_mutex());
  if (!current || !current->shown_) return;
  std::fprintf(current->out_, "\r\033[K");
  std::fflush(current->out_);
  current->shown_ = false;
  current = nullptr;
}

item_progress::item_progress(std::string phase, size_t total, std::string unit) : start_s_(now_s()) {
  if (terminal_progress::is_live(stderr)) term_.emplace(stderr, true);
  state_.phase = std::move(phase);
  state_.total = static_cast<double>(total);
  state_.unit = std::move(unit);
}

void item_progress::at(size_t index, const std::string& what) {
  if (!term_) return;
  const double now = now_s() - start_s_;
  state_.done = static_cast<double>(index);
  state_.elapsed_s = now;
  state_.unit_at_s = now;
  state_.per_unit_s = index > 0 ? now / static_cast<double>(index) : 0;
  state_.detail = what;
  term_->update(state_);
}

void item_progress::erase() {
  if (term_) term_->erase();
}

}  // namespace crucible::runtime
