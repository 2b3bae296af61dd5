// A mutational fuzzer of the wire decoder: every golden frame (tests/data/messages), mutated the ways hostile
// or broken peers corrupt frames (bit flips, msgpack type and length markers, truncation, insertion,
// deletion, splices of two frames), plus random bytes, decoded as an envelope and, when that works, as the
// message its kind names and as two other kinds. Embedded envelopes (work / work_result payloads) are decoded
// too.
//
//   envelope_fuzz INPUTS [SEED] [FRAMES_DIR]
//
// What it checks: decode() and as<T>() return errors and never throw; a frame that decodes re-encodes to
// bytes that decode again to the same bytes (encode is a fixed point after one round). Built with
// AddressSanitizer and UndefinedBehaviorSanitizer (tests/CMakeLists.txt), it also finds memory errors and
// undefined behaviour. Exit 0 with a summary line, 1 on a finding (printed with the input in hex).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "messages/envelope.hpp"

namespace {

using namespace crucible;

struct counts {
  uint64_t inputs = 0, envelopes = 0, bodies = 0, embedded = 0, errors = 0;
  std::map<std::string, uint64_t> decoded_by_kind;
};

[[noreturn]] void finding(const std::string& what, const std::string& input) {
  std::fprintf(stderr, "FINDING: %s\ninput (%zu bytes):", what.c_str(), input.size());
  for (unsigned char c : input) std::fprintf(stderr, " %02x", c);
  std::fprintf(stderr, "\n");
  std::exit(1);
}

void decode_frame(const std::string& bytes, counts& n, int depth);

// The body as T; where it converts, the round trip: T re-encoded must decode and re-encode to the same bytes.
template <class T>
void try_kind(const envelope& env, const std::string& input, counts& n, int depth) {
  expected<T> msg = env.template as<T>();
  if (!msg) return;
  ++n.bodies;
  ++n.decoded_by_kind[message_kind<T>::name];
  const std::string once = encode(*msg, env.from);
  auto again = decode_as<T>(once);
  if (!again)
    finding(std::string("a decoded '") + message_kind<T>::name +
                "' does not decode after re-encoding: " + again.message(),
            input);
  if (encode(*again, env.from) != once)
    finding(std::string("a decoded '") + message_kind<T>::name + "' re-encodes differently the second time",
            input);
  if constexpr (std::is_same_v<T, work_item> || std::is_same_v<T, work_result>) {
    if (depth < 2)
      for (const auto& p : msg->payload) {
        ++n.embedded;
        decode_frame(std::string(p.begin(), p.end()), n, depth + 1);
      }
  }
}

template <class... T>
void try_every_kind(const envelope& env, const std::string& input, counts& n, int depth) {
  (try_kind<T>(env, input, n, depth), ...);
}

void decode_frame(const std::string& bytes, counts& n, int depth) {
  expected<envelope> env = [&]() -> expected<envelope> {
    try {
      return decode(bytes);
    } catch (const std::exception& e) {
      finding(std::string("decode threw: ") + e.what(), bytes);
    } catch (...) {
      finding("decode threw a non-standard exception", bytes);
    }
  }();
  if (!env) {
    ++n.errors;
    if (env.message().empty()) finding("decode failed without saying why", bytes);
    return;
  }
  ++n.envelopes;
  // as<T> checks the kind first. The body is converted as the kind it names and as two kinds drawn from the
  // frame's bytes (the kind overwritten in a copy), so each struct's conversion meets every body shape.
  const auto& kinds = known_kinds();
  const size_t h = std::hash<std::string>{}(bytes);
  const std::string tries[] = {env->kind, kinds[h % kinds.size()], kinds[(h / kinds.size()) % kinds.size()]};
  for (const auto& kind : tries) {
    envelope e = *env;
    e.kind = kind;
    try {
      try_every_kind<task_spec, prompt, candidate, compile_result, bench_result, eval_request, verdict,
                     scored_candidate, scored_group, group_batch, weights_update, control, status_report,
                     peer_ready, peer_registered, heartbeat, work_item, work_result, work_credit,
                     peer_disconnect, wire_error>(e, bytes, n, depth);
    } catch (const std::exception& ex) {
      finding(std::string("as<") + kind + "> threw: " + ex.what(), bytes);
    }
  }
}

// Bytes that mean something to msgpack: type markers with 8/16/32-bit lengths, fixmap/fixarray/fixstr
// headers, nil/bool, and the extremes of integers.
constexpr uint8_t markers[] = {0x00, 0x01, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc2,
                               0xc3, 0xc4, 0xc5, 0xc6, 0xca, 0xcb, 0xcc, 0xcd, 0xce, 0xcf, 0xd0,
                               0xd3, 0xd9, 0xda, 0xdb, 0xdc, 0xdd, 0xde, 0xdf, 0xe0, 0xff};

std::string mutate(std::string s, const std::vector<std::string>& frames, std::mt19937_64& rng) {
  auto pick = [&](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  int edits = 1;  // mostly one or two, so most inputs stay close enough to a frame to reach the bodies
  while (edits < 8 && rng() % 2) ++edits;
  for (int k = 0; k < edits; ++k) {
    switch (rng() % 9) {
      case 0:  // flip a bit
        if (!s.empty()) s[pick(s.size())] ^= static_cast<char>(1u << (rng() % 8));
        break;
      case 1:  // a msgpack marker in place of a byte
        if (!s.empty()) s[pick(s.size())] = static_cast<char>(markers[pick(sizeof markers)]);
        break;
      case 2:  // a length field claiming the maximum (0xff runs after a marker)
        if (s.size() > 4) {
          size_t at = pick(s.size() - 4);
          s[at] = static_cast<char>(markers[pick(sizeof markers)]);
          for (size_t i = 1; i <= 4; ++i) s[at + i] = static_cast<char>(0xff);
        }
        break;
      case 3:  // truncate
        s.resize(pick(s.size() + 1));
        break;
      case 4:  // insert random bytes
        s.insert(pick(s.size() + 1), std::string(1 + pick(8), static_cast<char>(rng())));
        break;
      case 5:  // delete a run
        if (!s.empty()) {
          size_t at = pick(s.size());
          s.erase(at, 1 + pick(std::min<size_t>(16, s.size() - at)));
        }
        break;
      case 6:  // duplicate a chunk in place
        if (!s.empty()) {
          size_t at = pick(s.size()), len = 1 + pick(std::min<size_t>(32, s.size() - at));
          s.insert(at, s.substr(at, len));
        }
        break;
      case 7: {  // splice: the head of this frame, the tail of another
        const std::string& o = frames[pick(frames.size())];
        s = s.substr(0, pick(s.size() + 1)) + o.substr(pick(o.size() + 1));
        break;
      }
      default:  // a random byte
        if (!s.empty()) s[pick(s.size())] = static_cast<char>(rng());
        break;
    }
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: envelope_fuzz INPUTS [SEED] [FRAMES_DIR]\n");
    return 2;
  }
  const uint64_t inputs = std::strtoull(argv[1], nullptr, 10);
  const uint64_t seed = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1;
  const std::string dir = argc > 3 ? argv[3] : CRUCIBLE_TEST_DATA_DIR "/messages";
  std::vector<std::string> frames;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
    if (entry.path().extension() == ".msgpack") {
      std::ifstream in(entry.path(), std::ios::binary);
      frames.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
  if (frames.empty()) {
    std::fprintf(stderr, "envelope_fuzz: no golden frames (*.msgpack) in '%s'\n", dir.c_str());
    return 2;
  }
  std::sort(frames.begin(), frames.end());  // the directory's order is not stable; the run must be
  counts n;
  std::mt19937_64 rng(seed);
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& f : frames) decode_frame(f, n, 0);  // the golden frames themselves first
  for (uint64_t i = 0; i < inputs; ++i) {
    std::string input;
    if (i % 64 == 63) {  // now and then bytes with no frame behind them
      input.resize(rng() % 256);
      for (auto& c : input) c = static_cast<char>(rng());
    } else {
      input = mutate(frames[rng() % frames.size()], frames, rng);
    }
    ++n.inputs;
    decode_frame(input, n, 0);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "envelope_fuzz: %llu inputs (seed %llu, %zu golden frames) in %.1f s: %llu envelopes decoded, "
      "%llu bodies converted, %llu embedded frames, %llu rejected with an error; no findings\n",
      static_cast<unsigned long long>(n.inputs), static_cast<unsigned long long>(seed), frames.size(), secs,
      static_cast<unsigned long long>(n.envelopes), static_cast<unsigned long long>(n.bodies),
      static_cast<unsigned long long>(n.embedded), static_cast<unsigned long long>(n.errors));
  std::printf("bodies converted by kind:");
  for (const auto& [k, c] : n.decoded_by_kind)
    std::printf(" %s %llu", k.c_str(), static_cast<unsigned long long>(c));
  std::printf("\n");
  return 0;
}
