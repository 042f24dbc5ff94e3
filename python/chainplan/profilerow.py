"""The rows and provenance of a profile (``chainplan.profile/v1``; docs/formats.md), without
the Arrow codec: what summaries, spreads and stored-run readers handle, importable without
pyarrow or torch. :mod:`chainplan.schema` reads and writes these as Arrow IPC files (and
re-exports them under their old names).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import json
import platform
import socket
from collections.abc import Mapping, Sequence

__all__ = ["FORMAT", "MEASUREMENT_REVISION", "PARALLEL_REVISION", "measured_now", "ProfileRow",
           "ProfileMetadata", "signature", "cpu_name"]

FORMAT = "chainplan.profile/v1"

# The revision of the parallel fields (docs/formats.md, "Parallel fields"), written in the
# metadata of a profile that has them.
PARALLEL_REVISION = "1"
# What a profile's rows measure changes with chainplan, not only with the model: a stored
# profile is reused (chainplan.profile, Checkpointed, find_profile) only when it was taken
# at this revision (metadata "measurement_revision"; "1" when absent). 2: a linear head and
# its cross-entropy run fused (chainplan.graph.fuseloss), and a model's output holding a_L
# through the loss backward is counted (issue 19). 3: a stage's output counted by its
# storage (a view holds its base) and the next stage measured on the layout it runs on
# (chainplan.profiler.sizes); the output of towers returning their own loss held to the
# step's end (chainplan.towers.measure); transformers' GQA captured on its eager kernel
# (chainplan.graph.eager) (issue 35). 4: a fused head's stage measured in its unfused form
# too, an option the planner picks per budget (chainplan.graph.headform, issue 36). 5: a
# random stage's generator state given as its replay_bytes, which the planners count once
# per plan, and no longer in its recomputation and option overheads (issue 36, "RNG
# states" in docs/executors.md): a profile of revision 4 counts them only there.
MEASUREMENT_REVISION = "5"


def measured_now(meta: Mapping[str, str]) -> bool:
    """Whether a stored profile's metadata says it was measured at this revision."""
    return meta.get("measurement_revision", "1") == MEASUREMENT_REVISION


@dataclasses.dataclass(frozen=True)
class ProfileRow:
    """One measurement of one stage (1..L) or of the loss (L+1, ``kind="loss"``).

    ``saved_bytes`` and the temporaries are None when not measured (a profile recorded
    during training with ``chainplan.record``). The last five fields are the exact memory
    model (docs/formats.md): whether the stage's backward needs its input and its output,
    the recomputation that runs right before it (time, temporary peak) and the stage's
    operation-level options as JSON; None when not measured. ``replay_bytes`` is the size of
    the stage's random-number state, which an executor keeps when a plan recomputes a stage
    that draws random numbers (docs/formats.md); None for a stage that draws none.
    """

    stage_index: int
    stage_name: str
    rep: int
    fwd_time_s: float
    bwd_time_s: float
    in_bytes: int
    out_bytes: int
    saved_bytes: int | None
    fwd_tmp_bytes: int | None
    bwd_tmp_bytes: int | None
    param_bytes: int
    stage_kind: str = "stage"
    saves_input: bool | None = None
    saves_output: bool | None = None
    recompute_time_s: float | None = None
    recompute_tmp_bytes: int | None = None
    options_json: str | None = None
    in_shape: str | None = None
    out_shape: str | None = None
    weight_count: int | None = None
    bias_count: int | None = None
    modules_json: str | None = None
    batch_times_json: str | None = None
    replay_bytes: int | None = None


@dataclasses.dataclass(frozen=True)
class ProfileMetadata:
    """The provenance of a profile, written as the Arrow schema metadata."""

    model_name: str
    model_signature: str
    torch_version: str
    device: str
    device_name: str
    dtype: str
    batch_size: int
    input_shape: Sequence[int]
    threads: int
    timing_method: str
    warmup_reps: int
    reps: int
    created_at: _dt.datetime = dataclasses.field(
        default_factory=lambda: _dt.datetime.now(_dt.timezone.utc))
    host: str = dataclasses.field(default_factory=socket.gethostname)
    #: Optional keys written after the required ones (``call_signature``, the parallel
    #: fields' revision, the optimizer's; docs/formats.md).
    extra: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def as_dict(self) -> dict[str, str]:
        created = self.created_at
        if created.tzinfo is None:
            created = created.replace(tzinfo=_dt.timezone.utc)
        return {
            "format": FORMAT,
            "model_name": self.model_name,
            "model_signature": self.model_signature,
            "torch_version": self.torch_version,
            "device": self.device,
            "device_name": self.device_name,
            "dtype": self.dtype,
            "batch_size": str(self.batch_size),
            "input_shape": json.dumps([int(d) for d in self.input_shape]),
            "threads": str(self.threads),
            "timing_method": self.timing_method,
            "warmup_reps": str(self.warmup_reps),
            "reps": str(self.reps),
            "created_at": created.astimezone(_dt.timezone.utc).isoformat().replace("+00:00", "Z"),
            "host": self.host,
            **{k: str(v) for k, v in self.extra.items() if k != "format"},
        }


def signature(structure: str) -> str:
    """A digest of a model's structure (e.g. ``repr(model)``), as stored in profiles."""
    return "sha256:" + hashlib.sha256(structure.encode()).hexdigest()


def cpu_name() -> str:
    """A readable name of this machine's processor."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
