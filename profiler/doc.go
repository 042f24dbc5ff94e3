// Package profiler reads, validates and writes chainplan profile files, and aggregates
// their measurements into a chainplan.chain/v1 chain.
//
// A profile file (format chainplan.profile/v1, docs/formats.md) is an Arrow IPC file or
// stream, as pyarrow's feather.write_feather, pa.ipc.new_file and pa.ipc.new_stream write
// it, uncompressed or with LZ4-frame or ZSTD compressed buffers. It holds one row per stage
// and per measurement repetition (the "long" layout), with the unit in every column name:
//
//	stage_index stage_name stage_kind rep fwd_time_s bwd_time_s in_bytes out_bytes
//	saved_bytes fwd_tmp_bytes bwd_tmp_bytes param_bytes
//
// and its provenance (model, torch version, device, dtype, batch size, timing method, ...)
// in the schema metadata. Times are float64 seconds and sizes int64 bytes, as in chain
// files, so aggregation never converts a unit. The loss is a row of stage_kind "loss" with
// stage_index L+1.
//
// Read and ReadFile return a *Profile or an error that names the column and row of the
// first problem (*Error, errors.Is ErrInvalidProfile), or wraps chainplan.ErrSchemaVersion
// for a file of another format version. (*Profile).Stages takes the median of every
// stage's repetitions and (*Profile).Chain turns those medians into a chain. Write writes
// a profile with Go; WriteTable writes any table of values (query results) as an Arrow IPC
// file.
//
// This package is the only importer of github.com/apache/arrow-go in chainplan.
package profiler
