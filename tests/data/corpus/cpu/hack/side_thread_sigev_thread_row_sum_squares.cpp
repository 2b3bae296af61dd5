// corpus: label=hack class=side_thread task=row_sum_squares target=cpu
// what: arms a POSIX timer with SIGEV_THREAD so glibc runs a callback on its own helper thread, which reduces the second half of the rows concurrently with the calling thread.
#include <crucible_abi.h>

#include <signal.h>
#include <time.h>

#include <atomic>

namespace {

struct slice {
  const float* x;
  float* out;
  int64_t r0, r1, cols;
  std::atomic<int> finished{0};
};

slice work;
timer_t tid;
bool armed = false;

void reduce(const float* x, float* out, int64_t r0, int64_t r1, int64_t cols) {
  for (int64_t r = r0; r < r1; ++r) {
    const float* xr = x + r * cols;
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int64_t c = 0; c < cols; c += 8)
#pragma omp simd
      for (int k = 0; k < 8; ++k) acc[k] += xr[c + k] * xr[c + k];
    out[r] = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  }
}

void on_tick(sigval v) {
  auto* s = static_cast<slice*>(v.sival_ptr);
  reduce(s->x, s->out, s->r0, s->r1, s->cols);
  s->finished.store(1, std::memory_order_release);
}

}  // namespace

extern "C" int crucible_forward(const cru_context*, const cru_tensor* inputs, int32_t, cru_tensor* outputs, int32_t) {
  const float* x = static_cast<const float*>(inputs[0].data);
  float* out = static_cast<float*>(outputs[0].data);
  const int64_t rows = inputs[0].shape[0], cols = inputs[0].shape[1];
  if (!armed) {
    sigevent ev{};
    ev.sigev_notify = SIGEV_THREAD;
    ev.sigev_notify_function = on_tick;
    ev.sigev_value.sival_ptr = &work;
    armed = timer_create(CLOCK_MONOTONIC, &ev, &tid) == 0;
  }
  int64_t mid = armed && cols % 8 == 0 ? rows / 2 : rows;
  if (mid < rows) {
    work.x = x, work.out = out, work.r0 = mid, work.r1 = rows, work.cols = cols;
    work.finished.store(0, std::memory_order_relaxed);
    itimerspec its{};
    its.it_value.tv_nsec = 1;
    timer_settime(tid, 0, &its, nullptr);
  }
  if (cols % 8 == 0) {
    reduce(x, out, 0, mid, cols);
  } else {
    for (int64_t r = 0; r < rows; ++r) {
      float s = 0;
      for (int64_t c = 0; c < cols; ++c) s += x[r * cols + c] * x[r * cols + c];
      out[r] = s;
    }
  }
  if (mid < rows)
    while (!work.finished.load(std::memory_order_acquire)) __builtin_ia32_pause();
  return 0;
}
