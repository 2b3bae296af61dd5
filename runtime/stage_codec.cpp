#include "runtime/stage_codec.hpp"

#include <algorithm>

#include "kernels/verify/verdict_vocabulary.hpp"
#include "messages/envelope.hpp"
#include "runtime/pipeline_stages.hpp"

namespace crucible::runtime {

work_item encode_stage_work(const std::string& stage, const std::string& role, const scored_candidate& s,
                            double best_seen, double timeout_s, int attempt) {
  work_item w;
  w.role = role;
  w.stage = stage;
  w.timeout_s = timeout_s;
  w.attempt = attempt;
  w.payload.push_back(encode_embedded(s, "head"));
  w.payload.push_back(encode_embedded(s.cand, "head"));
  if (stage != "compile") w.payload.push_back(encode_embedded(s.compiled, "head"));
  if (stage != "compile" && stage != "benchmark") w.payload.push_back(encode_embedded(s.bench, "head"));
  if (stage == "benchmark") w.args["best_seen"] = best_seen;
  return w;
}

expected<stage_request> decode_stage_work(const work_item& item) {
  for (const auto& bytes : item.payload) {
    auto env = decode(std::string_view(bytes.data(), bytes.size()));
    if (!env) return make_error("work " + std::to_string(item.request_id) + ": " + env.message());
    if (env->kind != message_kind<scored_candidate>::name) continue;
    auto s = env->as<scored_candidate>();
    if (!s) return make_error("work " + std::to_string(item.request_id) + ": " + s.message());
    stage_request r;
    r.stage = item.stage;
    r.scored = std::move(*s);
    if (auto it = item.args.find("best_seen"); it != item.args.end()) r.best_seen = it->second;
    return r;
  }
  return make_error("work " + std::to_string(item.request_id) + ": no scored_candidate in its payload");
}

status apply_stage_result(const std::string& stage, const work_result& result, scored_candidate& s) {
  if (result.status != "ok")
    return make_error("stage " + stage + " on a node: " + result.status +
                      (result.error.empty() ? "" : ": " + result.error));
  if (result.payload.empty()) return make_error("stage " + stage + " on a node: an answer without a payload");
  const auto& bytes = result.payload.front();
  auto env = decode(std::string_view(bytes.data(), bytes.size()));
  if (!env) return make_error("stage " + stage + " on a node: " + env.message());
  auto take = [&](auto& into) -> status {
    using T = std::decay_t<decltype(into)>;
    if (env->kind != message_kind<T>::name)
      return make_error("stage " + stage + " on a node answered a '" + env->kind + "', expected '" +
                        message_kind<T>::name + "'");
    auto v = env->as<T>();
    if (!v) return make_error("stage " + stage + " on a node: " + v.message());
    into = std::move(*v);
    return {};
  };
  if (stage == "compile") return take(s.compiled);
  if (stage == "benchmark") return take(s.bench);
  // Verdicts are the head's: a node never serves verify (its ready is refused), and an answer that says
  // otherwise is not believed.
  if (stage_stays_on_head(stage))
    return make_error("stage " + stage + " on a node: it gives verdicts, and those are made on the head");
  // A custom stage's answer is a second opinion: it convicts but never acquits, and never pays more. A pass
  // keeps the verdict the candidate already has (its evidence, flags and review added); anything else
  // replaces it, the earlier evidence kept, at no more reward or speedup than before. What the head
  // measured or holds (candidate, compile result, benchmark, reward) is never taken from the wire.
  verdict v;
  if (env->kind == message_kind<scored_candidate>::name) {
    scored_candidate amended;
    if (auto st = take(amended); !st) return st;
    v = std::move(amended.judged);
  } else if (auto st = take(v); !st) {
    return st;
  }
  if (s.judged.outcome.empty()) {
    // Before verify: the head's verifier decides later; until then the opinion is all the candidate has.
    s.judged = std::move(v);
  } else if (kernels::has_outcome(v, kernels::outcome::pass)) {
    // An amended scored_candidate echoes the verdict it was sent: only what it adds is new.
    auto add_new = [](std::vector<std::string>& into, std::vector<std::string>& from) {
      for (auto& x : from)
        if (std::find(into.begin(), into.end(), x) == into.end()) into.push_back(std::move(x));
    };
    add_new(s.judged.evidence, v.evidence);
    add_new(s.judged.flags, v.flags);
    if (!v.review.finding.empty()) s.judged.review = std::move(v.review);  // a review is stored with it
  } else {
    const double reward = s.judged.reward, speedup = s.judged.speedup;
    auto earlier = std::move(s.judged.evidence);
    s.judged = std::move(v);
    s.judged.evidence.insert(s.judged.evidence.begin(), earlier.begin(), earlier.end());
    s.judged.reward = std::min(s.judged.reward, reward);
    s.judged.speedup = std::min(s.judged.speedup, speedup);
  }
  return {};
}

}  // namespace crucible::runtime
