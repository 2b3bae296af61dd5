#include "kernels/program/program_space.hpp"

#include "kernels/program/group_kinds.hpp"
#include "kernels/program/rewrites.hpp"
#include "kernels/task/op_catalog.hpp"

namespace crucible::kernels {

struct program_builder::state {
  enum class phase { rewrite, fuse, strategy, knob, done };
  task_spec task;
  std::string target;
  rewritten_chain chain;
  phase ph = phase::rewrite;
  size_t rewrite = 0;  // catalogue index of the pending rewrite
  std::vector<std::string> applied;
  int op = 1;  // fuse phase: the op whose split|fuse is pending
  std::vector<group_plan> groups;
  size_t group = 0;  // strategy/knob phase: the pending group
  std::vector<knob_slot> knobs;
  size_t knob = 0;
  decision pending;

  // Moves to the next pending decision (skipping rewrites that do not match), or to done.
  void advance() {
    const auto& rewrites = rewrite_catalog();
    if (ph == phase::rewrite) {
      while (rewrite < rewrites.size() && !rewrites[rewrite].matches(chain, task)) ++rewrite;
      if (rewrite < rewrites.size()) {
        pending = {"rewrite:" + rewrites[rewrite].name, {"no", "yes"}};
        return;
      }
      ph = phase::fuse;
      groups = {group_plan{0, 0, {}, {}}};
      op = 1;
    }
    if (ph == phase::fuse) {
      if (op < static_cast<int>(chain.ops.size())) {
        pending.slot = "fuse:" + chain.ops[op].op;
        pending.options = {"split"};
        if (can_fuse(chain, groups.back().first, op, target)) pending.options.push_back("fuse");
        return;
      }
      ph = phase::strategy;
      group = 0;
    }
    for (;;) {
      if (ph == phase::knob) {
        if (knob < knobs.size()) {
          pending = {"knob:" + knobs[knob].name, knobs[knob].options};
          return;
        }
        ++group;
        ph = phase::strategy;
      }
      if (group >= groups.size()) {
        ph = phase::done;
        pending = {};
        return;
      }
      const auto& g = groups[group];
      pending = {std::string("strategy:") + to_string(group_kind_of(chain, g.first, g.last)),
                 group_strategies(chain, g.first, g.last, target)};
      return;
    }
  }

