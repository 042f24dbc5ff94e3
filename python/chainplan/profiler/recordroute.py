"""``chainplan.record`` on a model that is not an ``nn.Sequential``: its training steps
run through the chain ``chainplan.profile`` measures.

``record`` times stages from hooks on them, and a model as written has no module per stage:
its stages are cut from its captured graph (:mod:`chainplan.graph`). While the recording is
on, the model's forward is routed (an instance attribute shadowing the class's ``forward``,
removed when the block ends): a call with gradients is captured at the first call (the
split ``profile()`` makes, from the same cache), bound, and run stage after stage under plain
autograd, with the side values left in the graph, so that the step computes what the model
computes (the extracted chain is the model's own computation, bit for bit) and the recorder's
hooks see every stage. The epilogue then rebuilds what ``forward`` returns; when the model
computes its loss itself (``labels=``), the epilogue is the loss stage and is timed and
measured as ``record(loss_fn=...)`` does for a loss given. Calls without gradients, and
calls of another kind than the first (other shapes), run the model's own forward
unrecorded, as steps of another input shape are not timed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import torch
from torch import nn

from chainplan.graph.chain import ExtractedChain, extract
from chainplan.graph.split import bound_side

__all__: list[str] = []


class Recorder(Protocol):
    """What the route needs of the recording (:class:`chainplan.profiler.recording.Recording`,
    which imports this module): the loss it was given, the stages it times, and the loss
    timing of a model that computes its loss itself."""

    loss_fn: Callable[..., torch.Tensor] | None
    model_loss: bool
    keep_logits: bool

    def attach(self, stages: list[nn.Module], names: list[str], resident: int,
               model_loss: bool, *, holds_end: bool, logits_dropped: bool) -> None: ...

    def loss_pre(self, args: tuple[Any, ...]) -> None: ...

    def loss_post(self, args: tuple[Any, ...], value: Any) -> None: ...


class ChainRoute:
    """The routed forward of a recorded model (module docstring); a context manager."""

    def __init__(self, model: nn.Module, rec: Recorder) -> None:
        self.model = model
        self.rec = rec
        self.chain: ExtractedChain | None = None

    def __enter__(self) -> ChainRoute:
        self.model.__dict__["forward"] = self.forward
        return self

    def __exit__(self, *exc: object) -> None:
        self.model.__dict__.pop("forward", None)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        model = self.model
        if not torch.is_grad_enabled():
            return type(model).forward(model, *args, **kwargs)
        if self.chain is None:
            self.chain = self._attach(args, kwargs)
        elif not self.chain.matches(args, kwargs):
            return type(model).forward(model, *args, **kwargs)
        chain = self.chain
        x, side = chain.bind(args, kwargs, detach=False)
        with side.scope():
            for stage in chain.stages:
                x = stage(x)
            if not self.rec.model_loss:
                return chain.finish(x)
            self.rec.loss_pre((x,))
            out = chain.finish(x)
            self.rec.loss_post((x,), chain.outputs.loss_of(out))
            return out

    def _attach(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> ExtractedChain:
        """Capture the model for this kind of call (its own forward, not the route) and
        hand the stages to the recorder."""
        model = self.model
        self.__exit__()
        try:
            chain = extract(model, args, kwargs, keep_logits=self.rec.keep_logits)
            _, _, resident = bound_side(chain, model, args, kwargs)
        finally:
            self.__enter__()
        outs = chain.outputs
        model_loss = self.rec.loss_fn is None and outs.loss_index is not None
        self.rec.attach(list(chain.stages), list(chain.names), resident, model_loss,
                        holds_end=model_loss and not outs.plain,
                        logits_dropped=chain.logits_dropped)
        return chain
