#include "runtime/storage/tensorboard_log.hpp"

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>

#include "runtime/storage/crc32c.hpp"

namespace crucible::runtime {
namespace {

// The few protobuf encodings an Event needs (wire types 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32).
void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void put_key(std::string& out, uint32_t field, uint32_t wire) {
  put_varint(out, (static_cast<uint64_t>(field) << 3) | wire);
}

template <class T>
void put_fixed(std::string& out, uint32_t field, T v) {
  put_key(out, field, sizeof(T) == 8 ? 1 : 5);
  char raw[sizeof(T)];
  std::memcpy(raw, &v, sizeof(T));  // protobuf's fixed types are little-endian, as is every target here
  out.append(raw, sizeof(T));
}

void put_bytes(std::string& out, uint32_t field, const std::string& bytes) {
  put_key(out, field, 2);
  put_varint(out, bytes.size());
  out += bytes;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string event_header(double wall_time, int64_t step) {
  std::string e;
  put_fixed(e, 1, wall_time);
  put_key(e, 2, 0);
  put_varint(e, static_cast<uint64_t>(step));
  return e;
}

std::string scalar_value(const std::string& tag, double v) {
  std::string value;
  put_bytes(value, 1, tag);
  put_fixed(value, 2, static_cast<float>(v));
  return value;
}

// A reader over one protobuf message; every read is bounds-checked.
struct cursor {
  const unsigned char* p;
  const unsigned char* end;
  bool ok = true;

  bool more() const { return ok && p < end; }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p >= end) break;
      const unsigned char b = *p++;
      v |= static_cast<uint64_t>(b & 0x7F) << shift;
      if (!(b & 0x80)) return v;
    }
    ok = false;
    return 0;
  }
  template <class T>
  T fixed() {
    T v{};
    if (end - p < static_cast<std::ptrdiff_t>(sizeof(T))) return ok = false, v;
    std::memcpy(&v, p, sizeof(T));
    p += sizeof(T);
    return v;
  }
  cursor sub() {
    const uint64_t n = varint();
    if (!ok || static_cast<uint64_t>(end - p) < n) return ok = false, cursor{end, end, false};
    cursor c{p, p + n};
    p += n;
    return c;
  }
  void skip(uint32_t wire) {
    if (wire == 0)
      varint();
    else if (wire == 1)
      fixed<uint64_t>();
    else if (wire == 2)
      sub();
    else if (wire == 5)
      fixed<uint32_t>();
    else
      ok = false;
  }
};

bool parse_event(cursor c, tensorboard_event& e) {
  while (c.more()) {
    const uint64_t key = c.varint();
    const auto field = static_cast<uint32_t>(key >> 3), wire = static_cast<uint32_t>(key & 7);
    if (field == 1 && wire == 1) {
      e.wall_time = c.fixed<double>();
    } else if (field == 2 && wire == 0) {
      e.step = static_cast<int64_t>(c.varint());
    } else if (field == 3 && wire == 2) {
      cursor s = c.sub();
      e.file_version.assign(reinterpret_cast<const char*>(s.p), static_cast<size_t>(s.end - s.p));
    } else if (field == 5 && wire == 2) {  // Summary: repeated Value value = 1
      cursor summary = c.sub();
      while (summary.more()) {
        const uint64_t k = summary.varint();
        if (k != ((1u << 3) | 2)) {
          summary.skip(static_cast<uint32_t>(k & 7));
          continue;
        }
        cursor value = summary.sub();
        std::string tag;
        float v = 0;
        while (value.more()) {
          const uint64_t vk = value.varint();
          if (vk == ((1u << 3) | 2)) {
            cursor s = value.sub();
            tag.assign(reinterpret_cast<const char*>(s.p), static_cast<size_t>(s.end - s.p));
          } else if (vk == ((2u << 3) | 5)) {
            v = value.fixed<float>();
          } else {
            value.skip(static_cast<uint32_t>(vk & 7));
          }
        }
        if (!value.ok) return false;
        e.scalars.emplace_back(std::move(tag), v);
      }
      if (!summary.ok) return false;
    } else if (field == 7 && wire == 2) {  // SessionLog: status = 1
      cursor log = c.sub();
      while (log.more()) {
        const uint64_t k = log.varint();
        if (k == ((1u << 3) | 0))
          e.session_status = static_cast<int32_t>(log.varint());
        else
          log.skip(static_cast<uint32_t>(k & 7));
      }
      if (!log.ok) return false;
    } else {
      c.skip(wire);
    }
  }
  return c.ok;
}

}  // namespace

