#pragma once
// CURVE key pairs for the cluster transport (ZeroMQ's CurveZMQ; libzmq does the cryptography through
// libsodium). Keys are 40-character Z85 text, in files a person can read, copy and diff:
//
//   # Crucible CURVE key pair (ZeroMQ Z85). Keep this file secret.
//   public-key = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"
//   secret-key = "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6"
//
// A public-key file holds only the public-key line. CZMQ's zcert files use the same lines, so either
// tool's files work. Pure functions, safe from any thread.
#include <string>
#include <string_view>
#include <vector>

#include "messages/expected.hpp"

namespace crucible::runtime {

/// A key pair in Z85 text. secret_key is empty when only the public key is known.
struct curve_keypair {
  std::string public_key;
  std::string secret_key;
};

/// What a head needs to be a CURVE server that admits only known clients.
struct curve_server_keys {
  curve_keypair server;                      ///< the head's own pair (its public key goes to every peer)
  std::vector<std::string> allowed_clients;  ///< Z85 public keys of the peers that may join
};

/// What a peer needs to join a CURVE head.
struct curve_client_keys {
  curve_keypair client;       ///< the peer's own pair (its public key must be in the head's allowed list)
  std::string server_public;  ///< the head's public key
};

/// True if libzmq was built with CURVE support (Debian's is).
bool curve_available();

/// True for a 40-character string of the Z85 alphabet that decodes to a 32-byte key.
bool is_z85_key(std::string_view key);

/// A fresh random key pair (zmq_curve_keypair).
expected<curve_keypair> generate_curve_keypair();

/// Writes `pair` to `secret_path` (public and secret key; created with mode 0600) and, when `public_path`
/// is not empty, the public key alone to `public_path`. Refuses to overwrite an existing secret file.
status write_curve_keypair(const curve_keypair& pair, const std::string& secret_path,
                           const std::string& public_path);

/// Reads a key file with both keys and checks that they belong together.
expected<curve_keypair> read_curve_secret(const std::string& path);

/// Reads the public key of a key file (a public-key file, or a secret one).
expected<std::string> read_curve_public(const std::string& path);

/// The allowed client keys: `path` is a directory (every regular file in it holding a public-key line), or a
/// file with one key per line (a bare Z85 key or a public-key line; a '#' at the start of a line or after a
/// blank starts a comment).
expected<std::vector<std::string>> read_allowed_keys(const std::string& path);

/// read_curve_secret + read_allowed_keys, for a head's config.
expected<curve_server_keys> load_curve_server(const std::string& secret_path,
                                              const std::string& allowed_path);

/// read_curve_secret + read_curve_public, for a peer's config.
expected<curve_client_keys> load_curve_client(const std::string& secret_path,
                                              const std::string& server_public_path);

/// The 32 raw bytes of a Z85 key (what zmq_setsockopt takes), or an error naming what is wrong.
expected<std::string> z85_key_bytes(std::string_view key);

}  // namespace crucible::runtime
