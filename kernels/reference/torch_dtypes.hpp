#pragma once
// One table between the dtype names of the wire (tensor_spec.dtype), the ABI's codes (crucible_abi.h) and
// LibTorch's scalar types, for every LibTorch user of this tree. Includes c10: include only from .cpp files.
#include <string>
#include <string_view>

#include <c10/core/ScalarType.h>

namespace crucible::kernels {

/// float32 | float16 | bfloat16 | float64 | int32 | int64 | bool; std::invalid_argument for another name.
c10::ScalarType scalar_type_of(std::string_view dtype);
/// The ABI's dtype code (CRU_FLOAT32, ...); std::invalid_argument for an unknown code.
c10::ScalarType scalar_type_of_code(int code);
/// The wire's name of a scalar type; empty for one the wire has no name for.
std::string dtype_name(c10::ScalarType type);
bool is_floating_dtype(std::string_view dtype);

}  // namespace crucible::kernels
