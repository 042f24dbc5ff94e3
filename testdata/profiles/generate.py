"""Generate the chainplan.profile/v1 test files of testdata/profiles with pyarrow.

Run from the repository root, in the project's virtual environment:

    .venv/bin/python testdata/profiles/generate.py

The output is deterministic (fixed seed, fixed creation time), so a rerun with the same
pyarrow version rewrites identical files and `git diff` shows any drift. The Go tests in
profiler/ read every file listed in README.md; see there for what each one checks.
"""

from __future__ import annotations

import hashlib
import json
import math
import pathlib
import sys

import numpy as np
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.ipc as ipc

__all__: list[str] = []

HERE = pathlib.Path(__file__).resolve().parent
# The writer's own schema: the files here have exactly the columns and types that
# chainplan.profile() writes, so the Go reader is tested against the real thing.
sys.path.insert(0, str(HERE.parents[1] / "python"))
from chainplan.schema import FORMAT, PARALLEL_COLUMNS, PARALLEL_REVISION, SCHEMA  # noqa: E402


def metadata(
    model_name: str, structure: str, *, reps: int, batch: int, shape: list[int]
) -> dict[str, str]:
    """Return the schema metadata of a profile, every version-1 key present."""
    return {
        "format": FORMAT,
        "model_name": model_name,
        "model_signature": "sha256:" + hashlib.sha256(structure.encode()).hexdigest(),
        "torch_version": "2.15.0+cpu",
        "device": "cpu",
        "device_name": "Synthetic CPU",
        "dtype": "float32",
        "batch_size": str(batch),
        "input_shape": json.dumps(shape),
        "threads": "2",
        "timing_method": "perf_counter",
        "warmup_reps": "2",
        "reps": str(reps),
        "created_at": "2025-06-01T12:00:00Z",
        "host": "testhost",
    }