expected<tensorboard_log> tensorboard_log::open(const std::string& dir, int64_t resumed_at) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return make_error("cannot create " + dir + ": " + ec.message());
  char host[256] = "host";
  gethostname(host, sizeof host - 1);
  const double start = now_s();
  const std::string stem = dir + "/events.out.tfevents." + std::to_string(static_cast<int64_t>(start)) + "." +
                           host + "." + std::to_string(getpid()) + ".";
  tensorboard_log log;
  for (int n = 0; log.path_.empty() || fs::exists(log.path_); ++n) log.path_ = stem + std::to_string(n);
  log.out_.open(log.path_, std::ios::binary | std::ios::trunc);
  if (!log.out_) return make_error("cannot create " + log.path_);
  std::string version = event_header(start, 0);
  put_bytes(version, 3, "brain.Event:2");
  if (auto st = log.write_event(version); !st) return st.err();
  if (resumed_at > 0) {
    std::string session_log;
    put_key(session_log, 1, 0);
    put_varint(session_log, 1);  // START: TensorBoard drops what older files logged from this step on
    std::string e = event_header(start, resumed_at + 1);
    put_bytes(e, 7, session_log);
    if (auto st = log.write_event(e); !st) return st.err();
  }
  return log;
}

status tensorboard_log::write_event(const std::string& event) {
  char length[8];
  const uint64_t n = event.size();
  std::memcpy(length, &n, 8);
  const uint32_t length_crc = masked_crc32c(length, 8), data_crc = masked_crc32c(event.data(), event.size());
  out_.write(length, 8);
  out_.write(reinterpret_cast<const char*>(&length_crc), 4);
  out_.write(event.data(), static_cast<std::streamsize>(event.size()));
  out_.write(reinterpret_cast<const char*>(&data_crc), 4);
  out_.flush();
  if (!out_) return make_error("cannot write " + path_);
  return {};
}

status tensorboard_log::append(const step_metrics& m) {
  const std::pair<const char*, double> scalars[] = {
      {"reward_mean", m.reward_mean},
      {"correct_rate", m.correct_rate},
      {"flagged_rate", m.flagged_rate},
      {"speedup_mean", m.speedup_mean},
      {"candidates", static_cast<double>(m.candidates)},
      {"candidates_total", static_cast<double>(m.candidates_total)},
      {"staleness_mean", m.staleness_mean},
      {"policy_version", static_cast<double>(m.policy_version)},
      {"wall_s", m.wall_s},
      {"loss", m.loss},
      {"kl", m.kl},
      {"entropy", m.entropy}};
  std::string summary;
  for (const auto& [tag, v] : scalars) put_bytes(summary, 1, scalar_value(tag, v));
  for (const auto& [task, v] : m.speedup_best) put_bytes(summary, 1, scalar_value("speedup_best/" + task, v));
  std::string e = event_header(now_s(), m.step);
  put_bytes(e, 5, summary);
  return write_event(e);
}

expected<std::vector<tensorboard_event>> read_tensorboard_events(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return make_error("cannot read " + file);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<tensorboard_event> out;
  size_t at = 0;
  while (at < bytes.size()) {
    const std::string where = file + ": the record at byte " + std::to_string(at);
    if (bytes.size() - at < 12) return make_error(where + " is torn (no length header)");
    uint64_t n = 0;
    uint32_t length_crc = 0, data_crc = 0;
    std::memcpy(&n, bytes.data() + at, 8);
    std::memcpy(&length_crc, bytes.data() + at + 8, 4);
    if (length_crc != masked_crc32c(bytes.data() + at, 8)) return make_error(where + " fails its length CRC");
    if (bytes.size() - at - 12 < n || bytes.size() - at - 12 - n < 4)
      return make_error(where + " is torn (" + std::to_string(n) + " bytes announced)");
    const char* data = bytes.data() + at + 12;
    std::memcpy(&data_crc, data + n, 4);
    if (data_crc != masked_crc32c(data, n)) return make_error(where + " fails its data CRC");
    tensorboard_event e;
    const auto* p = reinterpret_cast<const unsigned char*>(data);
    if (!parse_event(cursor{p, p + n}, e)) return make_error(where + " holds no parseable Event");
    out.push_back(std::move(e));
    at += 12 + n + 4;
  }
  return out;
}

}  // namespace crucible::runtime
