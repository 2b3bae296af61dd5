#include "runtime/stage_codec.hpp"
#include "kernels/verify/verdict_vocabulary.hpp"

#include "messages/envelope.hpp"

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
  if (stage == "verify") return take(s.judged);
  if (env->kind == message_kind<verdict>::name) {
    // A second opinion convicts but never acquits: a pass keeps the verdict the candidate already has (its
    // evidence added); anything else replaces it, the earlier evidence kept.
    verdict v;
    if (auto st = take(v); !st) return st;
    if (s.judged.outcome.empty()) {
      s.judged = std::move(v);
    } else if (kernels::has_outcome(v, kernels::outcome::pass)) {
      for (auto& e : v.evidence) s.judged.evidence.push_back(std::move(e));
      for (auto& f : v.flags) s.judged.flags.push_back(std::move(f));
      if (!v.review.finding.empty()) s.judged.review = std::move(v.review);  // a review is stored with it
    } else {
      auto earlier = std::move(s.judged.evidence);
      s.judged = std::move(v);
      s.judged.evidence.insert(s.judged.evidence.begin(), earlier.begin(), earlier.end());
    }
    return {};
  }
  return take(s);
}

}  // namespace crucible::runtime