  void take(const std::string& option) {
    switch (ph) {
      case phase::rewrite:
        if (option == "yes") {
          rewrite_catalog()[rewrite].apply(chain, task);
          applied.push_back(rewrite_catalog()[rewrite].name);
        }
        ++rewrite;
        break;
      case phase::fuse:
        if (option == "fuse")
          groups.back().last = op;
        else
          groups.push_back(group_plan{op, op, {}, {}});
        ++op;
        break;
      case phase::strategy: {
        auto& g = groups[group];
        g.strategy = option;
        knobs = group_knobs(chain, g.first, g.last, option, target);
        knob = 0;
        ph = phase::knob;
        break;
      }
      case phase::knob:
        groups[group].knobs[knobs[knob].name] = option;
        ++knob;
        break;
      case phase::done:
        break;
    }
    advance();
  }
};

program_builder::program_builder(std::shared_ptr<state> s) : state_(std::move(s)) {}
program_builder::program_builder(const program_builder& o)
    : state_(std::make_shared<state>(*o.state_)), chosen_(o.chosen_) {}
program_builder& program_builder::operator=(const program_builder& o) {
  if (this != &o) {
    state_ = std::make_shared<state>(*o.state_);
    chosen_ = o.chosen_;
  }
  return *this;
}
program_builder::~program_builder() = default;

expected<program_builder> program_builder::create(const task_spec& task, std::string_view target) {
  auto chain = chain_of_task(task, target);
  if (!chain) return chain.err();
  auto s = std::make_shared<state>();
  s->task = task;
  s->target = std::string(target);
  s->chain = std::move(*chain);
  s->advance();
  return program_builder(std::move(s));
}

bool program_builder::done() const {
  return state_->ph == state::phase::done;
}

const decision& program_builder::next() const {
  return state_->pending;
}

status program_builder::choose(const std::string& option) {
  if (done()) return make_error("program builder: the program is complete; no decision is pending");
  const auto& d = state_->pending;
  bool legal = false;
  for (const auto& o : d.options) legal |= o == option;
  if (!legal) {
    std::string opts;
    for (const auto& o : d.options) opts += (opts.empty() ? "" : "|") + o;
    return make_error("program builder: '" + option + "' is not an option of " + d.slot + " (" + opts + ")");
  }
  chosen_.push_back(d.slot + "=" + option);
  state_->take(option);
  return {};
}

program program_builder::result() const {
  return program{state_->applied, state_->groups};
}

expected<std::vector<std::pair<decision, std::string>>> decisions_of(const task_spec& task, const program& p,
                                                                     std::string_view target) {
  auto b = program_builder::create(task, target);
  if (!b) return b.err();
  std::vector<std::pair<decision, std::string>> out;
  size_t next_rewrite = 0;
  int fuse_op = 1;
  int group = -1;
  while (!b->done()) {
    const decision d = b->next();
    std::string option;
    auto colon = d.slot.find(':');
    const std::string kind = d.slot.substr(0, colon), name = d.slot.substr(colon + 1);
    if (kind == "rewrite") {
      option = next_rewrite < p.rewrites.size() && p.rewrites[next_rewrite] == name ? "yes" : "no";
      if (option == "yes") ++next_rewrite;
    } else if (kind == "fuse") {
      option = "fuse";
      for (const auto& g : p.groups)
        if (g.first == fuse_op) option = "split";
      ++fuse_op;
    } else if (kind == "strategy") {
      if (next_rewrite < p.rewrites.size())
        return make_error("program: rewrite '" + p.rewrites[next_rewrite] +
                          "' does not match the chain here (unknown, out of catalogue order, or no match)");
      ++group;
      if (group >= static_cast<int>(p.groups.size()))
        return make_error("program: the groups do not cover the rewritten chain (" +
                          std::to_string(p.groups.size()) + " groups given)");
      option = p.groups[group].strategy;
    } else {
      const auto& knobs = p.groups[group].knobs;
      auto it = knobs.find(name);
      if (it == knobs.end())
        return make_error("program: group " + std::to_string(group) + " (" + p.groups[group].strategy +
                          ") lacks knob '" + name + "'");
      option = it->second;
    }
    if (auto st = b->choose(option); !st) {
      std::string where = kind == "fuse" ? " (op " + std::to_string(fuse_op - 1) + " of the rewritten chain)"
                          : group >= 0   ? " (group " + std::to_string(group) + ")"
                                         : "";
      return make_error(st.message() + where);
    }
    out.emplace_back(d, option);
  }
  if (next_rewrite < p.rewrites.size())
    return make_error("program: rewrite '" + p.rewrites[next_rewrite] + "' does not match the chain here");
  const program got = b->result();
  if (!(got == p)) {
    if (got.groups.size() != p.groups.size())
      return make_error("program: " + std::to_string(p.groups.size()) + " groups given, but they cut the " +
                        "rewritten chain into " + std::to_string(got.groups.size()));
    for (size_t i = 0; i < p.groups.size(); ++i) {
      if (got.groups[i].first != p.groups[i].first || got.groups[i].last != p.groups[i].last)
        return make_error("program: group " + std::to_string(i) + " does not tile the rewritten chain");
      if (got.groups[i].knobs != p.groups[i].knobs)
        return make_error("program: group " + std::to_string(i) + " has knobs its strategy does not take");
    }
    return make_error("program: not in the task's space");
  }
  return out;
}

status validate_program(const task_spec& task, const program& p, std::string_view target) {
  auto d = decisions_of(task, p, target);
  if (!d) return d.err();
  return {};
}

program eager_program(const task_spec& task, std::string_view target) {
  if (target.empty()) target = task.targets.empty() ? std::string_view("cpu") : task.targets.front();
  auto b = program_builder::create(task, target);
  if (!b) return {};
  while (!b->done()) {
    const auto& d = b->next();
    const bool rewrite = d.slot.rfind("rewrite:", 0) == 0;
    b->choose(rewrite ? std::string("no") : d.options.front());
  }
  return b->result();
}

program random_program(const task_spec& task, std::mt19937_64& rng, std::string_view target) {
  auto b = program_builder::create(task, target);
  if (!b) return {};
  while (!b->done()) {
    const auto& opts = b->next().options;
    b->choose(opts[std::uniform_int_distribution<size_t>(0, opts.size() - 1)(rng)]);
  }
  return b->result();
}

namespace {

// rewrites, fuse:<op> for every op the target emits (catalogue order, then the derived ops), strategies,
// knobs. Only ever-head ops (gemm-like) have fuse:<op>=split alone.
program_vocabulary make_vocabulary(std::string_view target) {
  program_vocabulary v;
  auto add = [&v](const std::string& slot, const std::vector<std::string>& options) {
    v.slots.push_back(slot);
    for (const auto& o : options) v.choices.push_back(slot + "=" + o);
  };
  const std::vector<std::string> split = {"split"}, both = {"split", "fuse"};
  for (const auto& r : rewrite_catalog()) add("rewrite:" + r.name, {"no", "yes"});
  for (const auto& op : op_catalog()) {
    if (target == "cpu" && !cpu_emits_op(op.name)) continue;  // the CPU vocabulary never changes
    switch (kind_of(chain_op{op.name, {}, {}, {}})) {
      case chain_op_kind::gemm:
      case chain_op_kind::gemv:
      case chain_op_kind::bmm:
      case chain_op_kind::attention:
      case chain_op_kind::conv:
      case chain_op_kind::pool:
        add("fuse:" + op.name, split);
        break;
      default:
        add("fuse:" + op.name, both);
    }
  }
  add("fuse:" + std::string(affine_op), both);
  add("fuse:" + std::string(matmul_rowsum_op), split);
  for (const auto& [kind, strategies] : all_strategies(target))
    add(std::string("strategy:") + to_string(kind), strategies);
  for (const auto& k : all_knobs(target)) add("knob:" + k.name, k.options);
  return v;
}

}  // namespace

const program_vocabulary& vocabulary(std::string_view target) {
  static const program_vocabulary cpu = make_vocabulary("cpu");
  static const program_vocabulary cuda = make_vocabulary("cuda");
  static const program_vocabulary none;
  return target == "cpu" ? cpu : target == "cuda" ? cuda : none;
}

}  // namespace crucible::kernels
