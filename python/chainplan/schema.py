"""The Arrow profile format, version 1 (``chainplan.profile/v1``; docs/formats.md).

One row per stage and per repetition (or training step), the loss as the last stage with
``stage_kind = "loss"``, the unit in every column name, and the provenance in the schema
metadata. This module mirrors profiler/schema.go and never imports torch.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import json
import os
import platform
import re
import socket
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc

from chainplan.errors import SchemaError

__all__ = ["FORMAT", "SCHEMA", "PARALLEL_COLUMNS", "PARALLEL_REVISION", "ProfileRow",
           "ProfileMetadata", "read_rows", "write_profile", "signature", "file_stem"]

FORMAT = "chainplan.profile/v1"

SCHEMA = pa.schema([
    pa.field("stage_index", pa.int64(), nullable=False),
    pa.field("stage_name", pa.string(), nullable=False),
    pa.field("stage_kind", pa.string(), nullable=False),
    pa.field("rep", pa.int64(), nullable=False),
    pa.field("fwd_time_s", pa.float64(), nullable=False),
    pa.field("bwd_time_s", pa.float64(), nullable=False),
    pa.field("in_bytes", pa.int64(), nullable=False),
    pa.field("out_bytes", pa.int64(), nullable=False),
    pa.field("saved_bytes", pa.int64()),
    pa.field("fwd_tmp_bytes", pa.int64()),
    pa.field("bwd_tmp_bytes", pa.int64()),
    pa.field("param_bytes", pa.int64(), nullable=False),
    # The exact memory model (chainplan.chain/v2; optional columns, null when not measured).
    pa.field("saves_input", pa.bool_()),
    pa.field("saves_output", pa.bool_()),
    pa.field("recompute_time_s", pa.float64()),
    pa.field("recompute_tmp_bytes", pa.int64()),
    pa.field("options_json", pa.string()),
])

# The parallel fields (docs/formats.md, "Parallel fields"): optional columns a reader that
# does not know them ignores; written only when a row has one (profiler/parallel.go).
PARALLEL_REVISION = "1"
PARALLEL_COLUMNS = [
    pa.field("in_shape", pa.string()),          # JSON array, batch first
    pa.field("out_shape", pa.string()),
    pa.field("weight_count", pa.int64()),       # parameter elements that are not biases
    pa.field("bias_count", pa.int64()),
    pa.field("modules_json", pa.string()),      # the stage's convolutions and linear layers
    pa.field("batch_times_json", pa.string()),  # this row's times at other batch sizes
]


@dataclasses.dataclass(frozen=True)
class ProfileRow:
    """One measurement of one stage (1..L) or of the loss (L+1, ``kind="loss"``).

    ``saved_bytes`` and the temporaries are None when not measured (a profile recorded
    during training with ``chainplan.record``). The last five fields are the exact memory
    model (docs/formats.md): whether the stage's backward needs its input and its output,
    the recomputation that runs right before it (time, temporary peak) and the stage's
    operation-level options as JSON; None when not measured.
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


def file_stem(name: str) -> str:
    """A file name made from a model's name, safe in any folder: letters, digits, ``.``,
    ``_`` and ``-`` kept, every other character (``/``, ``<``, a space) replaced by ``_``,
    no leading dot, at most 64 characters; a name that had to change gets a digest of
    itself appended, so that two names never share a stem (``../../x`` →
    ``x-1a2b3c4d``). Names are data from any host: nothing in them may choose the folder.
    """
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name).lstrip("._-")[:64] or "model"
    if safe != name:
        safe += "-" + hashlib.sha256(name.encode()).hexdigest()[:8]
    return safe


def read_rows(path: str | os.PathLike[str]) -> tuple[list[ProfileRow], dict[str, str]]:
    """Read the rows and the schema metadata of a version-1 profile file.

    Raises:
        SchemaError: the file is not a readable chainplan profile.
    """
    try:
        with pa.memory_map(str(path)) as source:
            table = ipc.open_file(source).read_all()
    except (OSError, pa.ArrowInvalid) as err:
        raise SchemaError(f"cannot read the profile {str(path)!r}: {err}") from err
    meta = {k.decode(): v.decode() for k, v in (table.schema.metadata or {}).items()}
    if meta.get("format") != FORMAT:
        raise SchemaError(f"{str(path)!r} is not a {FORMAT} profile")
    cols = table.to_pydict()
    names = [f.name for f in dataclasses.fields(ProfileRow) if f.name in cols]
    # The parallel columns are optional: a file without them reads with their defaults.
    rows = [ProfileRow(**{n: cols[n][i] for n in names}) for i in range(table.num_rows)]
    return rows, meta


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


def write_profile(path: str | os.PathLike[str], rows: Iterable[ProfileRow],
                  metadata: ProfileMetadata | Mapping[str, str], *,
                  compression: str | None = "zstd") -> Path:
    """Write a version-1 profile as an Arrow IPC file and return its path.

    The file is written to a temporary name and renamed, so a reader never sees half of it.

    Args:
        path: destination (conventionally ``*.arrow``).
        rows: the measurements, stages first and the loss last.
        metadata: the provenance.
        compression: ``"zstd"`` (default), ``"lz4"`` or None.

    Raises:
        SchemaError: no rows, or a row with a negative or non-finite value.
    """
    rows = list(rows)
    if not rows:
        raise SchemaError("a profile needs at least one row")
    schema = SCHEMA
    if any(getattr(r, f.name) is not None for r in rows for f in PARALLEL_COLUMNS):
        schema = pa.schema([*SCHEMA, *PARALLEL_COLUMNS])
    cols: dict[str, list[object]] = {f.name: [] for f in schema}
    for i, row in enumerate(rows):
        for f in schema:
            v = getattr(row, f.name)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and (v < 0 or v != v):
                raise SchemaError(f"row {i} ({row.stage_name}): {f.name} is {v!r}")
            cols[f.name].append(v)
    meta = metadata.as_dict() if isinstance(metadata, ProfileMetadata) else dict(metadata)
    table = pa.table(cols, schema=schema.with_metadata(meta))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    options = ipc.IpcWriteOptions(compression=compression)
    with pa.OSFile(str(tmp), "wb") as sink, ipc.new_file(sink, table.schema, options=options) as w:
        w.write_table(table)
    os.replace(tmp, path)
    return path
