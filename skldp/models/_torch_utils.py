"""Moved to :mod:`skldp._torch`; re-exported here for code that imports the old path."""

from .._torch import (  # noqa: F401
    Dropout,
    build_module,
    class_cross_entropy,
    class_softmax,
    current_generator,
    dropout,
    dropout_generator,
    init_parameters,
    module_on,
    resolve_device,
    sparse_csr_tensor,
    sparse_matmul,
    stream_seed,
    to_torch_dense,
    to_torch_sparse,
    torch_generator,
)
