// Package profilearrow is the Arrow codec of chainplan profiles: it reads, validates and
// writes profile files holding the profile model of package profile.
//
// A profile file (format chainplan.profile/v1, docs/formats.md) is an Arrow IPC file or
// stream, as pyarrow's feather.write_feather, pa.ipc.new_file and pa.ipc.new_stream write
// it, uncompressed or with LZ4-frame or ZSTD compressed buffers. It holds one row per stage
// and per measurement repetition (the "long" layout, one profile.Row each), with the unit
// in every column name:
//
//	stage_index stage_name stage_kind rep fwd_time_s bwd_time_s in_bytes out_bytes
//	saved_bytes fwd_tmp_bytes bwd_tmp_bytes param_bytes
//
// and its provenance (a profile.Metadata: model, torch version, device, dtype, batch size,
// timing method, ...) in the schema metadata. Times are float64 seconds and sizes int64
// bytes, as in chain files, so aggregation never converts a unit. The loss is a row of
// stage_kind "loss" with stage_index L+1.
//
// Read and ReadFile return a *Profile or an error that names the column and row of the
// first problem (*Error, errors.Is ErrInvalidProfile), or wraps chainplan.ErrSchemaVersion
// for a file of another format version. (*Profile).Stages takes the median of every
// stage's repetitions and (*Profile).Chain turns those medians into a chain (the model's
// profile.Summarize and profile.ChainOf). Write writes a profile with Go.
//
// Arrow stays behind this package and internal/arrowtable (query results as Arrow): the
// profile model, the store and the planners do not import it.
package profilearrow
