#include "runtime/cluster/curve_keys.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <zmq.h>

namespace crucible::runtime {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view z85_alphabet =
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

// The value of a `name = "value"` line (quotes optional), or empty if the line is not about `name`.
std::string value_of(const std::string& line, std::string_view name) {
  std::string t = trim(line);
  if (t.compare(0, name.size(), name) != 0) return {};
  std::string rest = trim(std::string_view(t).substr(name.size()));
  if (rest.empty() || rest[0] != '=') return {};
  rest = trim(std::string_view(rest).substr(1));
  if (rest.size() >= 2 && rest.front() == '"' && rest.back() == '"') rest = rest.substr(1, rest.size() - 2);
  return rest;
}

expected<std::string> read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return make_error("cannot read key file '" + path + "': " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The named key of a key file; empty if the file has no such line.
expected<std::string> key_line(const std::string& path, const std::string& text, std::string_view name) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::string v = value_of(line, name);
    if (v.empty()) continue;
    if (!is_z85_key(v))
      return make_error("key file '" + path + "': " + std::string(name) +
                        " is not a 40-character Z85 key (generate one with generate_curve_keypair)");
    return v;
  }
  return std::string();
}

}  // namespace

bool curve_available() {
  return zmq_has("curve") == 1;
}

bool is_z85_key(std::string_view key) {
  if (key.size() != 40) return false;
  for (char c : key)
    if (z85_alphabet.find(c) == std::string_view::npos) return false;
  uint8_t raw[32];
  std::string z(key);
  return zmq_z85_decode(raw, z.c_str()) != nullptr;
}

expected<std::string> z85_key_bytes(std::string_view key) {
  if (!is_z85_key(key)) return make_error("'" + std::string(key) + "' is not a 40-character Z85 CURVE key");
  uint8_t raw[32];
  std::string z(key);
  zmq_z85_decode(raw, z.c_str());
  return std::string(reinterpret_cast<const char*>(raw), sizeof raw);
}

expected<curve_keypair> generate_curve_keypair() {
  if (!curve_available()) return make_error("this libzmq has no CURVE support (it needs libsodium)");
  char pub[41] = {};
  char sec[41] = {};
  if (zmq_curve_keypair(pub, sec) != 0)
    return make_error(std::string("zmq_curve_keypair failed: ") + zmq_strerror(zmq_errno()));
  return curve_keypair{pub, sec};
}

status write_curve_keypair(const curve_keypair& pair, const std::string& secret_path,
                           const std::string& public_path) {
  if (!is_z85_key(pair.public_key) || !is_z85_key(pair.secret_key))
    return make_error("refusing to write an incomplete key pair to '" + secret_path + "'");
  std::error_code ec;
  if (!public_path.empty() && fs::weakly_canonical(public_path, ec) == fs::weakly_canonical(secret_path, ec))
    return make_error("the public key file '" + public_path +
                      "' is the secret key file: give them two names");
  // A public key written over a secret key file would destroy a key someone may already use.
  if (!public_path.empty() && fs::exists(public_path, ec)) {
    auto text = read_text(public_path);
    if (text && text->find("secret-key") != std::string::npos)
      return make_error("refusing to write the public key over '" + public_path +
                        "', which holds a secret key");
  }
  // A fresh clone has no keys/ folder: make the folders the paths name (the secret's private to its owner).
  for (const auto& p : {secret_path, public_path}) {
    const fs::path dir = fs::path(p).parent_path();
    if (p.empty() || dir.empty() || fs::is_directory(dir, ec)) continue;
    if (!fs::create_directories(dir, ec) && ec)
      return make_error("cannot create the folder '" + dir.string() + "' for '" + p + "': " + ec.message());
    if (p == secret_path) fs::permissions(dir, fs::perms::owner_all, ec);
  }
  // O_EXCL: never overwrite a key someone may already have handed out; 0600: the secret stays private.
  int fd = ::open(secret_path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0)
    return make_error("cannot create secret key file '" + secret_path + "': " + std::strerror(errno));
  std::string text = "# Crucible CURVE key pair (ZeroMQ Z85). Keep this file secret.\npublic-key = \"" +
                     pair.public_key + "\"\nsecret-key = \"" + pair.secret_key + "\"\n";
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ok = (::close(fd) == 0) && ok;
  if (!ok) return make_error("cannot write secret key file '" + secret_path + "': " + std::strerror(errno));
  if (!public_path.empty()) {
    std::ofstream out(public_path, std::ios::trunc);
    out << "# Crucible CURVE public key (ZeroMQ Z85). Give it to the other side.\npublic-key = \""
        << pair.public_key << "\"\n";
    if (!out) return make_error("cannot write public key file '" + public_path + "'");
  }
  return {};
}

