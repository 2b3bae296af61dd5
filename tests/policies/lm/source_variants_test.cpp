#include "policies/lm/source_variants.hpp"

#include <gtest/gtest.h>

namespace crucible::policies {
namespace {

const char* source = R"(// a comment naming acc
#include <crucible_abi.h>
#include <cmath>

static inline float gelu(float x) {
  return 0.5f * x * (1.0f + std::tanh(0.79788456f * (x + 0.044715f * x * x * x)));
}

static inline float twice(float v) {
  return 2.0f * v;
}

extern "C" int crucible_forward(const cru_context* ctx, const cru_tensor* inputs, int32_t n_inputs,
                                cru_tensor* outputs, int32_t n_outputs) {
  const float* x = static_cast<const float*>(inputs[0].data);
  float* out = static_cast<float*>(outputs[0].data);
  const int64_t n = inputs[0].shape[0];
  const char* label = "acc n";
  for (int64_t i = 0; i < n; ++i) {
    float acc = x[i];
    out[i] = twice(gelu(acc));
  }
  return label[0] == 'a' ? 0 : 1;
}
)";

TEST(SourceVariants, VariantsDifferButKeepStringsTheAbiAndMembers) {
  auto v = source_variants(source, 3, 7);
  ASSERT_FALSE(v.empty());
  EXPECT_LE(v.size(), 3u);
  for (const auto& s : v) {
    EXPECT_NE(s, source);
    EXPECT_NE(s.find("extern \"C\" int crucible_forward(const cru_context* ctx, const cru_tensor* inputs"),
              std::string::npos)
        << s;
    EXPECT_NE(s.find("\"acc n\""), std::string::npos) << s;           // strings untouched
    EXPECT_NE(s.find("// a comment naming acc"), std::string::npos);  // comments untouched
    EXPECT_NE(s.find("inputs[0].shape[0]"), std::string::npos);       // members untouched
    EXPECT_NE(s.find("#include <crucible_abi.h>"), std::string::npos);
  }
  EXPECT_EQ(source_variants(source, 3, 7), v);  // deterministic in the seed
  // Some variant renames a local, reindents or swaps the two independent helpers.
  bool renamed = false, moved = false;
  for (const auto& s : source_variants(source, 8, 1)) {
    renamed |= s.find("float acc = ") == std::string::npos;
    moved |= s.find("twice") < s.find("gelu");
  }
  EXPECT_TRUE(renamed);
  EXPECT_TRUE(moved);
}

TEST(SourceVariants, NormalisedSourcesIgnoreLayoutAndComments) {
  EXPECT_EQ(normalized_source("int  a = 1; // x\n\n  return a;"),
            normalized_source("int a = 1;\nreturn a; /* y */"));
  EXPECT_NE(normalized_source("int a = 1;"), normalized_source("int b = 1;"));
  EXPECT_EQ(normalized_source("s = \"a  b\";"), "s = \"a  b\";");
}

}  // namespace
}  // namespace crucible::policies
