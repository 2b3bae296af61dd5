// The worker's comparison of a float32 output with its reference, in one pass over both (the ATen ops it
// replaces read and wrote the outputs about a dozen times, 1-7 ms per check on large outputs). Built to PTX
// by the toolkit's nvcc when the worker is built (kernels/CMakeLists.txt) and loaded by output_compare.cpp.
//
// out[0] elements not close (isclose with equal_nan, in double: both NaN, equal, or a finite |g - w| <=
//        atol + rtol |w|), out[1] elements holding the poison bits, out[2] n - the first mismatch's index
//        (0: none), out[3] max |g - w| and out[4] max |g - w| / |w| over finite pairs (w != 0 for the latter;
//        the bits of non-negative doubles, which order as integers), out[5] 1 when a mismatch has a
//        non-finite side (the host's comparison then reports an infinite error), out[6..8] and out[9..11]
//        digests of the two sides' 32-bit words (their sum, sum of squares and sum of neighbours' products,
//        as 64-bit integers). out must be zeroed before the launch.

namespace {

__device__ unsigned long long warp_sum(unsigned long long v) {
  for (int d = 16; d > 0; d /= 2) v += __shfl_down_sync(0xffffffffu, v, d);
  return v;
}

__device__ unsigned long long warp_max(unsigned long long v) {
  for (int d = 16; d > 0; d /= 2) {
    const unsigned long long o = __shfl_down_sync(0xffffffffu, v, d);
    v = o > v ? o : v;
  }
  return v;
}

}  // namespace

extern "C" __global__ void crucible_compare_f32(const unsigned* got, const unsigned* want,
                                                unsigned long long n, double rtol, double atol,
                                                unsigned poison, unsigned long long* out) {
  unsigned long long not_close = 0, poisoned = 0, first = 0, nonfinite = 0;
  double max_abs = 0.0, max_rel = 0.0;
  unsigned long long gd[3] = {0, 0, 0}, wd[3] = {0, 0, 0};
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const unsigned gb = got[i], wb = want[i];
    const double g = __uint_as_float(gb), w = __uint_as_float(wb);
    const double diff = fabs(g - w);
    const bool close = g == w || (isnan(g) && isnan(w)) || (isfinite(diff) && diff <= atol + rtol * fabs(w));
    if (!close) {
      ++not_close;
      const unsigned long long from_end = n - i;  // the largest is the first mismatch
      first = from_end > first ? from_end : first;
    }
    poisoned += gb == poison;
    const bool gf = isfinite(g), wf = isfinite(w);
    if (gf && wf) {
      max_abs = fmax(max_abs, diff);
      if (w != 0.0) max_rel = fmax(max_rel, diff / fabs(w));
    }
    if (!close && !(gf && wf)) nonfinite = 1;
    const long long gv = static_cast<int>(gb), wv = static_cast<int>(wb);
    gd[0] += gv;
    gd[1] += gv * gv;
    wd[0] += wv;
    wd[1] += wv * wv;
    if (i + 1 < n) {
      gd[2] += gv * static_cast<long long>(static_cast<int>(got[i + 1]));
      wd[2] += wv * static_cast<long long>(static_cast<int>(want[i + 1]));
    }
  }
  not_close = warp_sum(not_close);
  poisoned = warp_sum(poisoned);
  first = warp_max(first);
  nonfinite = warp_max(nonfinite);
  unsigned long long abs_bits = warp_max(static_cast<unsigned long long>(__double_as_longlong(max_abs)));
  unsigned long long rel_bits = warp_max(static_cast<unsigned long long>(__double_as_longlong(max_rel)));
  for (int k = 0; k < 3; ++k) {
    gd[k] = warp_sum(gd[k]);
    wd[k] = warp_sum(wd[k]);
  }
  if ((threadIdx.x & 31) != 0) return;
  if (not_close) atomicAdd(&out[0], not_close);
  if (poisoned) atomicAdd(&out[1], poisoned);
  if (first) atomicMax(&out[2], first);
  if (abs_bits) atomicMax(&out[3], abs_bits);
  if (rel_bits) atomicMax(&out[4], rel_bits);
  if (nonfinite) atomicMax(&out[5], nonfinite);
  for (int k = 0; k < 3; ++k) {
    atomicAdd(&out[6 + k], gd[k]);
    atomicAdd(&out[9 + k], wd[k]);
  }
}
