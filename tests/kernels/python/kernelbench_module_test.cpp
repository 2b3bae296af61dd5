#include "kernels/python/kernelbench_module.hpp"

#include <gtest/gtest.h>

#include "kernels/python/kernelbench_tensors.hpp"

namespace crucible::kernels {
namespace {

const std::string data = std::string(CRUCIBLE_TEST_DATA_DIR) + "/kernelbench";
const std::string problems = data + "/KernelBench";
const std::string bad = std::string(CRUCIBLE_TEST_DATA_DIR) + "/kernelbench_bad/level1";

kernelbench_module built(const std::string& path, uint64_t seed = 1) {
  auto m = kernelbench_module::load(path);
  EXPECT_TRUE(m) << m.message();
  auto st = m->instantiate(seed, "cpu");
  EXPECT_TRUE(st) << st.message();
  return std::move(*m);
}

// Inputs come from the module's own generators, the same for a seed and fresh for another; the forward
// pass's tensors are LibTorch's, no copies.
TEST(KernelBenchModule, InputsFollowTheSeedAndTheForwardPassIsTheModules) {
  auto m = built(problems + "/level1/1_Small_matmul.py");
  auto a = kernelbench_inputs(m, 3), b = kernelbench_inputs(m, 3), c = kernelbench_inputs(m, 4);
  ASSERT_TRUE(a && b && c);
  ASSERT_EQ(a->size(), 2u);
  EXPECT_EQ((*a)[0].sizes(), (std::vector<int64_t>{16, 24}));
  EXPECT_TRUE((*a)[0].equal((*b)[0]));
  EXPECT_FALSE((*a)[0].equal((*c)[0]));
  auto y = kernelbench_forward(m, *a);
  ASSERT_TRUE(y) << y.message();
  EXPECT_TRUE(y->allclose(at::matmul((*a)[0], (*a)[1])));
  auto info = m.input_info(3);
  ASSERT_TRUE(info);
  EXPECT_EQ(describe((*info)[1]), "float32 [24, 8]");
  auto out = m.output_info(3);
  ASSERT_TRUE(out);
  EXPECT_EQ(describe(*out), "float32 [16, 8]");
  auto ms = m.eager_ms(3, 1, 3);
  ASSERT_TRUE(ms) << ms.message();
  EXPECT_GT(*ms, 0.0);
}

// The model is built from get_init_inputs() under the seed: its weights follow the seed, and a solution
// (ModelNew) is built like its problem.
TEST(KernelBenchModule, ModelsAreBuiltUnderTheSeedAndSolutionsLikeTheirProblem) {
  auto scaled = built(problems + "/level1/2_Scaled_relu.py");
  auto x = kernelbench_inputs(scaled, 1);
  ASSERT_TRUE(x);
  auto y = kernelbench_forward(scaled, *x);
  ASSERT_TRUE(y);
  EXPECT_TRUE(y->allclose(at::relu((*x)[0]) * 2.5));

  auto p1 = built(problems + "/level2/7_Linear_gelu.py", 5),
       p2 = built(problems + "/level2/7_Linear_gelu.py", 5),
       p3 = built(problems + "/level2/7_Linear_gelu.py", 6);
  auto in = kernelbench_inputs(p1, 1);
  ASSERT_TRUE(in);
  auto y1 = kernelbench_forward(p1, *in), y2 = kernelbench_forward(p2, *in),
       y3 = kernelbench_forward(p3, *in);
  ASSERT_TRUE(y1 && y2 && y3);
  EXPECT_TRUE(y1->equal(*y2));
  EXPECT_FALSE(y1->allclose(*y3));

  auto sol = kernelbench_module::load(data + "/solutions/7_Linear_gelu_new.py", "ModelNew");
  ASSERT_TRUE(sol) << sol.message();
  EXPECT_FALSE(sol->instantiate(5, "cpu")) << "a solution without get_init_inputs needs its problem's";
  ASSERT_TRUE(sol->instantiate(5, "cpu", &p1));
  auto sol_in = kernelbench_inputs(*sol, 1, &p1);
  ASSERT_TRUE(sol_in);
  auto ys = kernelbench_forward(*sol, *sol_in);
  ASSERT_TRUE(ys) << ys.message();
  EXPECT_TRUE(ys->allclose(*y1, 1e-5, 1e-6));
}

// Whatever the file does wrong comes back as an error naming the file and Python's complaint.
TEST(KernelBenchModule, BrokenFilesAreErrorsThatSayWhy) {
  auto syntax = kernelbench_module::load(bad + "/1_Syntax_error.py");
  ASSERT_FALSE(syntax);
  EXPECT_NE(syntax.message().find("1_Syntax_error.py"), std::string::npos) << syntax.message();
  EXPECT_NE(syntax.message().find("SyntaxError"), std::string::npos) << syntax.message();
  auto no_model = kernelbench_module::load(bad + "/2_No_model.py");
  ASSERT_FALSE(no_model);
  EXPECT_NE(no_model.message().find("no class Model"), std::string::npos);
  EXPECT_FALSE(kernelbench_module::load(bad + "/nothing_here.py"));

  auto raises = built(bad + "/3_Inputs_raise.py");
  auto in = kernelbench_inputs(raises, 1);
  ASSERT_FALSE(in);
  EXPECT_NE(in.message().find("no inputs today"), std::string::npos) << in.message();
  auto scalar = built(bad + "/4_Scalar_input.py");
  auto s = kernelbench_inputs(scalar, 1);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("get_inputs()[1] is a int, not a tensor"), std::string::npos) << s.message();
  auto list = built(bad + "/5_Forward_returns_list.py");
  auto out = list.output_info(1);
  ASSERT_FALSE(out);
  EXPECT_NE(out.message().find("forward() returned a list"), std::string::npos) << out.message();
  auto unbuilt = kernelbench_module::load(problems + "/level1/1_Small_matmul.py");
  ASSERT_TRUE(unbuilt);
  EXPECT_FALSE(kernelbench_forward(*unbuilt, {}));
}

}  // namespace
}  // namespace crucible::kernels
