#include "runtime/hosting/train_session.hpp"

#include "runtime/pipeline/pipeline_stages.hpp"

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include <spdlog/spdlog.h>
#include <caf/all.hpp>

#include "messages/type_ids.hpp"
#include "runtime/cluster/cluster_gateway.hpp"
#include "runtime/dashboard/dashboard.hpp"
#include "runtime/hosting/run_control.hpp"
#include "runtime/hosting/supervisor.hpp"
#include "runtime/hosting/terminal_progress.hpp"

namespace crucible::runtime {
namespace {

using namespace std::chrono_literals;

std::atomic<bool> stop_requested{false};

extern "C" void on_signal(int) {
  stop_requested.store(true);
}

caf::actor first_of(caf::scoped_actor& self, const caf::actor& supervisor, const std::string& role) {
  caf::actor out;
  self->request(supervisor, 5s, pool_atom::value, role)
      .receive(
          [&](const std::vector<caf::actor>& members) {
            if (!members.empty()) out = members.front();
          },
          [&](caf::error&) {});
  return out;
}

// Stops the supervisor and with it every actor it hosts, waiting (30 s at most) until it is down.
void stop_actors(caf::scoped_actor& self, const caf::actor& supervisor) {
  self->monitor(supervisor);
  self->send(supervisor, stop_atom::value);
  bool down = false;
  self->receive_while([&] { return !down; })([&](caf::down_msg&) { down = true; },
                                             [&](step_atom, int64_t, const std::string&) {},
                                             [&](stop_atom, const std::string&) {},
                                             caf::after(30s) >>
                                                 [&] {
                                                   spdlog::warn("actors did not stop within 30 s");
                                                   down = true;
                                                 });
}

// The dashboard of this run (dashboard.listen), asking `desk` (the gateway, or the control desk of a run
// without one) for status and commands, as `crucible status` and `crucible scale` do. Null when it is off.
expected<std::unique_ptr<dashboard>> start_dashboard(caf::actor_system& sys, const run_context& run,
                                                     caf::actor desk) {
  const auto& d = run.cfg.dashboard;
  if (d.listen.empty() || d.listen == "off") return std::unique_ptr<dashboard>();
  dashboard_options o;
  o.listen = d.listen;
  o.any_port_if_taken = d.listen == dashboard_section{}.listen;
  o.controls = d.controls == "on" || (d.controls == "auto" && !run.cfg.cluster.secret_key.empty());
  o.token = make_dashboard_token();
  {
    // Readable by this user only: whoever holds it may scale the run from the page.
    const std::string file = run.path("dashboard_token");
    std::ofstream(file, std::ios::trunc) << o.token << "\n";
    std::error_code ec;
    std::filesystem::permissions(file,
                                 std::filesystem::perms::owner_read | std::filesystem::perms::owner_write,
                                 std::filesystem::perm_options::replace, ec);
  }
  o.run_dir = run.dir;
  o.cuda = run.cfg.target == "cuda";
  for (const auto& [role, n] : run.cfg.roles) o.scalable_roles.push_back(role);
  o.refresh = std::chrono::milliseconds(static_cast<int64_t>(d.refresh_s * 1000));
  dashboard_sources src;
  src.status = [&sys, desk]() -> expected<status_report> {
    caf::scoped_actor self{sys};
    expected<status_report> out = make_error("no answer");
    self->request(desk, 3s, status_atom::value)
        .receive([&](status_report& r) { out = std::move(r); },
                 [&](caf::error& err) { out = make_error(caf::to_string(err)); });
    return out;
  };
  src.control = [&sys, desk](const control& c, const control_origin& from) {
    caf::scoped_actor self{sys};
    status_report out;
    const auto wait = std::chrono::milliseconds(static_cast<int64_t>(control_deadline_s(c) * 1000) + 1000);
    self->request(desk, wait, c, from.address, from.public_key)
        .receive([&](status_report& r) { out = std::move(r); },
                 [&](caf::error& err) { out.error = "the head did not answer: " + caf::to_string(err); });
    return out;
  };
  return dashboard::start(std::move(o), std::move(src));
}

// What the run is doing between steps, for the live line: candidates and the load on the roles that serve
// the pipeline's stages (a role's `busy` is the conductor's count of candidates sent to its members and not
// yet answered).
std::string activity(const status_report& r, const std::vector<std::string>& stage_roles) {
  std::string out = std::to_string(r.candidates_generated) + " generated, " +
                    std::to_string(r.candidates_scored) + " scored, " +
                    std::to_string(r.candidates_in_flight) + " in flight";
  std::string busy;
  for (const auto& role : r.roles)
    if (std::find(stage_roles.begin(), stage_roles.end(), role.role) != stage_roles.end())
      busy += (busy.empty() ? "; at " : ", ") + role.role + " " + std::to_string(role.busy) + " (" +
              std::to_string(role.actors) + (role.actors == 1 ? " actor)" : " actors)");
  out += busy;
  if (!r.nodes.empty()) out += "; " + std::to_string(r.nodes.size()) + " nodes";
  return out;
}

}  // namespace

void request_stop() {
  stop_requested.store(true);
}

expected<train_summary> run_training(std::shared_ptr<const run_context> run,
                                     std::shared_ptr<const role_registry> registry) {
  stop_requested.store(false);
  auto previous_int = std::signal(SIGINT, on_signal);
  auto previous_term = std::signal(SIGTERM, on_signal);
  train_summary summary;
  {
    caf::actor_system_config cfg;
    if (run->cfg.run.threads > 0) cfg.set("scheduler.max-threads", static_cast<size_t>(run->cfg.run.threads));
    cfg.set("logger.verbosity", caf::atom("quiet"));
    caf::actor_system sys{cfg};
    caf::scoped_actor self{sys};
    const auto& rc = run->cfg.run;
    // On the terminal from the first second: what the run is doing, and from its first step a bar with ETA.
    std::optional<terminal_progress> live;
    if (rc.progress) live.emplace(stdout, terminal_progress::is_live(stdout));
    progress_state shown;
    shown.limit_s = rc.max_minutes * 60.0;
    auto show = [&](const std::string& phase) {
      if (!live) return;
      shown.phase = phase;
      shown.elapsed_s = run->elapsed_s();
      live->update(shown);
    };
    show("starting actors");
    auto sup = spawn_supervisor(sys, run, registry, caf::actor{self});
    if (!sup) {
      std::signal(SIGINT, previous_int);
      std::signal(SIGTERM, previous_term);
      return sup.err();
    }
    caf::actor supervisor = *sup;
    // A head: nodes join on cluster.listen and serve pipeline stages beside (or instead of) local actors.
    caf::actor gateway;
    std::string join_hint;  // what a node passes to --join; a wildcard's host is left to the reader
    if (!run->cfg.cluster.listen.empty()) {
      auto gw = spawn_cluster_gateway(sys, run, supervisor);
      if (!gw) {
        run->stopping->store(true);
        stop_actors(self, supervisor);  // the actor system's end waits for every actor: none may linger
        std::signal(SIGINT, previous_int);
        std::signal(SIGTERM, previous_term);
        return gw.err();
      }
      gateway = gw->actor;
      join_hint = gw->endpoint;
      for (const char* any : {"0.0.0.0", "*", "[::]"})
        if (auto at = join_hint.find(any); at != std::string::npos)
          join_hint.replace(at, std::strlen(any), "<this host>");
      std::ofstream(run->path("cluster_endpoint")) << gw->endpoint << "\n";
      if (!gw->note.empty()) std::fprintf(stdout, "%s\n", gw->note.c_str());
      const std::string listening =
          "cluster: listening on " + gw->endpoint +
          (gw->public_key.empty() ? "" : " (CURVE, head key " + gw->public_key + ")");
      if (live)
        live->line(listening);
      else
        std::fprintf(stdout, "%s\n", listening.c_str()), std::fflush(stdout);
      spdlog::info("cluster: listening on {}", gw->endpoint);
      if (!gw->note.empty()) spdlog::info("{}", gw->note);
    }
    // Operators' commands reach the run through the gateway, or through a desk of its own without one.
    caf::actor desk = gateway ? gateway : spawn_control_desk(sys, supervisor);
    auto board = start_dashboard(sys, *run, desk);
    if (!board) {
      run->stopping->store(true);
      if (gateway) self->send(gateway, stop_atom::value);
      if (desk != gateway) self->send(desk, stop_atom::value);
      stop_actors(self, supervisor);
      std::signal(SIGINT, previous_int);
      std::signal(SIGTERM, previous_term);
      return board.err();
    }
    if (*board) {
      auto say = [&](const std::string& text) {
        if (live)
          live->line(text);
        else
          std::fprintf(stdout, "%s\n", text.c_str()), std::fflush(stdout);
      };
      if (!(*board)->note().empty()) say((*board)->note());
      say("dashboard: " + (*board)->url());
      spdlog::info("dashboard: {}", (*board)->url());
    }
    spdlog::info("run {}: {} tasks, {} steps, at most {} minutes", run->dir, run->tasks.size(), rc.max_steps,
                 rc.max_minutes);
    bool finished = false;
    // A head whose stages wait for nodes says so every few seconds until every stage has a member.
    auto next_wait_note = std::chrono::steady_clock::now() + 3s;
    bool stages_served = run->cfg.cluster.listen.empty();
    std::string waiting_for;  // the stages no member serves yet
    // The live line's activity comes from the desk, as `crucible status` gets it, once a second.
    auto next_poll = std::chrono::steady_clock::now();
    std::vector<std::string> stage_roles;
    for (const auto& stage : run->cfg.pipeline) stage_roles.push_back(role_of_stage(stage));
    int64_t first_step = -1;
    double first_step_at = 0;
    show(stages_served ? "first step" : "waiting for nodes");
    while (!finished) {
      if (!stages_served && std::chrono::steady_clock::now() >= next_wait_note) {
        std::string missing;
        for (const auto& stage : run->cfg.pipeline)
          if (!first_of(self, supervisor, role_of_stage(stage)))
            missing += (missing.empty() ? "" : ", ") + stage + " (" + role_of_stage(stage) + ")";
        stages_served = missing.empty();
        if (!stages_served && missing != waiting_for) {
          const std::string note = "crucible train: waiting for nodes to serve " + missing +
                                   " (crucible node --join " + join_hint + " --roles ...)";
          if (live)
            live->line(note);
          else
            std::fprintf(stdout, "%s\n", note.c_str()), std::fflush(stdout);
        }
        waiting_for = missing;
        if (stages_served && first_step < 0) show("first step");
        next_wait_note = std::chrono::steady_clock::now() + 5s;
      }
      if (live && std::chrono::steady_clock::now() >= next_poll) {
        self->send(desk, status_atom::value);  // answered as a message, handled below
        next_poll = std::chrono::steady_clock::now() + 1s;
      }
      self->receive(
          [&](step_atom, int64_t step, const std::string& line) {
            summary.steps = step;
            if (live) {
              const double now = run->elapsed_s();
              if (first_step < 0) first_step = step, first_step_at = now;
              // The rate from the steps of this session (a resumed run's earlier steps took another session's
              // time); its first step also paid for warming up.
              shown.per_unit_s =
                  step > first_step ? (now - first_step_at) / static_cast<double>(step - first_step) : now;
              shown.done = static_cast<double>(step);
              shown.total = static_cast<double>(rc.max_steps);
              shown.unit = "step";
              shown.unit_at_s = now;
              // On a terminal the live line is set first (line() redraws it); in a log the step comes first.
              if (live->live()) show("training");
              live->line(line);
              if (!live->live()) show("training");
            }
            if (step >= rc.max_steps) finished = true;
          },
          [&](status_report& r) {
            shown.detail = activity(r, stage_roles);
            show(shown.phase);
          },
          [&](stop_atom, const std::string& why) {
            // The learner ends the run early: its stage's goal is met (a plateau), or it cannot train.
            summary.ended_early = why;
            finished = true;
          },
          caf::after(200ms) >>
              [&] {
                if (live) show(shown.phase);  // the clock and the spinner move while nothing arrives
              });
      if (stop_requested.load()) {
        summary.interrupted = true;
        finished = true;
      }
      if (run->elapsed_s() > rc.max_minutes * 60.0) {
        summary.timed_out = true;
        finished = true;
      }
    }
    shown.total = shown.limit_s = 0;  // the drain has no bar: it ends when the work in flight is in
    show(summary.interrupted ? "stopping: draining work in flight, then a checkpoint"
                             : "finishing: draining work in flight, then a checkpoint");
    if (summary.interrupted && !live)
      std::fprintf(stdout, "stopping: draining work in flight, then a checkpoint...\n");
    if (summary.timed_out) spdlog::info("run.max_minutes reached; stopping");
    // 1. The learner stops training; 2. the conductor drains; 3. the learner checkpoints; 4. everyone stops.
    caf::actor learner = first_of(self, supervisor, "learner");
    caf::actor conductor = first_of(self, supervisor, "conductor");
    if (learner) self->send(learner, stop_atom::value);
    if (conductor) {
      auto grace = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::duration<double>(rc.shutdown_grace_s + 5.0));
      self->request(conductor, grace, stop_atom::value, rc.shutdown_grace_s)
          .receive(
              [&](const status_report& r) { summary.conductor = r; },
              [&](caf::error& err) { spdlog::warn("conductor did not drain: {}", caf::to_string(err)); });
    }
    // The drain is over: a generator still waiting on a served model gives up now.
    run->stopping->store(true);
    board->reset();  // its sampler asks the actors about to stop
    if (desk != gateway) self->send(desk, stop_atom::value);
    // Remote stages served the drain; now the nodes are told the session is over.
    if (gateway) {
      self->monitor(gateway);
      self->send(gateway, stop_atom::value);
      self->receive([&](caf::down_msg&) {}, caf::after(5s) >> [] {});
    }
    if (learner) {
      self->request(learner, 60s, checkpoint_atom::value)
          .receive(
              [&](int64_t step) { summary.steps = step; },
              [&](caf::error& err) { spdlog::error("final checkpoint failed: {}", caf::to_string(err)); });
    }
    stop_actors(self, supervisor);
    summary.wall_s = run->elapsed_s();
    live.reset();  // erases the live line before the summary is printed
  }
  std::signal(SIGINT, previous_int);
  std::signal(SIGTERM, previous_term);
  return summary;
}

}  // namespace crucible::runtime
