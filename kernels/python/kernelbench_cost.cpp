#include "kernels/python/kernelbench_cost.hpp"

#include <pybind11/embed.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include "kernels/python/kernelbench_module_impl.hpp"
#include "kernels/python/kernelbench_tensors.hpp"

namespace py = pybind11;

namespace crucible::kernels {

namespace {

// The trace's Python side. Ops are named by their overload packet without an in-place "_" (relu_ reads
// what relu reads). `whole` walks back from the tensors needed whole, last op first: an op that makes one
// of them no longer makes it needed (it is written there), and needs whole the arguments it reads whole.
// Tensors are kept alive until the walk, so that no id is reused.
constexpr const char* cost_source = R"PY(
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

def _names(s):
    return frozenset(s.split())

# Every element of every tensor argument reaches the output.
_SAME = _names("""view _unsafe_view reshape _reshape_alias permute transpose t expand expand_as unsqueeze
    squeeze contiguous clone alias detach flatten unflatten view_as movedim _to_copy to lift_fresh
    lift_fresh_copy repeat flip roll cat stack pixel_shuffle pixel_unshuffle channel_shuffle
    native_channel_shuffle view_copy permute_copy t_copy expand_copy squeeze_copy unsqueeze_copy""")
_ELEMENTWISE = _names("""add sub rsub mul div true_divide floor_divide neg abs exp exp2 expm1 log log2 log10
    log1p sqrt rsqrt reciprocal sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh sigmoid relu
    relu6 gelu silu mish elu selu celu leaky_relu hardtanh hardsigmoid hardswish softplus softshrink
    hardshrink threshold clamp clamp_min clamp_max clip pow float_power erf erfc erfinv sign sgn floor ceil
    round trunc frac maximum minimum fmax fmin atan2 remainder fmod addcmul addcdiv square logit xlogy
    log_sigmoid_forward _prelu_kernel prelu lerp gt lt ge le eq ne logical_and logical_or logical_not
    logical_xor bitwise_and bitwise_or bitwise_xor bitwise_not isnan nan_to_num heaviside copysign hypot
    _softmax softmax _log_softmax log_softmax glu mse_loss l1_loss smooth_l1_loss huber_loss
    soft_margin_loss binary_cross_entropy binary_cross_entropy_with_logits kl_div""")
# Every element read (a rewrite may read it once for several uses, never skip it).
_REDUCING = _names("""sum mean amax amin max min argmax argmin aminmax prod var std var_mean std_mean norm
    linalg_vector_norm logsumexp cumsum cumprod cummax cummin logcumsumexp sort topk median nanmedian
    kthvalue native_layer_norm layer_norm native_group_norm group_norm native_batch_norm batch_norm
    _native_batch_norm_legit _native_batch_norm_legit_no_training cudnn_batch_norm _batch_norm_impl_index
    instance_norm _fused_rms_norm rms_norm mm addmm bmm baddbmm matmul linear dot vdot mv addmv outer ger
    addr _adaptive_avg_pool2d _adaptive_avg_pool3d adaptive_avg_pool1d adaptive_max_pool2d
    adaptive_max_pool3d""")
# Only these argument positions are read whole.
_POSITIONS = {"where": (0,), "masked_fill": (1,), "copy": (1,)}
# Windows: the input is read whole when no stride steps over a gap.
_WINDOWED = {"convolution": (3, 5, None), "_convolution": (3, 5, None),
             "max_pool1d": (2, 4, 1), "max_pool2d": (2, 4, 1), "max_pool3d": (2, 4, 1),
             "max_pool2d_with_indices": (2, 4, 1), "max_pool3d_with_indices": (2, 4, 1),
             "avg_pool1d": (2, None, 1), "avg_pool2d": (2, None, 1), "avg_pool3d": (2, None, 1)}
# The output may then be a view of something smaller: its write is not counted.
_BROADCASTS = _names("expand expand_as expand_copy repeat repeat_interleave tile broadcast_to")

def _windows_cover(name, args):
    """No element between windows: a stride of 1, or an undilated stride within the kernel (the tail a
    stride leaves is at most stride - 1 elements, within the floor's margin)."""
    stride_at, dilation_at, kernel_at = _WINDOWED[name]
    def arg(i, default):
        return args[i] if i is not None and len(args) > i and args[i] is not None else default
    def per_dim(v, n):
        v = list(v)
        return v * n if len(v) == 1 else v
    if kernel_at is None:  # convolution: the kernel is the weight's trailing dimensions
        kernel = list(args[1].shape[2:])
    else:
        kernel = list(arg(kernel_at, []))
    if not kernel:
        return False
    n = len(kernel)
    stride = per_dim(arg(stride_at, []) or kernel, n)
    dilation = per_dim(arg(dilation_at, [1]), n)
    if kernel_at is None and arg(6, False):  # transposed: the padding crops no input's every output
        padding = per_dim(arg(4, [0]), n)
        return all(p <= d * (k - 1) for p, d, k in zip(padding, dilation, kernel))
    return all(s == 1 or (d == 1 and s <= k) for s, d, k in zip(stride, dilation, kernel))

def _reads_whole(name, args):
    """The argument positions read whole, or None for every position."""
    if name in _SAME or name in _ELEMENTWISE or name in _REDUCING:
        return None
    if name in _POSITIONS:
        return _POSITIONS[name]
    if name in _WINDOWED:
        try:
            return (0,) if _windows_cover(name, args) else ()
        except Exception:
            return ()
    return ()

class Trace(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = []
        self.doubt = ""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        try:
            self._record(func, args, kwargs, out)
        except Exception as e:
            self.doubt = self.doubt or "the trace failed at %s (%s)" % (func, e)
        return out

    def _record(self, func, args, kwargs, out):
        name = func.overloadpacket.__name__
        written = []
        for i, a in enumerate(func._schema.arguments):
            if a.alias_info is not None and a.alias_info.is_write:
                v = args[i] if i < len(args) else kwargs.get(a.name)
                if isinstance(v, torch.Tensor):
                    written.append(v)
                    if v._is_view():
                        self.doubt = self.doubt or name + " writes into a view"
        base = name[:-1] if name.endswith("_") and not name.startswith("_") else name
        inplace = name != base
        whole = _reads_whole(base, args)
        reads = []
        for i, a in enumerate(args):
            if whole is None or i in whole:
                reads += [t for t in tree_flatten(a)[0] if isinstance(t, torch.Tensor)]
        if whole is None:
            reads += [t for t in tree_flatten(kwargs)[0] if isinstance(t, torch.Tensor)
                      and not any(t is w for w in written)]
        if not inplace:  # an out= or copy_ target is written, not read
            reads = [t for t in reads if not any(t is w for w in written)]
        outs = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
        self.ops.append((base, reads, outs + written, args, kwargs))

def start():
    t = Trace()
    t.__enter__()
    t.on = True
    return t

def stop(trace):
    if getattr(trace, "on", False):
        trace.on = False
        trace.__exit__(None, None, None)

def _mb(n):
    return "%.3g MB" % (n / 1e6)

def _storage(t):
    try:
        return t.untyped_storage().data_ptr()
    except AttributeError:
        return t.storage().data_ptr()

def finish(trace, inputs, output):
    """(bytes, account) of the pass just traced."""
    stop(trace)
    ops, trace.ops = trace.ops, []
    if trace.doubt:
        return 0.0, "no floor: " + trace.doubt
    held = {_storage(t) for t in inputs if t.numel() > 0}
    if output.numel() > 0 and _storage(output) in held:
        return 0.0, "no floor: the output is an input or a view of one"
    need = {id(output)}
    broadcast = False
    made_here = any(t is output for op in ops for t in op[2])  # not a parameter returned as it is
    for name, reads, made, args, kwargs in reversed(ops):
        if not any(id(t) in need for t in made):
            continue
        broadcast = broadcast or name in _BROADCASTS
        for t in made:
            need.discard(id(t))
        need.update(id(t) for t in reads)
    read = [t for t in inputs if id(t) in need]
    read_bytes = float(sum(t.numel() * t.element_size() for t in read))
    dense = all(s != 0 for s in output.stride()) and output.is_contiguous()
    counted = dense and not broadcast and made_here
    write_bytes = float(output.numel() * output.element_size()) if counted else 0.0
    account = "reads %d of %d inputs whole (%s)" % (len(read), len(inputs), _mb(read_bytes))
    account += (", writes its output (%s)" % _mb(write_bytes)) if counted else \
        ", its output's write not counted (%s)" % ("a broadcast" if broadcast else
                                                    "not dense" if not dense else "made by no op")
    return read_bytes + write_bytes, account
)PY";

}  // namespace

expected<at::Tensor> traced_forward(kernelbench_module& m, const std::vector<at::Tensor>& inputs,
                                    module_cost* cost) {
  *cost = {};
  py::object helper, trace;
  try {
    helper = helper_module("crucible_cost", cost_source);
    trace = helper.attr("start")();
  } catch (const std::exception& e) {
    cost->account = std::string("no floor: the trace could not start (") + e.what() + ")";
    return kernelbench_forward(m, inputs);
  }
  auto y = kernelbench_forward(m, inputs);
  try {
    if (!y) {
      helper.attr("stop")(trace);
      return y;
    }
    py::list xs;
    for (const auto& x : inputs) xs.append(py::cast(x));
    auto r = helper.attr("finish")(trace, xs, py::cast(*y)).cast<std::pair<double, std::string>>();
    cost->cost.bytes = r.first;
    cost->account = r.second;
  } catch (const std::exception& e) {
    cost->cost = {};
    cost->account = std::string("no floor: ") + e.what();
    try {
      helper.attr("stop")(trace);  // never left on: it would trace every later op
    } catch (const std::exception&) {
    }
  }
  return y;
}

}  // namespace crucible::kernels
