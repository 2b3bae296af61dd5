#include "kernels/abi/host_tensor.hpp"

#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

#include "kernels/task/op_catalog.hpp"

namespace crucible::kernels {

void host_tensor::free_deleter::operator()(void* p) const {
  std::free(p);
}

host_tensor::host_tensor(std::string dtype, std::vector<int64_t> shape)
    : shape_(std::move(shape)), dtype_(std::move(dtype)) {
  int elem = dtype_size(dtype_);
  if (elem == 0) throw std::invalid_argument("host_tensor: unknown dtype '" + dtype_ + "'");
  if (shape_.size() > 8) throw std::invalid_argument("host_tensor: more than 8 dims");
  numel_ = 1;
  for (auto d : shape_) numel_ *= d;
  bytes_ = static_cast<size_t>(numel_) * elem;
  size_t alloc = (bytes_ + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, alloc == 0 ? 64 : alloc);
  if (!p) throw std::bad_alloc();
  data_.reset(p);
}

cru_tensor host_tensor::view() const {
  cru_tensor t{};
  t.data = const_cast<void*>(data());
  t.dtype = dtype_code(dtype_);
  t.ndim = static_cast<int32_t>(shape_.size());
  int64_t stride = 1;
  for (int i = t.ndim - 1; i >= 0; --i) {
    t.shape[i] = shape_[i];
    t.stride[i] = stride;
    stride *= shape_[i];
  }
  return t;
}

host_tensor host_tensor::clone() const {
  if (empty()) return {};
  host_tensor out(dtype_, shape_);
  std::memcpy(out.data(), data(), bytes_);
  return out;
}

}  // namespace crucible::kernels
