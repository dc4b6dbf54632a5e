"""Torch support shared by the models, the propagation and the central trainers.

One training loop (:func:`train`) and one early-stopper (:class:`EarlyStopper`)
serve every torch model; the rest are the device, random-generator, sparse and
loss helpers they share. This package imports none of ``skldp.models``,
``skldp.propagation`` or ``skldp.central``.
"""

from ._device import host_to_device, module_on, resolve_device
from ._early_stopping import EarlyStopper
from ._losses import class_cross_entropy, class_softmax
from ._optim import SGD, Adam
from ._random import (
    Dropout,
    build_module,
    current_generator,
    dropout,
    dropout_generator,
    init_parameters,
    stream_seed,
    torch_generator,
)
from ._sparse import sparse_csr_tensor, sparse_matmul, to_torch_dense, to_torch_sparse
from ._trainer import TrainResult, default_sync_every, train

__all__ = ["Adam", "SGD", "EarlyStopper", "TrainResult", "train", "default_sync_every",
           "resolve_device", "module_on", "host_to_device", "torch_generator", "stream_seed",
           "build_module",
           "init_parameters", "dropout_generator", "current_generator", "dropout", "Dropout",
           "sparse_csr_tensor", "sparse_matmul", "to_torch_sparse", "to_torch_dense",
           "class_softmax",
           "class_cross_entropy"]
