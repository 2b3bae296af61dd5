#include "runtime/storage/checkpoints.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "runtime/hosting/fail_points.hpp"

namespace crucible::runtime {

namespace fs = std::filesystem;

status save_checkpoint(const std::string& dir, const checkpoint& c, int keep) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  char name[64];
  std::snprintf(name, sizeof name, "step_%06lld.ckpt", static_cast<long long>(c.step));
  msgpack::sbuffer buf;
  msgpack::pack(buf, c);
  fs::path tmp = fs::path(dir) / (std::string(name) + ".tmp");
  {
    std::ofstream out(tmp, std::ios::binary);
    out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (!out) return make_error("cannot write checkpoint " + tmp.string());
  }
  fs::rename(tmp, fs::path(dir) / name, ec);
  if (ec) return make_error("cannot publish checkpoint " + std::string(name) + ": " + ec.message());
  fail_point("checkpoint.written");  // killed here, LATEST still names the checkpoint before
  {
    std::ofstream latest(fs::path(dir) / "LATEST.tmp");
    latest << name << '\n';
  }
  fs::rename(fs::path(dir) / "LATEST.tmp", fs::path(dir) / "LATEST", ec);
  if (ec) return make_error("cannot update checkpoints/LATEST: " + ec.message());
  std::vector<fs::path> all;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".ckpt") all.push_back(e.path());
  std::sort(all.begin(), all.end());
  for (size_t i = 0; i + static_cast<size_t>(keep) < all.size(); ++i) fs::remove(all[i], ec);
  return {};
}

expected<checkpoint> load_latest_checkpoint(const std::string& dir) {
  std::ifstream latest(fs::path(dir) / "LATEST");
  std::string name;
  if (!(latest >> name)) return make_error("no checkpoint in " + dir + " (checkpoints/LATEST is missing)");
  std::ifstream in(fs::path(dir) / name, std::ios::binary);
  if (!in) return make_error("checkpoints/LATEST names " + name + ", which cannot be read");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  try {
    auto handle = msgpack::unpack(bytes.data(), bytes.size());
    checkpoint c;
    handle.get().convert(c);
    return c;
  } catch (const std::exception& e) {
    return make_error("checkpoint " + name + " is corrupt: " + e.what());
  }
}

}  // namespace crucible::runtime
