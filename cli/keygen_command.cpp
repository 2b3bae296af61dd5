#include <cstdio>
#include <iostream>

#include "cli/commands.hpp"
#include "runtime/cluster/curve_keys.hpp"

namespace crucible::cli {

int keygen_command(const keygen_args& args) {
  auto pair = runtime::generate_curve_keypair();
  if (!pair) {
    std::cerr << "crucible keygen: " << pair.message() << "\n";
    return 1;
  }
  if (auto st = runtime::write_curve_keypair(*pair, args.secret_path, args.public_path); !st) {
    std::cerr << "crucible keygen: " << st.message() << "\n";
    return 2;
  }
  std::printf("%s\n", pair->public_key.c_str());  // the public key, for an authorized_keys list
  return 0;
}

}  // namespace crucible::cli
