"""The torch device of a model: the user's choice, checked, and the fitted module moved there."""

import copy
import numbers

import torch

__all__ = ["DEVICE_CONSTRAINT", "resolve_device", "module_on", "host_to_device"]

#: The declared constraint of a ``device`` parameter (``_parameter_constraints``);
#: :func:`resolve_device` checks that the device named exists.
DEVICE_CONSTRAINT = [str, torch.device, numbers.Integral, None]


def resolve_device(device="auto"):
    """The torch device to use, with a clear error when it is not available.

    Parameters
    ----------
    device : str, torch.device or None, default="auto"
        ``"auto"`` (or ``None``) picks CUDA when ``torch.cuda.is_available()``,
        else the CPU; any other value names a device (``"cpu"``, ``"cuda"``,
        ``"cuda:1"``, ``"mps"``, ...). ``"meta"`` (tensors without values) is
        accepted, for tests.

    Returns
    -------
    torch.device

    Raises
    ------
    ValueError
        If ``device`` is not a device name, names a CUDA device that this
        torch cannot use (no CUDA build, no GPU, or an index beyond the
        visible devices), or names another accelerator (``"mps"``, ``"xpu"``,
        ...) whose ``is_available()`` is False or that torch has no module for.
    """
    if device is None or (isinstance(device, str) and device == "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if isinstance(device, numbers.Integral) and not isinstance(device, bool):
        device = f"cuda:{int(device)}"  # torch's convention: an int is a CUDA index
    if not isinstance(device, (str, torch.device)):
        raise ValueError(f"device must be 'auto', 'cpu', 'cuda', 'cuda:<index>' or a "
                         f"torch.device, got {device!r}.")
    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError, TypeError) as exc:
        raise ValueError(f"device={device!r} is not a torch device name; use 'auto', 'cpu', "
                         f"'cuda' or 'cuda:<index>' ({exc}).") from None
    if dev.type == "cuda":
        name = str(device) if isinstance(device, str) else str(dev)
        if not torch.cuda.is_available():
            why = ("this torch build has no CUDA support" if torch.version.cuda is None
                   else "no usable GPU was found")
            raise ValueError(f"device={name!r} was requested but torch.cuda.is_available() is "
                             f"False ({why}; torch {torch.__version__}). Use device='auto' "
                             "(CUDA when available, else the CPU) or device='cpu'.")
        count = torch.cuda.device_count()
        if dev.index is not None and dev.index >= count:
            raise ValueError(f"device={name!r} was requested but torch sees {count} CUDA "
                             f"device{'s' if count != 1 else ''} (indices 0..{count - 1}).")
    elif dev.type not in ("cpu", "meta"):
        # torch parses the name of every device type it knows ("mps" on Linux too): a
        # fit there would fail later, in torch's own error
        mod = torch.backends.mps if dev.type == "mps" else getattr(torch, dev.type, None)
        is_available = getattr(mod, "is_available", None)
        if not (callable(is_available) and is_available()):
            name = str(device) if isinstance(device, str) else str(dev)
            raise ValueError(f"device={name!r} was requested but that device is not "
                             f"available to this torch ({torch.__version__}). Use "
                             "device='auto' (CUDA when available, else the CPU) or "
                             "device='cpu'.")
    return dev


def module_on(module, device):
    """A fitted ``module`` (kept on the CPU) ready to run on ``device``.

    On the CPU it is the module itself; elsewhere a copy moved there, so that the
    fitted estimator's weights never leave the CPU: a predict that fails (or one
    running in another thread) cannot leave them on a GPU, where pickling would
    tie the estimator to CUDA.

    Parameters
    ----------
    module : torch.nn.Module
    device : torch.device

    Returns
    -------
    torch.nn.Module
    """
    if device.type == "cpu":
        return module.cpu()
    return copy.deepcopy(module).to(device)


def host_to_device(array, device, dtype=None):
    """``torch.as_tensor(array, dtype=dtype, device=device)`` without a wait for the device.

    torch copies pageable host memory to a GPU synchronously: the host waits for
    every kernel queued before the copy. Host data made in every epoch (a
    permutation of the rows, fresh negative pairs) would then cost a round trip
    per epoch. Here the data go through pinned memory with
    ``non_blocking=True``: the copy is queued like a kernel (torch keeps the
    pinned buffer until the copy is done). On the CPU it is ``torch.as_tensor``.

    Parameters
    ----------
    array : array-like
    device : str or torch.device
    dtype : torch.dtype or None, default=None

    Returns
    -------
    torch.Tensor
    """
    t = torch.as_tensor(array, dtype=dtype, device="cpu")  # not the default device
    device = torch.device(device)
    if device.type == "cpu":
        return t
    if device.type == "cuda":
        t = t.pin_memory()
    return t.to(device, non_blocking=True)