def resnet_columns() -> tuple[dict[str, list], dict]:
    """Return the columns of a 6-stage conv net plus loss, 5 repetitions, and its chain.

    The chain is computed here independently of the Go code: times are medians (5 values,
    so the middle one exactly) and sizes upper medians.
    """
    rng = np.random.default_rng(0)
    shape = [8, 3, 64, 64]
    a0 = math.prod(shape) * 4
    # name, fwd s, bwd s, out bytes, extra saved bytes, fwd tmp, bwd tmp, param bytes
    stages = [
        ("conv1", 1.2e-3, 2.5e-3, 8 * 64 * 32 * 32 * 4, 8 * 64 * 32 * 32 * 4, 0, 262144, 37632),
        ("layer1", 2.1e-3, 4.4e-3, 8 * 64 * 32 * 32 * 4, 3 * 2097152, 1048576, 2097152, 295424),
        ("layer2", 1.7e-3, 3.6e-3, 8 * 128 * 16 * 16 * 4, 2 * 1048576, 524288, 1048576, 1180672),
        ("layer3", 1.6e-3, 3.3e-3, 8 * 256 * 8 * 8 * 4, 2 * 524288, 262144, 524288, 4720640),
        ("layer4", 1.5e-3, 3.1e-3, 8 * 512 * 4 * 4 * 4, 2 * 262144, 131072, 262144, 18878464),
        ("fc", 0.1e-3, 0.2e-3, 8 * 1000 * 4, 8 * 512 * 4, 0, 0, 2052000),
    ]
    reps = 5
    cols: dict[str, list] = {f.name: [] for f in SCHEMA}
    chain_stages = []
    in_bytes = a0
    for k, (name, fwd, bwd, out, extra, ftmp, btmp, params) in enumerate(stages, start=1):
        fwds = fwd * rng.lognormal(0.0, 0.05, reps)
        bwds = bwd * rng.lognormal(0.0, 0.05, reps)
        # layer2's backward workspace varies between repetitions (allocator rounding).
        btmps = [btmp + (4096 * r if name == "layer2" else 0) for r in range(reps)]
        for r in range(reps):
            cols["stage_index"].append(k)
            cols["stage_name"].append(name)
            cols["stage_kind"].append("stage")
            cols["rep"].append(r)
            cols["fwd_time_s"].append(float(fwds[r]))
            cols["bwd_time_s"].append(float(bwds[r]))
            cols["in_bytes"].append(in_bytes)
            cols["out_bytes"].append(out)
            cols["saved_bytes"].append(out + extra)
            cols["fwd_tmp_bytes"].append(ftmp)
            cols["bwd_tmp_bytes"].append(btmps[r])
            cols["param_bytes"].append(params)
        chain_stages.append(
            {
                "name": name,
                "fwd_time": float(np.median(fwds)),
                "bwd_time": float(np.median(bwds)),
                "out_bytes": out,
                "saved_bytes": out + extra,
                "fwd_tmp_bytes": ftmp,
                "bwd_tmp_bytes": sorted(btmps)[reps // 2],
                "param_bytes": params,
            }
        )
        in_bytes = out
    lf = 0.05e-3 * rng.lognormal(0.0, 0.05, reps)
    lb = 0.04e-3 * rng.lognormal(0.0, 0.05, reps)
    for r in range(reps):
        cols["stage_index"].append(len(stages) + 1)
        cols["stage_name"].append("cross_entropy")
        cols["stage_kind"].append("loss")
        cols["rep"].append(r)
        cols["fwd_time_s"].append(float(lf[r]))
        cols["bwd_time_s"].append(float(lb[r]))
        cols["in_bytes"].append(in_bytes)
        cols["out_bytes"].append(0)
        cols["saved_bytes"].append(0)
        cols["fwd_tmp_bytes"].append(0)
        cols["bwd_tmp_bytes"].append(32000)
        cols["param_bytes"].append(0)
    chain = {
        "format": "chainplan.chain/v1",
        "input_bytes": a0,
        "stages": chain_stages,
        "loss": {
            "fwd_time": float(np.median(lf)),
            "bwd_time": float(np.median(lb)),
            "fwd_tmp_bytes": 0,
            "bwd_tmp_bytes": 32000,
        },
    }
    return cols, chain


def conv(name: str, c: int, f: int, k: int, s: int, p: int, i: list[int], o: list[int],
         bias: bool = False) -> dict:
    """One module of modules_json: a Conv2d as chainplan.profile() records it."""
    return {"name": name, "type": "Conv2d", "in_shape": i, "out_shape": o, "in_channels": c,
            "out_channels": f, "kernel": [k, k], "stride": [s, s], "padding": [p, p],
            "weight_count": c * f * k * k, "bias_count": f if bias else 0, "groups": 1}


def parallel_columns(cols: dict[str, list]) -> dict[str, list]:
    """The parallel fields (docs/formats.md) of resnet_columns' rows: shapes, counts, the
    convolutions and the linear layer, and per row the times at batch 2 and 16 (the batch-8
    time scaled by (b/8)^0.8: smaller batches run less efficiently per sample)."""
    b = 8
    shapes = [[b, 3, 64, 64], [b, 64, 32, 32], [b, 64, 32, 32], [b, 128, 16, 16],
              [b, 256, 8, 8], [b, 512, 4, 4], [b, 1000]]
    mods = [
        [conv("conv1", 3, 64, 7, 2, 3, shapes[0], shapes[1])],
        [conv("layer1.0.conv1", 64, 64, 3, 1, 1, shapes[1], shapes[2]),
         conv("layer1.0.conv2", 64, 64, 3, 1, 1, shapes[2], shapes[2])],
        [conv("layer2.0.conv1", 64, 128, 3, 2, 1, shapes[2], shapes[3]),
         conv("layer2.0.conv2", 128, 128, 3, 1, 1, shapes[3], shapes[3]),
         conv("layer2.0.downsample", 64, 128, 1, 2, 0, shapes[2], shapes[3])],
        [conv("layer3.0.conv1", 128, 256, 3, 2, 1, shapes[3], shapes[4]),
         conv("layer3.0.conv2", 256, 256, 3, 1, 1, shapes[4], shapes[4])],
        [conv("layer4.0.conv1", 256, 512, 3, 2, 1, shapes[4], shapes[5]),
         conv("layer4.0.conv2", 512, 512, 3, 1, 1, shapes[5], shapes[5])],
        [{"name": "fc", "type": "Linear", "in_shape": [b, 512], "out_shape": [b, 1000],
          "in_channels": 512, "out_channels": 1000, "weight_count": 512000, "bias_count": 1000}],
    ]
    out: dict[str, list] = {f.name: [] for f in PARALLEL_COLUMNS}
    for i, k in enumerate(cols["stage_index"]):
        if cols["stage_kind"][i] != "stage":
            for f in PARALLEL_COLUMNS:
                out[f.name].append(None)
            continue
        m = mods[k - 1]
        params = cols["param_bytes"][i] // 4
        biases = 2 * shapes[k][1] if k < 6 else 1000  # batch-norm shifts; fc's bias
        out["in_shape"].append(json.dumps(shapes[k - 1]))
        out["out_shape"].append(json.dumps(shapes[k]))
        out["weight_count"].append(params - biases)
        out["bias_count"].append(biases)
        out["modules_json"].append(json.dumps(m))
        f, w = cols["fwd_time_s"][i], cols["bwd_time_s"][i]
        out["batch_times_json"].append(json.dumps({
            "batch_sizes": [2, 16], "fwd_time_s": [f * (2 / 8) ** 0.8, f * (16 / 8) ** 0.8],
            "bwd_time_s": [w * (2 / 8) ** 0.8, w * (16 / 8) ** 0.8]}))
    return out


def table(cols: dict[str, list], md: dict[str, str], schema: pa.Schema = SCHEMA) -> pa.Table:
    """Build a table from columns with the given metadata."""
    return pa.Table.from_pydict(cols, schema=schema).replace_schema_metadata(md)


def write_file(path: pathlib.Path, t: pa.Table, compression: str | None = None) -> None:
    """Write t as an Arrow IPC file with pa.ipc.new_file."""
    opts = ipc.IpcWriteOptions(compression=compression)
    with pa.OSFile(str(path), "wb") as sink, ipc.new_file(sink, t.schema, options=opts) as w:
        w.write_table(t)


def main() -> None:
    cols, chain = resnet_columns()
    md = metadata(
        "resnet-mini",
        "conv1,layer1,layer2,layer3,layer4,fc",
        reps=5,
        batch=8,
        shape=[8, 3, 64, 64],
    )
    t = table(cols, md)

    # Good files: one table, every encoding a Python writer may produce.
    write_file(HERE / "resnet_file.arrow", t)
    feather.write_feather(t, str(HERE / "resnet_lz4.feather"))  # Feather v2: IPC file, LZ4 frame
    write_file(HERE / "resnet_zstd.arrow", t, compression="zstd")
    with (
        pa.OSFile(str(HERE / "resnet_stream.arrows"), "wb") as sink,
        ipc.new_stream(sink, t.schema) as w,
    ):
        for batch in t.to_batches(max_chunksize=13):  # several record batches
            w.write_batch(batch)
    # Narrow integers, dictionary strings and an extra column: all accepted.
    narrow = pa.table(
        {
            "stage_index": pa.array(cols["stage_index"], pa.int32()),
            "stage_name": pa.array(cols["stage_name"]).dictionary_encode(),
            "stage_kind": pa.array(cols["stage_kind"]).dictionary_encode(),
            "rep": pa.array(cols["rep"], pa.uint16()),
            "fwd_time_s": pa.array(cols["fwd_time_s"], pa.float64()),
            "bwd_time_s": pa.array(cols["bwd_time_s"], pa.float64()),
            "in_bytes": pa.array(cols["in_bytes"], pa.uint32()),
            "out_bytes": pa.array(cols["out_bytes"], pa.int64()),
            "saved_bytes": pa.array(cols["saved_bytes"], pa.int64()),
            "fwd_tmp_bytes": pa.array(cols["fwd_tmp_bytes"], pa.int64()),
            "bwd_tmp_bytes": pa.array(cols["bwd_tmp_bytes"], pa.int64()),
            "param_bytes": pa.array(cols["param_bytes"], pa.int64()),
            "note": pa.array(["extra columns are ignored"] * len(cols["rep"])),
        }
    ).replace_schema_metadata({**md, "writer": "generate.py"})
    write_file(HERE / "resnet_narrow.arrow", narrow)
    # The parallel fields: the same rows with the optional columns and keys (an optimizer).
    par = {**cols, **parallel_columns(cols)}
    pmd = {**md, "parallel_fields": PARALLEL_REVISION, "optimizer": "Adam",
           "optimizer_step_time_s": "0.004", "optimizer_state_bytes": str(2 * 27_164_832)}
    write_file(HERE / "resnet_parallel.arrow",
               table(par, pmd, pa.schema([*SCHEMA, *PARALLEL_COLUMNS])), compression="zstd")
    (HERE / "resnet.chain.json").write_text(json.dumps(chain, indent=2) + "\n")

    # What chainplan.record(model) writes: per-step times and output sizes, no saved or
    # temporary sizes (nulls), no loss row, rows in step order.
    rng = np.random.default_rng(1)
    rec: dict[str, list] = {f.name: [] for f in SCHEMA}
    steps, names = 7, ["embed", "block0", "head"]
    for step in range(steps):
        for k, name in enumerate(names, start=1):
            rec["stage_index"].append(k)
            rec["stage_name"].append(name)
            rec["stage_kind"].append("stage")
            rec["rep"].append(step)
            rec["fwd_time_s"].append(float(k * 1e-4 * rng.lognormal(0.0, 0.1)))
            rec["bwd_time_s"].append(float(2 * k * 1e-4 * rng.lognormal(0.0, 0.1)))
            rec["in_bytes"].append(16 * 128 * 4)
            rec["out_bytes"].append(16 * 128 * 4)
            rec["saved_bytes"].append(None)
            rec["fwd_tmp_bytes"].append(None)
            rec["bwd_tmp_bytes"].append(None)
            rec["param_bytes"].append(128 * 128 * 4)
    rmd = metadata("mlp-record", "embed,block0,head", reps=steps, batch=16, shape=[16, 128])
    rmd["timing_method"] = "record_hooks"
    rmd["warmup_reps"] = "0"
    write_file(HERE / "record_mlp.arrow", table(rec, rmd))

    # Bad files: each one problem, each rejected with a message naming it.
    write_file(HERE / "bad_version.arrow", table(cols, {**md, "format": "chainplan.profile/v2"}))
    write_file(HERE / "bad_no_metadata.arrow", pa.Table.from_pydict(cols, schema=SCHEMA))
    wrong = dict(cols)
    wrong["fwd_time_s"] = [f"{v:.6f}" for v in cols["fwd_time_s"]]
    write_file(
        HERE / "bad_type.arrow",
        table(
            wrong,
            md,
            SCHEMA.set(SCHEMA.get_field_index("fwd_time_s"), pa.field("fwd_time_s", pa.string())),
        ),
    )
    missing = {k: v for k, v in cols.items() if k != "bwd_time_s"}
    write_file(
        HERE / "bad_missing_column.arrow",
        table(missing, md, SCHEMA.remove(SCHEMA.get_field_index("bwd_time_s"))),
    )
    neg = {k: list(v) for k, v in cols.items()}
    neg["out_bytes"][12] = -4096  # stage 3 ("layer2"), rep 2
    write_file(HERE / "bad_negative.arrow", table(neg, md))
    nan = {k: list(v) for k, v in cols.items()}
    nan["bwd_time_s"][9] = float("nan")  # stage 2 ("layer1"), rep 4
    write_file(HERE / "bad_nan.arrow", table(nan, md))
    good = (HERE / "resnet_file.arrow").read_bytes()
    (HERE / "bad_truncated.arrow").write_bytes(good[: len(good) * 2 // 3])
    # Arrow has no checksums: flipped value bytes are caught only when they make a value
    # invalid (here a time turns negative); flipped structure bytes always are.
    corrupt = bytearray(good)
    for i in range(len(corrupt) // 2, len(corrupt) // 2 + 64):
        corrupt[i] ^= 0xA5
    (HERE / "bad_corrupt_values.arrow").write_bytes(bytes(corrupt))
    footer_len = int.from_bytes(good[-10:-6], "little")
    corrupt = bytearray(good)
    start = len(good) - 10 - footer_len // 2
    for i in range(start, start + 16):
        corrupt[i] ^= 0xA5
    (HERE / "bad_corrupt_footer.arrow").write_bytes(bytes(corrupt))


if __name__ == "__main__":
    main()
