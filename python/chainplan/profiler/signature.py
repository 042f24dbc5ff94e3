"""The model signature stored with every profile (the ``model_signature`` column of ``runs``).

A profile can stand in for a new measurement only when the model it measured is the same:
same modules with the same settings, same parameter and buffer names, shapes and dtypes,
on the same kind of device, under the same torch version (whose kernels set the times and
the saved tensors).
This module is the one definition of "the same": the profiler writes the signature and
:class:`~chainplan.checkpointed.Checkpointed` looks stored profiles up by it.

The values of the parameters are not part of it (training changes them, not the costs), and
neither is the code of a module's ``forward``: a changed ``forward`` under the same class
and parameters keeps its signature. A module's settings are what its ``extra_repr()`` says
(``Dropout(p=0.1)``, a convolution's stride, an in-place activation): they change what a
step holds without changing a parameter (a dropout at ``p=0`` saves no noise tensor), so a
profile of one setting never stands in for another. A module whose ``extra_repr()`` shows
values that change while training only loses the reuse of its profiles.
"""

from __future__ import annotations

import json

import torch
from torch import nn

from chainplan.profilerow import signature

__all__ = ["model_signature"]

# Bumped when the document below changes, so that old signatures never match new ones.
# 2: each module's extra_repr() (its settings: a dropout's probability, a stride).
_VERSION = 2


def _tensor_entry(name: str, t: torch.Tensor) -> list[object]:
    return [name, list(t.shape), str(t.dtype).removeprefix("torch.")]


def model_signature(model: nn.Module, device: torch.device | str) -> str:
    """The signature of ``model`` profiled on ``device``: ``"sha256:<hex>"``.

    It digests the module tree (each submodule's name, class and ``extra_repr()``), every
    parameter's and buffer's name, shape and dtype, the device type and index, and
    ``torch.__version__``.

    Args:
        model: the model (any ``nn.Module``).
        device: the device the profile runs on (the sample's device).

    Returns:
        A digest stable across processes and machines for the same model, device and torch.
    """
    doc = {
        "version": _VERSION,
        "torch": torch.__version__,
        "device": str(torch.device(device)),
        "modules": [[name, f"{type(m).__module__}.{type(m).__qualname__}", m.extra_repr()]
                    for name, m in model.named_modules()],
        "parameters": [_tensor_entry(n, p) for n, p in model.named_parameters()],
        "buffers": [_tensor_entry(n, b) for n, b in model.named_buffers()],
    }
    return signature(json.dumps(doc, separators=(",", ":")))
