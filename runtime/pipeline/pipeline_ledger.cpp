#include "runtime/pipeline/pipeline_ledger.hpp"

#include <algorithm>
#include <utility>

#include "kernels/verify/verdict_vocabulary.hpp"

namespace crucible::runtime {

namespace {

// The commands, by kind: a group's (generate, record, store) and a candidate's (dispatch, progress).
ledger_command group_command(ledger_action action, bool later, const std::string& group_id,
                             const std::string& task) {
  ledger_command c;
  c.action = action;
  c.later = later;
  c.group_id = group_id;
  c.task = task;
  return c;
}

ledger_command record_command(bool later, const std::string& group_id, const std::string& task,
                              std::vector<std::string> ids) {
  auto c = group_command(ledger_action::record, later, group_id, task);
  c.candidate_ids = std::move(ids);
  return c;
}

ledger_command store_command(bool later, const std::string& group_id, const std::string& task, bool partial) {
  auto c = group_command(ledger_action::store, later, group_id, task);
  c.partial = partial;
  return c;
}

ledger_command candidate_command(ledger_action action, bool later, const candidate& cand,
                                 const std::string& stage) {
  auto c = group_command(action, later, cand.group_id, cand.task);
  c.candidate_id = cand.id;
  if (action == ledger_action::progress) c.candidate_ids = {cand.id};
  c.stage = stage;
  return c;
}

}  // namespace

pipeline_ledger::pipeline_ledger(ledger_options options) : options_(std::move(options)) {}

ledger_commands pipeline_ledger::fill() {
  ledger_commands out;
  if (options_.tasks.empty()) return out;
  while (!stopping_ && static_cast<int64_t>(groups_.size()) < options_.groups_in_flight) {
    const std::string& task = options_.tasks[next_task_++ % options_.tasks.size()];
    std::string gid = options_.incarnation + "-g" + std::to_string(next_group_++);
    group_entry g;
    g.task = task;
    g.attempts = 1;
    groups_[gid] = std::move(g);
    out.push_back(group_command(ledger_action::generate, false, gid, task));
  }
  return out;
}

ledger_commands pipeline_ledger::regenerate(const std::string& group_id) {
  auto it = groups_.find(group_id);
  if (it == groups_.end() || it->second.state != group_state::generating) return {};
  ++it->second.attempts;
  return {group_command(ledger_action::generate, false, group_id, it->second.task)};
}

ledger_commands pipeline_ledger::generated(const std::string& group_id, std::vector<candidate> batch) {
  ledger_commands out;
  auto it = groups_.find(group_id);
  if (it == groups_.end() || it->second.state != group_state::generating) return out;  // a late answer
  if (batch.empty()) {
    drop_group(group_id, out);
    return out;
  }
  auto& g = it->second;
  g.state = group_state::recording;
  g.policy_version = batch.front().policy_version;
  for (auto& c : batch) {
    g.created_unix = std::max(g.created_unix, c.created_unix);
    std::string id = c.id;
    if (cands_.count(id)) continue;  // a generator that repeats an id: the first one counts
    g.ids.push_back(id);
    candidate_entry e;
    // An answer without usable code skips the stages: its verdict is made here, and it is recorded as scored.
    if (!c.format_error.empty()) {
      e.scored.judged = kernels::format_verdict(id, c.content_hash, c.format_error);
      e.stage = options_.pipeline.size();
    }
    e.scored.cand = std::move(c);
    cands_[id] = std::move(e);
    ++counts_.generated;
  }
  g.remaining = g.ids.size();
  out.push_back(record_command(false, group_id, g.task, g.ids));
  return out;
}

ledger_commands pipeline_ledger::generate_failed(const std::string& group_id, const std::string&) {
  ledger_commands out;
  auto it = groups_.find(group_id);
  if (it == groups_.end() || it->second.state != group_state::generating) return out;
  // Nothing was generated, so nothing is lost: the group is dropped and another takes its place.
  if (it->second.attempts >= options_.max_attempts) {
    drop_group(group_id, out);
    return out;
  }
  out.push_back(group_command(ledger_action::generate, true, group_id, it->second.task));
  return out;
}

ledger_commands pipeline_ledger::recorded(const std::string& group_id) {
  ledger_commands out;
  auto it = groups_.find(group_id);
  if (it == groups_.end() || it->second.state != group_state::recording) return out;
  it->second.state = group_state::running;
  for (const auto& id : it->second.ids) run_stage(id, out);
  return out;
}

ledger_commands pipeline_ledger::record_failed(const std::string& group_id) {
  auto it = groups_.find(group_id);
  if (it == groups_.end() || it->second.state != group_state::recording) return {};
  // Not dispatched until it is on disk: a head killed now must find every candidate it worked on.
  return {record_command(true, group_id, it->second.task, it->second.ids)};
}

pipeline_ledger::candidate_entry* pipeline_ledger::live(const std::string& id, uint64_t ticket) {
  auto it = cands_.find(id);
  if (it == cands_.end() || it->second.done || it->second.ticket != ticket) return nullptr;
  return &it->second;
}

std::string pipeline_ledger::stage_name(const candidate_entry& c) const {
  return c.stage < options_.pipeline.size() ? options_.pipeline[c.stage] : std::string(stage_scored);
}

ledger_commands pipeline_ledger::dispatch(const std::string& candidate_id) {
  ledger_commands out;
  auto it = cands_.find(candidate_id);
  if (it == cands_.end() || it->second.done) return out;
  run_stage(candidate_id, out);
  return out;
}

void pipeline_ledger::run_stage(const std::string& id, ledger_commands& out) {
  auto& c = cands_.at(id);
  if (c.done) return;
  if (c.stage >= options_.pipeline.size()) return finish(id, out);
  const std::string& stage = options_.pipeline[c.stage];
  // Without an artifact there is nothing to run: benchmarking is skipped, the verifier records why.
  if (stage == "benchmark" && !c.scored.compiled.ok) {
    c.scored.bench.candidate_id = id;
    c.scored.bench.task = c.scored.cand.task;
    c.scored.bench.status = "error";
    c.scored.bench.error = "not compiled";
    return advance(id, out);
  }
  ++c.attempts;
  c.ticket = ++next_ticket_;
  auto cmd = candidate_command(ledger_action::dispatch, false, c.scored.cand, stage);
  cmd.ticket = c.ticket;
  out.push_back(std::move(cmd));
}

void pipeline_ledger::advance(const std::string& id, ledger_commands& out) {
  auto& c = cands_.at(id);
  ++c.stage;
  c.attempts = 0;
  c.ticket = 0;
  out.push_back(candidate_command(ledger_action::progress, false, c.scored.cand, stage_name(c)));
  run_stage(id, out);
}

ledger_commands pipeline_ledger::unserved(const std::string& candidate_id, uint64_t ticket) {
  ledger_commands out;
  auto* c = live(candidate_id, ticket);
  if (!c) return out;
  --c->attempts;
  c->ticket = 0;  // nothing was sent under it
  out.push_back(candidate_command(ledger_action::dispatch, true, c->scored.cand, stage_name(*c)));
  return out;
}

ledger_commands pipeline_ledger::answered(const std::string& candidate_id, uint64_t ticket,
                                          scored_candidate result) {
  ledger_commands out;
  auto* c = live(candidate_id, ticket);
  if (!c) {
    ++counts_.stale_answers;
    return out;
  }
  c->scored = std::move(result);
  advance(candidate_id, out);
  return out;
}

ledger_commands pipeline_ledger::failed(const std::string& candidate_id, uint64_t ticket,
                                        const std::string& why) {
  ledger_commands out;
  auto* c = live(candidate_id, ticket);
  if (!c) return out;
  const std::string stage = stage_name(*c);
  c->ticket = 0;  // a late answer to the failed dispatch is stale
  if (c->attempts >= options_.max_attempts) {
    give_up(candidate_id,
            "stage " + stage + " failed " + std::to_string(c->attempts) + " times, last: " + why, out);
    return out;
  }
  ++counts_.redispatched;
  out.push_back(candidate_command(ledger_action::dispatch, true, c->scored.cand, stage));
  return out;
}

// A stage that cannot be completed: the candidate is scored as an error (reward 0) rather than lost, and the
// reason is kept as evidence beside what earlier stages found.
void pipeline_ledger::give_up(const std::string& id, const std::string& why, ledger_commands& out) {
  auto& c = cands_.at(id);
  auto earlier = std::move(c.scored.judged.evidence);
  c.scored.judged = kernels::pipeline_error_verdict(id, c.scored.cand.content_hash, why);
  c.scored.judged.evidence.insert(c.scored.judged.evidence.begin(), earlier.begin(), earlier.end());
  c.stage = options_.pipeline.size();
  out.push_back(candidate_command(ledger_action::progress, false, c.scored.cand, stage_scored));
  finish(id, out);
}

void pipeline_ledger::finish(const std::string& id, ledger_commands& out) {
  auto& c = cands_.at(id);
  if (c.done) return;
  c.done = true;
  c.ticket = 0;
  ++counts_.scored;
  c.scored.reward = c.scored.judged.reward;
  if (kernels::has_outcome(c.scored.judged, kernels::outcome::pass)) {
    auto& b = best_[c.scored.cand.task];
    b = std::max(b, c.scored.judged.speedup);
  }
  auto git = groups_.find(c.scored.cand.group_id);
  if (git == groups_.end()) return;
  auto& g = git->second;
  if (g.remaining > 0 && --g.remaining == 0 && g.state == group_state::running) {
    g.state = group_state::storing;
    out.push_back(store_command(false, git->first, g.task, g.partial));
  }
}

ledger_commands pipeline_ledger::stored(const std::string& group_id) {
  ledger_commands out;
  auto it = groups_.find(group_id);
  if (it == groups_.end() || it->second.state != group_state::storing) return out;
  for (const auto& id : it->second.ids) cands_.erase(id);
  groups_.erase(it);
  auto more = fill();
  out.insert(out.end(), more.begin(), more.end());
  maybe_stopped(out);
  return out;
}

ledger_commands pipeline_ledger::store_failed(const std::string& group_id) {
  auto it = groups_.find(group_id);
  if (it == groups_.end() || it->second.state != group_state::storing) return {};
  return {store_command(true, group_id, it->second.task, it->second.partial)};
}

void pipeline_ledger::drop_group(const std::string& group_id, ledger_commands& out) {
  groups_.erase(group_id);
  auto more = fill();
  out.insert(out.end(), more.begin(), more.end());
  maybe_stopped(out);
}

void pipeline_ledger::maybe_stopped(ledger_commands& out) const {
  if (stopping_ && groups_.empty()) out.push_back(group_command(ledger_action::stopped, false, {}, {}));
}

ledger_commands pipeline_ledger::stop() {
  ledger_commands out;
  stopping_ = true;
  maybe_stopped(out);
  return out;
}

ledger_commands pipeline_ledger::grace_over() {
  ledger_commands out;
  std::vector<std::string> generating;
  for (auto& [gid, g] : groups_) {
    // A group still being generated has no candidate yet; one being stored is complete.
    if (g.state == group_state::generating) {
      generating.push_back(gid);
      continue;
    }
    if (g.state == group_state::storing) continue;
    for (const auto& id : g.ids) {
      auto& c = cands_.at(id);
      if (c.done) continue;
      c.done = true;
      c.ticket = 0;
      std::string stage = options_.pipeline.empty()
                              ? std::string(stage_scored)
                              : options_.pipeline[std::min(c.stage, options_.pipeline.size() - 1)];
      c.scored.judged = kernels::abandoned_verdict(id, c.scored.cand.content_hash, stage);
      c.scored.reward = 0.0;
      ++counts_.abandoned;
    }
    // A group still being recorded is stored whole, which records it too.
    g.remaining = 0;
    g.partial = true;
    g.state = group_state::storing;
    out.push_back(store_command(false, gid, g.task, true));
  }
  for (const auto& gid : generating) groups_.erase(gid);
  maybe_stopped(out);
  return out;
}

ledger_commands pipeline_ledger::restore(std::vector<scored_group> groups,
                                         const std::map<std::string, double>& best) {
  ledger_commands out;
  for (const auto& [task, s] : best) best_[task] = std::max(best_[task], s);
  for (auto& sg : groups) {
    if (groups_.count(sg.group_id) || sg.members.empty()) continue;
    bool known_task =
        std::find(options_.tasks.begin(), options_.tasks.end(), sg.task) != options_.tasks.end();
    group_entry g;
    g.task = sg.task;
    g.policy_version = sg.policy_version;
    g.created_unix = sg.created_unix;
    g.state = group_state::running;
    std::vector<std::string> to_run;
    for (size_t i = 0; i < sg.members.size(); ++i) {
      auto& m = sg.members[i];
      std::string id = m.cand.id;
      if (cands_.count(id)) continue;
      std::string stage = i < sg.stages.size() ? sg.stages[i] : std::string();
      candidate_entry e;
      e.scored = std::move(m);
      ++counts_.generated;
      ++counts_.restored;
      g.ids.push_back(id);
      if (!known_task) {
        // The resumed run does not have the task any more: nothing could run its stages.
        e.done = true;
        e.scored.judged = kernels::abandoned_verdict(id, e.scored.cand.content_hash, stage);
        e.scored.judged.evidence.push_back("task " + sg.task + " is not among the resumed run's tasks");
        e.scored.reward = 0.0;
        ++counts_.abandoned;
        g.partial = true;
      } else if (stage == stage_scored) {
        e.stage = options_.pipeline.size();
        e.done = true;
        e.scored.reward = e.scored.judged.reward;
        ++counts_.scored;
        if (kernels::has_outcome(e.scored.judged, kernels::outcome::pass)) {
          auto& b = best_[e.scored.cand.task];
          b = std::max(b, e.scored.judged.speedup);
        }
      } else {
        auto at = std::find(options_.pipeline.begin(), options_.pipeline.end(), stage);
        if (at == options_.pipeline.end()) {
          // Its stage is not in this pipeline (the config changed): it runs the whole pipeline again.
          candidate cand = std::move(e.scored.cand);
          e.scored = scored_candidate();
          e.scored.cand = std::move(cand);
          e.stage = 0;
        } else {
          e.stage = static_cast<size_t>(at - options_.pipeline.begin());
        }
        ++g.remaining;
        to_run.push_back(id);
      }
      cands_[id] = std::move(e);
    }
    if (g.ids.empty()) continue;
    std::string gid = sg.group_id;
    bool complete = g.remaining == 0;
    groups_[gid] = std::move(g);
    if (complete) {
      groups_[gid].state = group_state::storing;
      out.push_back(store_command(false, gid, groups_[gid].task, groups_[gid].partial));
    }
    for (const auto& id : to_run) run_stage(id, out);
  }
  return out;
}

scored_group pipeline_ledger::header_of(const std::string& group_id) const {
  scored_group sg;
  auto it = groups_.find(group_id);
  if (it == groups_.end()) return sg;
  sg.group_id = group_id;
  sg.task = it->second.task;
  sg.policy_version = it->second.policy_version;
  sg.created_unix = it->second.created_unix;
  return sg;
}

scored_group pipeline_ledger::record_of(const std::string& group_id,
                                        const std::vector<std::string>& ids) const {
  scored_group sg = header_of(group_id);
  auto it = groups_.find(group_id);
  if (it == groups_.end()) return sg;
  for (const auto& id : ids.empty() ? it->second.ids : ids) {
    auto c = cands_.find(id);
    if (c == cands_.end()) continue;
    sg.members.push_back(c->second.scored);
    sg.stages.push_back(c->second.done ? std::string(stage_scored) : stage_name(c->second));
  }
  return sg;
}

scored_group pipeline_ledger::group_of(const std::string& group_id, bool partial) const {
  scored_group sg = header_of(group_id);
  auto it = groups_.find(group_id);
  if (it == groups_.end()) return sg;
  sg.partial = partial;
  for (const auto& id : it->second.ids) sg.members.push_back(cands_.at(id).scored);
  return sg;
}

const scored_candidate* pipeline_ledger::candidate_of(const std::string& candidate_id) const {
  auto it = cands_.find(candidate_id);
  return it == cands_.end() ? nullptr : &it->second.scored;
}

double pipeline_ledger::best(const std::string& task) const {
  auto it = best_.find(task);
  return it == best_.end() ? 0.0 : it->second;
}

}  // namespace crucible::runtime
