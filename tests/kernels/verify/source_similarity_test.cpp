// Similarity of sources for the judge's case retrieval: renaming, reformatting, re-commenting and changing
// constants keep a source equal to itself; what it calls from outside and its structure do not.
#include "kernels/verify/source_similarity.hpp"

#include <gtest/gtest.h>

namespace crucible::kernels {
namespace {

const char* kernel_a = R"(#include <crucible_abi.h>
// scale every element
extern "C" int crucible_forward(const cru_context* ctx, const cru_tensor* in, int32_t n_in,
                                cru_tensor* out, int32_t n_out) {
  const float* x = (const float*)in[0].data;
  float* y = (float*)out[0].data;
  for (int64_t i = 0; i < in[0].shape[0]; ++i) y[i] = x[i] * 2.0f + 1.0f;
  return 0;
}
)";

// kernel_a with other names, constants, comments and layout.
const char* kernel_a_renamed = R"(#include <crucible_abi.h>
/* a different comment */
extern "C" int crucible_forward(const cru_context* c, const cru_tensor* inputs, int32_t ni, cru_tensor* outputs,
                                int32_t no)
{
    const float* src = (const float*)inputs[0].data;   float* dst = (float*)outputs[0].data;
    for (int64_t k = 0; k < inputs[0].shape[0]; ++k) dst[k] = src[k] * 3.5f + 0.25f;  // tweaked
    return 0;
}
)";

const char* kernel_threaded = R"(#include <crucible_abi.h>
#include <thread>
extern "C" int crucible_forward(const cru_context* ctx, const cru_tensor* in, int32_t n_in,
                                cru_tensor* out, int32_t n_out) {
  std::thread t([&] {
    const float* x = (const float*)in[0].data;
    float* y = (float*)out[0].data;
    for (int64_t i = 0; i < in[0].shape[0]; ++i) y[i] = x[i] * 2.0f + 1.0f;
  });
  t.detach();
  return 0;
}
)";

TEST(SourceSimilarity, NormalisesNamesNumbersCommentsAndLayout) {
  auto t = normalized_tokens("int count = 42; // note\n/* block */ float x=1.5e-3f;");
  std::vector<std::string> want = {"int", "$", "=", "#", ";", "float", "$", "=", "#", ";"};
  EXPECT_EQ(t, want);
  EXPECT_EQ(normalized_tokens(kernel_a), normalized_tokens(kernel_a_renamed));
  EXPECT_DOUBLE_EQ(similarity(fingerprint(kernel_a), fingerprint(kernel_a_renamed)), 1.0);
}

TEST(SourceSimilarity, KeepsQualifiedNamesStringsAsPlaceholdersAndIncludes) {
  auto t = normalized_tokens("std::thread t; const char* s = \"std::thread\";\n#include <thread>\n");
  std::vector<std::string> want = {"std", "::", "thread", "$", ";",       "const", "char",   "*", "$",
                                   "=",   "\"", ";",      "#", "include", "<",     "thread", ">"};
  EXPECT_EQ(t, want);
  EXPECT_NE(normalized_tokens("std::thread t;"), normalized_tokens("std::vector t;"));
}

TEST(SourceSimilarity, AStructurallyDifferentSourceIsFarAndTheScoreIsSymmetric) {
  auto a = fingerprint(kernel_a), b = fingerprint(kernel_threaded);
  double s = similarity(a, b);
  EXPECT_GT(s, 0.0);
  EXPECT_LT(s, 0.7);
  EXPECT_DOUBLE_EQ(s, similarity(b, a));
  EXPECT_DOUBLE_EQ(similarity(a, fingerprint("")), 0.0);
  EXPECT_DOUBLE_EQ(similarity(fingerprint("x"), fingerprint("y")), 1.0);  // one placeholder token each
}

}  // namespace
}  // namespace crucible::kernels
