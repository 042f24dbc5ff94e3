"""``chainplan.profile``: measure every stage of a chain model and store the profile.

The recipe is that of rotor spec §1.4 and §7 item 25 (see ``measure.py``): each stage runs
on the previous stage's real output, forward with the graph recorded, backward with a
random gradient; times are medians of repetitions; the loss is the last stage. The stages
are an ``nn.Sequential``'s, or those split from any other model's graph, whose side values
(a mask, a timestep embedding) stay bound while the stages are measured and are counted
once, in every operation's overheads (:mod:`chainplan.graph.split`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import torch
from torch import nn
from tqdm import tqdm

from chainplan import _bind
from chainplan.errors import ProfileError
from chainplan.graph import headform
from chainplan.graph.call import encoder_decoder, training_call
from chainplan.graph.options import stage_options
from chainplan.graph.split import profiled_chain
from chainplan.graph.stage import GraphStage
from chainplan.profiler.call import chain_sample, loss_stage, profile_metadata
from chainplan.profiler.document import Profile, default_profile_dir
from chainplan.profiler.filename import check_profile_name, new_profile_path
from chainplan.profiler.labels import naming_stage
from chainplan.profiler.lossmeasure import chain_end, measure_loss
from chainplan.profiler.measuring import preserved
from chainplan.profiler.parallel import (
    OptimizerFactory,
    SplitModule,
    StageStructure,
    check_batch_sizes,
    measure_optimizer,
    resize_batch,
    split_modules,
    stage_structure,
    with_parallel,
)
from chainplan.profiler.rounds import Rounds
from chainplan.profiler.sizes import storage_nbytes
from chainplan.profiler.spread import (
    DEFAULT_SPREAD_WARNING,
    warn_if_spread,
)
from chainplan.profiler.stagemeasure import StageMeasurement, measure_stage, time_stage
from chainplan.profiler.stagerows import Form, held_during, loss_rows, stage_rows
from chainplan.profiler.stored import find_stored
from chainplan.profilerow import PARALLEL_REVISION
from chainplan.schema import write_profile
from chainplan.towers.profile import profile_towers_if_any

if TYPE_CHECKING:
    pass

_log = logging.getLogger("chainplan.profile")

__all__ = ["Profile", "profile_model", "default_profile_dir"]

LossFn = Callable[..., torch.Tensor]


def profile_model(
    model: nn.Module,
    *args: Any,
    loss_fn: LossFn | None = None,
    target: torch.Tensor | None = None,
    repeats: int = 5,
    warmup: int = 2,
    name: str | None = None,
    path: str | os.PathLike[str] | None = None,
    ingest: bool = True,
    progress: bool | None = None,
    spread_warning: float | None = DEFAULT_SPREAD_WARNING,
    stage_options: bool = True,
    reuse: bool = True,
    batch_sizes: Sequence[int] | None = None,
    optimizer: OptimizerFactory | None = None,
    keep_logits: bool = False,
    **kwargs: Any,
) -> Profile:
    """Measure each stage of ``model`` on a sample call and write (and store) the profile.

    Usage::

        prof = chainplan.profile(gpt, idx, mask=mask, loss_fn=F.cross_entropy, target=y)
        prof = chainplan.profile(llama, input_ids=ids, labels=ids)   # its own loss
        # (a language model's logits left out: out.logits is None, its head fused)

    Args:
        model: the model as written. An ``nn.Sequential`` called with one tensor is the
            chain of its stages (nested Sequentials flattened); any other model, or one
            called with more arguments, is captured with ``torch.export`` and split into a
            chain (``chainplan.stages(model, ...)`` shows the split).
        args, kwargs: a real call of ``forward``, positional or keyword
            (``input_ids=ids, attention_mask=m, labels=ids``). The chain input is its first
            tensor argument (positional first, then keywords in the order of ``forward``'s
            signature); its device is the device profiled. Keyword arguments named like the
            options below must be passed positionally.

    Keyword Args:
        loss_fn: the training loss, called as ``loss_fn(output, target)`` (or
            ``loss_fn(output)`` without a target), ``output`` being what ``forward``
            returns (a ``ModelOutput``: ``loss_fn`` may read ``.logits``). None: the loss
            ``forward`` computes itself (given ``labels=``), else a loss stage of no cost.
        target: the target passed to ``loss_fn``.
        repeats: timed repetitions per stage, ≥ 1 (default: 5); times are medians, the
            repetitions after the first taken in rounds over the whole chain.
        warmup: untimed repetitions first, ≥ 0 (default: 2).
        name: the model's name in the database and in the profile's file name (default:
            its class name): a label, never a path; names with ``/``, ``\\``, NUL or
            another control character, a leading ``.`` or ``-``, or over 128 bytes are
            refused (:mod:`chainplan.profiler.filename`).
        path: the Arrow file to write (default: a new file in
            :func:`default_profile_dir`, named after the model).
        ingest: store the profile in the database (default: True).
        progress: show a progress bar over the stages (default: when stderr is a terminal).
        spread_warning: warn (:class:`~chainplan.errors.ChainplanWarning`) when a stage's
            repeated times spread more than this, as ``(max − min) / median`` (default:
            0.25; None never warns). :attr:`Profile.spread` has every stage's spread.
        stage_options: for a model split from its graph, compute and measure each stage's
            operation-level options (:mod:`chainplan.graph.options`; default: True), which
            the ``rotor-ops`` planner chooses from.
        reuse: return the stored profile of the same call when there is one, instead of
            measuring again (default: True; only with ``ingest`` and no ``path``): the same
            model signature, arguments, loss, compute dtype, device, torch version, thread
            count, stages and ``stage_options`` (:mod:`chainplan.profiler.stored`; a file
            older than that key counts as made without options). False always measures; a
            call with ``batch_sizes`` or ``optimizer`` always measures too.
        batch_sizes: other batch sizes to time every stage at (the sample sliced, or
            repeated), for the parallel planners (default: none; docs/formats.md,
            "Parallel fields"). Models whose side values depend on the batch refuse them.
        optimizer: an optimizer class or factory (``torch.optim.Adam``, or ``lambda ps:
            torch.optim.SGD(ps, lr=0.1, momentum=0.9)``) whose step time and state the
            profile records, on clones of the parameters (default: none).
        keep_logits: a language model computing its own loss (``labels=``) returns its
            logits beside it (default: False: its output's ``logits`` is None, and its
            head is fused with its loss, never holding the logits; docs/executors.md, "The
            loss inside the chain"). True keeps PyTorch's head. The plans of the profile
            run the model as it was profiled.

    Every profile records each stage's shapes, parameter and bias counts and convolutions
    and linear layers (the parallel fields: :func:`chainplan.parallel.advise`,
    :func:`chainplan.parallel.search3d`).

    Returns:
        The :class:`Profile`, with its run id when ingested.

    Raises:
        ProfileError: a stage does not return one tensor, a stage or the loss raises while
            measured (the error names it, ``stage_index`` and ``stage_name`` say which, and
            the original error is its ``__cause__``), the call has no tensor argument, an
            option is out of range, or ``name`` cannot name a profile (before measuring).
        CaptureError: a model that is not a Sequential cannot be captured (a
            :class:`ProfileError` naming the construct, e.g. data-dependent control flow),
            or a language model's loss cannot be computed without its logits (the message
            names the option; ``keep_logits=True`` keeps them).
    """
    start = time.perf_counter()
    _check_spread_warning(spread_warning)
    batches = check_batch_sizes(batch_sizes)
    sample = chain_sample(model, args, kwargs)
    device = sample.device
    name = check_profile_name(name, default_from=model)  # before anything is measured
    # Towers joined at the loss, one per input, positional or keyword (chainplan.towers)?
    # The parallel fields (batch_sizes, optimizer: the advisors') describe one chain: with
    # them, one chain.
    if _tensor_inputs(args, kwargs) > 1 and not batches and optimizer is None:
        towers = profile_towers_if_any(
            model, args, kwargs, loss_fn=loss_fn, target=target, repeats=repeats,
            warmup=warmup, name=name, path=path, ingest=ingest, progress=show_progress(progress),
            spread_warning=spread_warning, reuse=reuse)
        if towers is not None:
            return towers
    was_training = model.training
    model.train()
    show = sys.stderr.isatty() if progress is None else progress
    measured: list[tuple[StageMeasurement, int]] = []  # each stage and its input's bytes
    options: list[str | None] = []  # each stage's operation-level options
    forms: dict[str, Form] = {}  # the last stage's other forms (a head unfused)
    structures: list[StageStructure] = []
    bfwd: list[list[tuple[float, ...]]] = []  # per stage, per batch size: the forwards
    bbwd: list[list[tuple[float, ...]]] = []
    bound = contextlib.ExitStack()  # the side values, bound while the stages are measured
    try:
        chain = bound.enter_context(profiled_chain(model, args, kwargs,
                                                   keep_logits=keep_logits))
        stages, names, x = chain.stages, chain.names, chain.input
        first = x  # a_0, which the timing rounds feed the first stage again
        if batches and chain.side_bytes > 0:
            raise ProfileError("batch_sizes needs a model whose stages take only the batch: "
                               "this model's side values (a mask, an embedding) are sized to "
                               "the sample")
        loss = loss_stage(model, chain, loss_fn, target)
        loss_name = loss[1] if loss is not None else "none"
        meta = profile_metadata(model, sample, name, repeats, warmup, args, kwargs, loss_name,
                                target)
        # Whether the stages' operation-level options are measured: a stored profile is
        # reused only when it answers the same question (find_stored).
        with_options = "true" if stage_options and chain.split is not None else "false"
        # Whether the output a training step holds through loss.backward() keeps a_L: the
        # model's own loss returned next to it (as chainplan.measure and record() hold it).
        holds_end = chain.holds_end and loss_fn is None and loss is not None
        meta = dataclasses.replace(meta, extra={**meta.extra, "stage_options": with_options,
                                                "holds_end": str(holds_end).lower(),
                                                "keep_logits": str(keep_logits).lower()})
        if reuse and ingest and path is None and not batches and optimizer is None:
            found = find_stored(meta, loss_name, list(names))
            if found is not None:
                stored_id, stored_path, stored_rows = found
                _log.info("profile of %s: reused the stored profile of the same call (run %d)",
                          name, stored_id)
                return Profile(path=stored_path, run_id=stored_id, model_name=name,
                               stage_names=tuple(names), rows=tuple(stored_rows),
                               seconds=time.perf_counter() - start,
                               side_bytes=chain.side_bytes, split=chain.split, reused=True,
                               keep_logits=keep_logits)
        modules, split_error = _split_modules(model, args, kwargs, device)

        bar = tqdm(total=len(stages) + 1, desc=f"profiling {name}", unit="stage", disable=not show,
                   leave=False)
        with bar:
            for k, (stage, sname) in enumerate(zip(stages, names, strict=True), start=1):
                bar.set_postfix_str(sname, refresh=False)
                with naming_stage(k, sname):
                    # The output holds a_L to the step's end (chain_end): measured so.
                    m = measure_stage(stage, x, repeats=repeats, warmup=warmup, device=device,
                                      timed_runs=1,
                                      output_held=holds_end and k == len(stages))
                    options.append(_options(stage, x, repeats, device) if stage_options
                                   and chain.split is not None else None)
                    # Not yet for an encoder-decoder: its unfused head's plans measured
                    # two logits above their prediction (T5, tests/graph/test_encoder_decoder.py).
                    # Not on the CPU (headform.DEVICES says why).
                    if (stage_options and chain.split is not None and k == len(stages)
                            and not encoder_decoder(model) and device.type in headform.DEVICES):
                        forms = _forms(stage, x, repeats, warmup, device, holds_end)
                    structures.append(stage_structure(stage, x, m.output, modules or []))
                    others = [measure_stage(stage, resize_batch(x, b), repeats=repeats,
                                            warmup=warmup, device=device) for b in batches]
                bfwd.append([o.fwd_times_s for o in others])
                bbwd.append([o.bwd_times_s for o in others])
                measured.append((m, storage_nbytes(x)))
                x = m.output
                bar.update()
            if split_error is not None:  # every stage ran: the whole forward's error stands
                raise split_error
            lm = None
            loss_target = target if target is not None else torch.empty(0)
            if loss is not None:
                with naming_stage(len(stages) + 1, f"loss {loss_name}"):
                    lm = measure_loss(loss[0], x, loss_target, repeats=repeats, warmup=warmup,
                                      device=device, timed_runs=1)
            rounds = Rounds(list(stages), list(names), measured, first, device,
                             None if loss is None else (loss[0], loss_target, loss_name))
            measured, lm = rounds.run(repeats - 1, lm)
            # holds_end: the model's output keeps a_L to the step's end (chain_end).
            rows = stage_rows(measured, names, lm, chain.side_bytes, options,
                              held_during(list(stages), measured, device),
                              holds_end=holds_end, forms=forms)
            end = chain_end(measured[-1][0], lm, holds_end=holds_end)
            rows.extend(loss_rows(len(stages) + 1, storage_nbytes(x), lm, loss_name, end,
                                  chain.side_bytes))
            rows = with_parallel(rows, structures, batches, bfwd, bbwd)
            bar.update()
        extra = {**meta.extra, "parallel_fields": PARALLEL_REVISION}
        if optimizer is not None:
            extra.update(measure_optimizer(model, optimizer, device, repeats=repeats,
                                           warmup=warmup))
        meta = dataclasses.replace(meta, extra=extra)
    finally:
        bound.close()
        model.train(was_training)
    if path is None:
        path = new_profile_path(name)
    out = write_profile(path, rows, meta)
    run_id = None
    if ingest:
        run_id = _bind.ingest(str(out))
    prof = Profile(path=out, run_id=run_id, model_name=name, stage_names=tuple(names),
                   rows=tuple(rows), seconds=time.perf_counter() - start,
                   side_bytes=chain.side_bytes, split=chain.split, keep_logits=keep_logits)
    warn_if_spread(prof.spread, spread_warning, what=f"profile of {name}")
    return prof


def _options(stage: nn.Module, x: torch.Tensor, repeats: int,
             device: torch.device) -> str | None:
    """A captured stage's measured options (:mod:`chainplan.graph.options`), with its
    buffers and the random streams left as they were."""
    with preserved(stage, device):
        return stage_options(stage, x, repeats=repeats, dev=device)


def _forms(stage: nn.Module, x: torch.Tensor, repeats: int, warmup: int,
           device: torch.device, output_held: bool) -> dict[str, Form]:
    """The last stage measured in each of its other forms (a language model's head unfused
    from its loss: :mod:`chainplan.graph.headform`): its memory as the stage's is measured,
    its times in ``repeats`` rounds alternating with the stage's own, so that a stretch of
    contention on the host slows both (:class:`~chainplan.profiler.stagerows.Form`)."""
    if not isinstance(stage, GraphStage):
        return {}
    out = {}
    for name in stage.forms:
        form = stage.form(name)
        m = measure_stage(form, x, repeats=1, warmup=warmup, device=device,
                          output_held=output_held)
        own: list[float] = []
        fwd: list[float] = []
        bwd: list[float] = []
        for _ in range(repeats):
            f, b = time_stage(stage, x, device=device)
            own.append(f + (b or 0.0))
            f, b = time_stage(form, x, device=device)
            fwd.append(f)
            bwd.append(b or 0.0)
        m = dataclasses.replace(m, fwd_times_s=tuple(fwd), bwd_times_s=tuple(bwd))
        out[name] = Form(m, statistics.median(own))
    return out


def show_progress(progress: bool | None) -> bool:
    """Whether to show a progress bar: as asked, else when stderr is a terminal."""
    return sys.stderr.isatty() if progress is None else progress


def _split_modules(model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any],
                   device: torch.device) -> tuple[list[SplitModule] | None, ProfileError | None]:
    """The model's convolutions and linear layers, from one forward of the call a training
    step makes (:func:`chainplan.profiler.parallel.split_modules`), or the error that
    forward raised. The caller raises it only after measuring the stages, so that a
    failing stage is named by the stage's own error first."""
    if not isinstance(model, nn.Sequential):
        with warnings.catch_warnings():  # profile_metadata has warned about this call once
            warnings.simplefilter("ignore")
            args, kwargs = training_call(model, args, kwargs)
    try:
        return split_modules(model, args, kwargs, device), None
    except Exception as err:
        error = ProfileError(f"the model's forward failed while its convolutions and linear "
                             f"layers were recorded: {type(err).__name__}: {err}")
        error.__cause__ = err
        return None, error


def _check_spread_warning(value: float | None) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ProfileError(f"spread_warning must be a number ≥ 0 or None (got {value!r})")
    if not value >= 0:
        raise ProfileError(f"spread_warning must be ≥ 0 (got {value!r})")


def _tensor_inputs(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    """How many of the call's arguments, positional or keyword, are tensors: a model of
    towers joined at the loss takes two at least (``model(input_ids=..., pixel_values=...)``)."""
    return sum(isinstance(v, torch.Tensor) for v in (*args, *kwargs.values()))
