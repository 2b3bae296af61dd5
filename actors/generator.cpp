#include <fstream>
#include <optional>
#include <sstream>

#include <spdlog/spdlog.h>
#include <caf/all.hpp>

#include "actors/options/generator_section.hpp"
#include "actors/policy_options_of.hpp"
#include "actors/roles.hpp"
#include "messages/content_hash.hpp"
#include "messages/type_ids.hpp"
#include "policies/policy_factory.hpp"
#include "runtime/config/run_context.hpp"
#include "runtime/hosting/actor_failures.hpp"

namespace crucible::actors {
namespace {

struct generator_state {
  std::unique_ptr<policies::policy> policy;
  std::string policy_error;  // why there is no policy (answered to every generate request)
  int64_t version = 0;
  // The newest weights announced and not yet loaded: loaded before the next sample, so updates queued while
  // a long sample ran cost one load, not one each (and a file the learner has since replaced is never read).
  std::optional<weights_update> pending;
  uint64_t seed = 0;
  static inline const char* name = "generator";
};

expected<std::vector<char>> weights_of(const weights_update& w) {
  if (w.path.empty()) return w.bytes;
  std::ifstream in(w.path, std::ios::binary);
  if (!in) return make_error("cannot read the weights file " + w.path);
  std::ostringstream s;
  s << in.rdbuf();
  const std::string text = s.str();
  return std::vector<char>(text.begin(), text.end());
}

caf::behavior generator(caf::stateful_actor<generator_state>* self, runtime::role_context ctx) {
  runtime::log_failures(self, "generator #" + std::to_string(ctx.index));
  const auto& cfg = ctx.run->cfg;
  // Each generator samples its own stream; weights arrive from the learner (version 0 until then is the
  // same initialisation the learner starts from, since both use run.seed).
  auto options = policy_options_of(cfg, false);
  auto made = options ? policies::make_policy(*options, static_cast<uint64_t>(cfg.run.seed))
                      : expected<std::unique_ptr<policies::policy>>(options.err());
  if (made) {
    self->state.policy = std::move(*made);
    self->state.policy->set_interrupt([stopping = ctx.run->stopping] { return stopping->load(); });
  } else {
    self->state.policy_error = made.message();
    spdlog::error("generator #{}: {}", ctx.index, made.message());
  }
  self->state.seed =
      static_cast<uint64_t>(cfg.run.seed) * 1000003u + static_cast<uint64_t>(ctx.index) * 7919u;
  auto run = ctx.run;
  return {
      [=](const weights_update& w) {
        if (!self->state.policy) return;
        if (w.version <= self->state.version && self->state.version != 0) return;
        if (!self->state.pending || w.version > self->state.pending->version) self->state.pending = w;
      },
      [=](generate_atom, const prompt& p) -> caf::result<std::vector<candidate>> {
        if (!self->state.policy) return caf::make_error(caf::sec::runtime_error, self->state.policy_error);
        if (auto w = std::move(self->state.pending)) {
          self->state.pending.reset();
          auto bytes = weights_of(*w);
          auto st = bytes ? self->state.policy->load_weights(*bytes) : status(bytes.err());
          if (st)
            self->state.version = w->version;
          else
            spdlog::error("generator #{}: weights v{} rejected: {}", ctx.index, w->version, st.message());
        }
        auto samples = self->state.policy->sample(
            p, p.group_size, run->cfg.section<generator_section>().temperature, self->state.seed++);
        if (!samples) return caf::make_error(caf::sec::invalid_argument, samples.message());
        std::vector<candidate> out;
        double now = runtime::unix_now();
        for (size_t i = 0; i < samples->size(); ++i) {
          auto& s = (*samples)[i];
          candidate c;
          c.id = p.group_id + "-" + std::to_string(i);
          c.group_id = p.group_id;
          c.task = p.task.name;
          c.target = p.target;
          c.language = !p.task.module.empty() ? "py" : p.target == "cuda" ? "cu" : "cpp";
          c.program = std::move(s.program);
          c.source = std::move(s.source);
          c.answer = std::move(s.answer);
          c.format_error = std::move(s.format_error);
          // An answer without code is named by its text (it never reaches the compiler's cache).
          c.content_hash = sha256_hex(c.format_error.empty() ? c.source : c.answer);
          c.policy_version = self->state.version;
          c.tokens = std::move(s.tokens);
          c.logprobs = std::move(s.logprobs);
          c.context = std::move(s.context);
          c.created_unix = now;
          out.push_back(std::move(c));
        }
        return out;
      },
  };
}

}  // namespace

caf::actor spawn_generator(caf::actor_system& sys, const runtime::role_context& ctx) {
  return sys.spawn<caf::detached>(generator, ctx);
}

}  // namespace crucible::actors
