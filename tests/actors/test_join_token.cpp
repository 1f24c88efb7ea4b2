// The join handshake's proof: HMAC-SHA256 as RFC 4231 gives it, fresh nonces, and a comparison
// that tells equal from unequal.
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "actors/join_token.hpp"

namespace minivllm {
namespace {

TEST(JoinTokenTest, ProofIsHmacSha256OfTheNonce) {
  // RFC 4231, test case 2.
  EXPECT_EQ(join_proof("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  EXPECT_NE(join_proof("Jefe", "what do ya want for nothing!"),
            join_proof("Jefe", "what do ya want for nothing?"));
}

TEST(JoinTokenTest, NoncesAreFreshHex) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    const std::string n = make_nonce();
    EXPECT_EQ(n.size(), 64u);
    EXPECT_EQ(n.find_first_not_of("0123456789abcdef"), std::string::npos) << n;
    seen.insert(n);
  }
  EXPECT_EQ(seen.size(), 100u);
}

TEST(JoinTokenTest, ProofsMatchOnlyWhenEqual) {
  const std::string p = join_proof("a secret of some length", "nonce");
  EXPECT_TRUE(proofs_match(p, p));
  std::string q = p;
  q.back() = q.back() == '0' ? '1' : '0';
  EXPECT_FALSE(proofs_match(p, q));
  EXPECT_FALSE(proofs_match(p, p.substr(1)));
  EXPECT_FALSE(proofs_match(p, ""));
}

}  // namespace
}  // namespace minivllm