expected<curve_keypair> read_curve_secret(const std::string& path) {
  auto text = read_text(path);
  if (!text) return text.err();
  auto pub = key_line(path, *text, "public-key");
  if (!pub) return pub.err();
  auto sec = key_line(path, *text, "secret-key");
  if (!sec) return sec.err();
  if (sec->empty())
    return make_error("key file '" + path + "' has no secret-key line (is it a public-key file?)");
  char derived[41] = {};
  if (zmq_curve_public(derived, sec->c_str()) != 0)
    return make_error("key file '" + path + "': cannot derive the public key from the secret key");
  if (pub->empty()) return curve_keypair{derived, *sec};
  if (*pub != derived)
    return make_error("key file '" + path + "': its public-key and secret-key do not belong together");
  return curve_keypair{*pub, *sec};
}

expected<std::string> read_curve_public(const std::string& path) {
  auto text = read_text(path);
  if (!text) return text.err();
  auto pub = key_line(path, *text, "public-key");
  if (!pub) return pub.err();
  if (pub->empty()) return make_error("key file '" + path + "' has no public-key line");
  return *pub;
}

expected<std::vector<std::string>> read_allowed_keys(const std::string& path) {
  std::error_code ec;
  std::vector<std::string> keys;
  if (fs::is_directory(path, ec)) {
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(path, ec))
      if (entry.is_regular_file()) files.push_back(entry.path());
    if (ec) return make_error("cannot list allowed-keys directory '" + path + "': " + ec.message());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      auto key = read_curve_public(f.string());
      if (!key) return key.err();
      keys.push_back(*key);
    }
  } else {
    auto text = read_text(path);
    if (!text) return text.err();
    std::istringstream lines(*text);
    std::string line;
    int number = 0;
    while (std::getline(lines, line)) {
      ++number;
      std::string t = trim(line);
      // '#' is a Z85 digit, so a comment starts only at a '#' that begins the line or follows a blank
      // (a key has no blanks), and a line that is exactly a key is a key.
      if (!is_z85_key(t) && !is_z85_key(value_of(t, "public-key"))) {
        for (size_t i = 0; i < t.size(); ++i)
          if (t[i] == '#' && (i == 0 || std::isspace(static_cast<unsigned char>(t[i - 1])))) {
            t = trim(t.substr(0, i));
            break;
          }
      }
      if (t.empty()) continue;
      std::string v = value_of(t, "public-key");
      if (v.empty()) v = t;
      if (!is_z85_key(v))
        return make_error("allowed-keys file '" + path + "' line " + std::to_string(number) +
                          ": not a 40-character Z85 public key");
      keys.push_back(v);
    }
  }
  if (keys.empty()) return make_error("allowed-keys '" + path + "' lists no public key: no peer could join");
  return keys;
}

expected<curve_server_keys> load_curve_server(const std::string& secret_path,
                                              const std::string& allowed_path) {
  auto server = read_curve_secret(secret_path);
  if (!server) return server.err();
  auto allowed = read_allowed_keys(allowed_path);
  if (!allowed) return allowed.err();
  return curve_server_keys{*server, *allowed};
}

expected<curve_client_keys> load_curve_client(const std::string& secret_path,
                                              const std::string& server_public_path) {
  auto client = read_curve_secret(secret_path);
  if (!client) return client.err();
  auto server = read_curve_public(server_public_path);
  if (!server) return server.err();
  return curve_client_keys{*client, *server};
}

}  // namespace crucible::runtime
