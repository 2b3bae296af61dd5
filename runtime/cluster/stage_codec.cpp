#include "runtime/cluster/stage_codec.hpp"

#include <algorithm>

#include "kernels/verify/verdict_vocabulary.hpp"
#include "messages/envelope.hpp"
#include "runtime/pipeline/pipeline_stages.hpp"

namespace crucible::runtime {

work_item encode_stage_work(const stage_request& req, const std::string& role, double timeout_s,
                            int attempt) {
  const std::string& stage = req.stage;
  const scored_candidate& s = req.scored;
  work_item w;
  w.role = role;
  w.stage = stage;
  w.timeout_s = timeout_s;
  w.attempt = attempt;
  // The pieces each stage reads, by the slot it fills: a compile reads the candidate, a benchmark also its
  // compile result, everything after also the benchmark.
  const stage_slot slot = stage_info_of(stage).slot;
  w.payload.push_back(encode_embedded(s, "head"));
  w.payload.push_back(encode_embedded(s.cand, "head"));
  if (slot != stage_slot::compiled) w.payload.push_back(encode_embedded(s.compiled, "head"));
  if (slot != stage_slot::compiled && slot != stage_slot::bench)
    w.payload.push_back(encode_embedded(s.bench, "head"));
  if (slot == stage_slot::bench) w.args["best_seen"] = req.best_seen;
  return w;
}

work_result encode_stage_answer(const work_item& item, const scored_candidate& answer) {
  work_result out;
  out.request_id = item.request_id;
  switch (stage_info_of(item.stage).slot) {
    case stage_slot::compiled:
      out.payload.push_back(encode_embedded(answer.compiled, "node"));
      break;
    case stage_slot::bench:
      out.payload.push_back(encode_embedded(answer.bench, "node"));
      break;
    case stage_slot::judged:
      out.payload.push_back(encode_embedded(answer.judged, "node"));
      break;
    case stage_slot::whole:
      out.payload.push_back(encode_embedded(answer, "node"));
      break;
  }
  return out;
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
  const stage_info info = stage_info_of(stage);
  // Verdicts are the head's: a node never serves verify or the judge (its ready is refused), and an answer
  // that says otherwise is not believed.
  if (info.head_only)
    return make_error("stage " + stage + " on a node: it gives verdicts, and those are made on the head");
  if (info.slot == stage_slot::compiled) return take(s.compiled);
  if (info.slot == stage_slot::bench) return take(s.bench);
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
