#pragma once
// What a long command shows on the terminal while it works: one live line (a spinner, the phase, a bar with
// its ETA, and what is going on) redrawn in place on a terminal, with permanent lines (a step's summary, a
// task's verdict) printed above it. Not a terminal (a log file, a pipe): the live line is never drawn; a
// change of phase is printed as a line, and the live line's text every 30 s while nothing else is printed,
// so a log still shows that the run is alive and what it waits for.
//
// The estimate: the phase's remaining units at the rate measured so far, or the wall-clock budget left,
// whichever ends first (a run stops at max_steps or max_minutes).
#include <cstdio>
#include <optional>
#include <string>

namespace crucible::runtime {

/// A phase's state, as the live line shows it.
struct progress_state {
  std::string phase;      ///< "starting actors", "first step", "training", "lint"
  double done = 0;        ///< units done (steps, problems)
  double total = 0;       ///< units the phase ends at; 0: no count (a spinner, no bar)
  std::string unit;       ///< "step", "problem"
  double elapsed_s = 0;   ///< since the phase (or the run) began
  double limit_s = 0;     ///< a wall-clock budget it also ends at (elapsed_s counts toward it); 0: none
  double per_unit_s = 0;  ///< seconds per unit measured so far; 0: not known yet
  double unit_at_s = -1;  ///< elapsed_s when `done` was reached (the estimate counts down from it); < 0: now
  std::string detail;     ///< what is going on: "12 scored, 4 in flight, compiler 3/13 busy"
};

/// "42s", "3m05s", "2h04m".
std::string format_duration(double seconds);

/// Seconds left: the units left at per_unit_s (less the time since the last one), or limit_s - elapsed_s,
/// whichever is less; < 0 when neither is known.
double remaining_s(const progress_state& s);

/// How far the phase is, 0..1: units or budget, whichever is further; < 0 when neither is known.
double progress_fraction(const progress_state& s);

/// The live line without a newline, at most `width` characters (the detail is cut first). `tick` turns
/// the spinner.
std::string render_progress(const progress_state& s, int width, unsigned tick = 0);

class terminal_progress {
 public:
  /// `live`: redraw one line in place (a terminal that is not TERM=dumb, see is_live()).
  terminal_progress(std::FILE* out, bool live);
  ~terminal_progress();  ///< erases the live line
  terminal_progress(const terminal_progress&) = delete;
  terminal_progress& operator=(const terminal_progress&) = delete;

  /// Whether `out` is a terminal that can redraw a line.
  static bool is_live(std::FILE* out);

  /// The phase's new state: redrawn (at most ten times a second) when live; otherwise printed when the phase
  /// changes, and every `heartbeat_s` while no line was printed.
  void update(const progress_state& s);
  /// A permanent line, above the live one.
  void line(const std::string& text);
  /// Erases the live line (before other output); the next update draws it again.
  void erase();

  bool live() const { return live_; }
  double heartbeat_s = 30;

  /// Erases the live line of whichever terminal_progress is drawing one now (for the log's terminal sink, so
  /// a warning starts on a line of its own).
  static void erase_current();

 private:
  void draw_locked(bool force);  // under the one mutex of every terminal_progress (the terminal is one)

  std::FILE* out_;
  bool live_;
  progress_state state_;
  bool shown_ = false;  ///< the live line is on the screen
  unsigned tick_ = 0;
  double last_draw_ = -1;  ///< steady seconds
  double last_print_ = 0;  ///< steady seconds of the last line printed (not live)
  std::string last_phase_;
};

/// A command's loop over a known number of items (problems to lint, kernels to re-judge), on stderr when it
/// is a terminal and silent otherwise (the command's own output is the log): the item at work, a bar and ETA.
class item_progress {
 public:
  item_progress(std::string phase, size_t total, std::string unit);
  /// Item `index` (from 0) is under way: `what` names it.
  void at(size_t index, const std::string& what);
  /// Erases the line before the command writes to the terminal; at() draws it again.
  void erase();

 private:
  std::optional<terminal_progress> term_;
  progress_state state_;
  double start_s_;
};

}  // namespace crucible::runtime
