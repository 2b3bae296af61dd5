#include "kernels/reference/torch_dtypes.hpp"

#include <stdexcept>

#include "kernels/abi/crucible_abi.h"

namespace crucible::kernels {

namespace {

struct dtype_row {
  const char* name;
  int code;
  c10::ScalarType type;
  bool floating;
};

constexpr dtype_row dtype_table[] = {
    {"float32", CRU_FLOAT32, c10::ScalarType::Float, true},
    {"float16", CRU_FLOAT16, c10::ScalarType::Half, true},
    {"bfloat16", CRU_BFLOAT16, c10::ScalarType::BFloat16, true},
    {"float64", CRU_FLOAT64, c10::ScalarType::Double, true},
    {"int32", CRU_INT32, c10::ScalarType::Int, false},
    {"int64", CRU_INT64, c10::ScalarType::Long, false},
    {"bool", CRU_BOOL, c10::ScalarType::Bool, false},
};

}  // namespace

c10::ScalarType scalar_type_of(std::string_view dtype) {
  for (const auto& row : dtype_table)
    if (dtype == row.name) return row.type;
  throw std::invalid_argument("unsupported dtype '" + std::string(dtype) + "'");
}

c10::ScalarType scalar_type_of_code(int code) {
  for (const auto& row : dtype_table)
    if (code == row.code) return row.type;
  throw std::invalid_argument("unsupported ABI dtype code " + std::to_string(code));
}

std::string dtype_name(c10::ScalarType type) {
  for (const auto& row : dtype_table)
    if (type == row.type) return row.name;
  return {};
}

bool is_floating_dtype(std::string_view dtype) {
  for (const auto& row : dtype_table)
    if (dtype == row.name) return row.floating;
  return false;
}

}  // namespace crucible::kernels
