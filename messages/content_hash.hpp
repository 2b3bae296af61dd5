#pragma once
// Content hashes name candidates and cached artifacts: identical source compiles once, and a verdict is
// stored against exactly the bytes it judged.
#include <string>
#include <string_view>

namespace crucible {

/// SHA-256 of `data` as 64 lowercase hex digits.
std::string sha256_hex(std::string_view data);

/// The first 16 hex digits of sha256_hex: short enough for file names and logs, long enough to be unique
/// across any run this runtime will see.
std::string short_hash(std::string_view data);

}  // namespace crucible
