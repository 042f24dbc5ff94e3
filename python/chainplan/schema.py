"""The Arrow profile format, version 1 (``chainplan.profile/v1``; docs/formats.md).

One row per stage and per repetition (or training step), the loss as the last stage with
``stage_kind = "loss"``, the unit in every column name, and the provenance in the schema
metadata. This module is the Arrow codec (it mirrors Go's profilearrow and never imports
torch); the rows and the provenance it reads and writes are :mod:`chainplan.profilerow`'s,
re-exported here, which import without pyarrow.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc

from chainplan.errors import SchemaError
from chainplan.profilerow import (
    FORMAT,
    PARALLEL_REVISION,
    ProfileMetadata,
    ProfileRow,
    cpu_name,
    signature,
)

__all__ = ["FORMAT", "SCHEMA", "PARALLEL_COLUMNS", "PARALLEL_REVISION", "ProfileRow",
           "ProfileMetadata", "read_metadata", "read_rows", "write_profile", "signature",
           "cpu_name"]

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
    # The stage's random-number state, which a plan recomputing it keeps (null: none).
    pa.field("replay_bytes", pa.int64()),
])

# The parallel fields (docs/formats.md, "Parallel fields"): optional columns a reader that
# does not know them ignores; written only when a row has one (profiler/parallel.go).
PARALLEL_COLUMNS = [
    pa.field("in_shape", pa.string()),          # JSON array, batch first
    pa.field("out_shape", pa.string()),
    pa.field("weight_count", pa.int64()),       # parameter elements that are not biases
    pa.field("bias_count", pa.int64()),
    pa.field("modules_json", pa.string()),      # the stage's convolutions and linear layers
    pa.field("batch_times_json", pa.string()),  # this row's times at other batch sizes
]


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


def read_metadata(path: str | os.PathLike[str]) -> dict[str, str]:
    """The schema metadata (the provenance) of a profile file, without reading its rows.

    Raises:
        SchemaError: the file is not a readable chainplan profile.
    """
    try:
        with pa.memory_map(str(path)) as source:
            schema = ipc.open_file(source).schema
    except (OSError, pa.ArrowInvalid) as err:
        raise SchemaError(f"cannot read the profile {str(path)!r}: {err}") from err
    meta = {k.decode(): v.decode() for k, v in (schema.metadata or {}).items()}
    if meta.get("format") != FORMAT:
        raise SchemaError(f"{str(path)!r} is not a {FORMAT} profile")
    return meta


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
