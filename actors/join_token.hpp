#pragma once
// The join handshake's proof (CAF 0.17's BASP authenticates nobody): the engine sends a fresh
// nonce, a worker answers HMAC-SHA256(token, nonce); the token itself never crosses the wire.
// OpenSSL's HMAC, RAND_bytes and CRYPTO_memcmp (Debian's libssl-dev).
#include <string>

namespace minivllm {

// 32 random bytes, hex. Throws minivllm::Error when the system has no randomness to give.
std::string make_nonce();
// Hex HMAC-SHA256 of `nonce` under `token`.
std::string join_proof(const std::string& token, const std::string& nonce);
// Whether two proofs are equal, in time independent of where they differ.
bool proofs_match(const std::string& a, const std::string& b);

}  // namespace minivllm
