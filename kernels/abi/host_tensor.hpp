#pragma once
// A contiguous, 64-byte aligned host buffer with a dtype and shape, and its view under the candidate ABI.
// The eval worker, the reference executor and tests exchange tensors as these (no LibTorch in headers).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/abi/crucible_abi.h"

namespace crucible::kernels {

class host_tensor {
 public:
  host_tensor() = default;
  /// Uninitialized storage for `shape` elements of `dtype` (a name from crucible_abi.h's list).
  host_tensor(std::string dtype, std::vector<int64_t> shape);

  void* data() { return data_.get(); }
  const void* data() const { return data_.get(); }
  template <class T>
  T* as() {
    return static_cast<T*>(data());
  }
  template <class T>
  const T* as() const {
    return static_cast<const T*>(data());
  }

  size_t bytes() const { return bytes_; }
  int64_t numel() const { return numel_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  const std::string& dtype() const { return dtype_; }
  bool empty() const { return !data_; }

  /// A contiguous ABI view of this buffer (the buffer must outlive the view).
  cru_tensor view() const;

  /// A deep copy at a new address.
  host_tensor clone() const;

 private:
  struct free_deleter {
    void operator()(void* p) const;
  };
  std::unique_ptr<void, free_deleter> data_;
  size_t bytes_ = 0;
  int64_t numel_ = 0;
  std::vector<int64_t> shape_;
  std::string dtype_;
};

}  // namespace crucible::kernels
