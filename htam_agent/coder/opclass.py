"""The operator class of a reference (memory.schema.OP_CLASSES): the one classifier the analyze node, the offline
coder's patterns and the verdict table share, so a problem has one class wherever it is keyed by it.

It reads the operator names `reference.Reference.ops` lists (a regex over forward's source where tracing fails):
a class's own operators decide it, FLOP-heavy ones first, and a heavy operator with anything after it is a
fused chain.
"""

from __future__ import annotations

_ELEMENTWISE = {
    "relu", "leaky_relu", "gelu", "silu", "sigmoid", "tanh", "hardtanh", "hardswish", "hardsigmoid", "elu",
    "selu", "softplus", "mish", "mul", "add", "sub", "div", "truediv", "neg", "exp", "log", "abs", "clamp",
    "clip", "pow", "sqrt", "rsqrt", "where", "maximum", "minimum", "erf", "dropout", "contiguous", "view",
    "reshape", "flatten", "permute", "transpose", "getitem", "getattr", "size", "squeeze", "unsqueeze", "iadd",
    "imul", "floordiv", "swish", "identity", "relu6", "celu", "gt", "lt", "ge", "le", "sign", "to", "float",
}
#: each class's operators, by the names `reference.op_name` gives
CLASS_OPS = [
    ("attention", {"scaled_dot_product_attention", "multiheadattention"}),
    ("convolution", {"conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
                     "convtranspose2d", "convtranspose3d", "convtranspose1d"}),
    ("matmul", {"linear", "matmul", "mm", "bmm", "addmm", "baddbmm", "einsum"}),
    ("pooling", {"max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
                 "maxpool1d", "maxpool2d", "maxpool3d", "avgpool1d", "avgpool2d", "avgpool3d",
                 "adaptive_avg_pool2d", "adaptiveavgpool2d"}),
    ("normalization", {"softmax", "log_softmax", "layer_norm", "layernorm", "rms_norm", "rmsnorm", "group_norm",
                       "groupnorm", "batch_norm", "batchnorm2d", "batchnorm1d", "instance_norm", "instancenorm2d",
                       "normalize", "logsoftmax"}),
    ("scan", {"cumsum", "cumprod", "cummax", "cummin"}),
    ("reduction", {"sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "prod", "norm", "var",
                   "std", "logsumexp", "cross_entropy", "mse_loss", "nll_loss", "kl_div", "smooth_l1_loss",
                   "l1_loss", "crossentropyloss"}),
]
#: the FLOP-heavy classes: one of them with anything after it is a fused chain, several are a model
HEAVY = {"attention", "convolution", "matmul"}


def classify(ops: list[str]) -> str:
    """One operator class (memory.schema.OP_CLASSES) for the reference's op list."""
    found = [cls for op in ops for cls, names in CLASS_OPS if op in names]
    heavy = [c for c in found if c in HEAVY]
    if len(heavy) >= 3 or (len(heavy) >= 2 and len(set(heavy)) > 1):
        return "model"
    others = [op for op in ops if op not in _ELEMENTWISE or op in ("dropout",)]
    compute_ops = [op for op in ops if op not in {"getitem", "getattr", "size", "view", "reshape", "contiguous",
                                                    "flatten", "permute", "transpose", "squeeze", "unsqueeze"}]
    if not found:
        return "elementwise" if compute_ops and not [o for o in others if o not in _ELEMENTWISE] else "other"
    main = heavy[0] if heavy else found[0]
    extra = len(compute_ops) - 1
    if main in HEAVY and extra >= 1:
        return "attention" if main == "attention" else "fused"
    if len(set(found)) > 1:
        return "fused"
    return main


_SHAPE_OPS = {"getitem", "getattr", "size", "view", "reshape", "contiguous", "flatten", "permute", "transpose",
              "squeeze", "unsqueeze", "to", "float", "identity", "dropout"}


def features_of(ops: list[str]) -> list[str]:
    """The operator classes the reference's ops contain (a conv + ReLU chain: convolution and elementwise), so
    the memory offers only strategies that fit work the reference really does."""
    found = {cls for op in ops for cls, names in CLASS_OPS if op in names}
    if any(op in _ELEMENTWISE and op not in _SHAPE_OPS for op in ops):
        found.add("elementwise")
    return sorted(found)


__all__ = ["CLASS_OPS", "HEAVY", "classify", "features_of"]
