"""The aisrv payload records, generated from protocol/include/aisrv/protocol/records.def by
tools/gen-python-protocol: do not edit. codec.py encodes and decodes them; records.def says what each
kind of field means."""

# name: (open (trailing bytes accepted), ((kind, type, member, a, b, default), ...)) in wire order; default
# None: zero, empty, false or absent.
RECORDS = {
    "Spec": (False, (("ZERO", "u32", "spec0", 0, 0, None), ("ZERO", "u32", "spec1", 0, 0, None), ("FIELD", "u32", "input_length", 0, 0, None), ("FIELD", "u32", "output_length", 0, 0, None), ("FIELD", "u32", "timings_length", 0, 0, None),)),
    "VersionInfo": (True, (("FIELD", "u16", "major", 0, 0, None), ("FIELD", "u16", "minor", 0, 0, None), ("FIELD", "u16", "min_major", 0, 0, None), ("ZERO", "u16", "reserved", 0, 0, None), ("FIELD", "u32", "capabilities", 0, 0, None), ("FIELD", "u32", "max_payload", 0, 0, None), ("FIELD", "u32", "engines", 0, 0, None), ("FIELD", "str8", "server_version", 0, 0, None),)),
    "TensorInfo": (False, (("FIELD", "str8", "name", 0, 0, None), ("FIELD", "DType", "dtype", 0, 0, "unknown"), ("COUNT", "u8", "shape", 8, 4, None), ("FIELD", "u32", "bytes", 0, 0, None), ("LIST", "i32", "shape", 0, 0, None), ("FIELD", "i32", "quant_axis", 0, 0, -1), ("COUNT", "u32", "scale", 4294967295, 8, None), ("ZIP", "f32", "scale", "i32", "zero_point", None),)),
    "ModelTensors": (False, (("FIELD", "str8", "format", 0, 0, None), ("FIELD", "u32", "model_bytes", 0, 0, None), ("FIELD", "u32", "arena_bytes", 0, 0, None), ("COUNT", "u8", "inputs", 16, 15, None), ("COUNT", "u8", "outputs", 16, 15, None), ("LIST", "TensorInfo", "inputs", 0, 0, None), ("LIST", "TensorInfo", "outputs", 0, 0, None),)),
    "EngineInfo": (False, (("FIELD", "str8", "kind", 0, 0, None), ("FIELD", "str8", "options", 0, 0, None), ("FIELD", "boolean", "model_loaded", 0, 0, None), ("FIELD", "str8", "model_format", 0, 0, None), ("FIELD", "u32", "model_bytes", 0, 0, None), ("FIELD", "str8", "model_source", 0, 0, None), ("FIELD", "u64", "inferences", 0, 0, None), ("FIELD", "str8", "chained_to", 0, 0, None),)),
    "LayerTime": (False, (("FIELD", "str8", "name", 0, 0, None), ("FIELD", "str8", "op", 0, 0, None), ("FIELD", "u64", "ns", 0, 0, None),)),
    "TimingRecord": (False, (("FIELD", "u64", "queue_ns", 0, 0, None), ("FIELD", "u64", "compute_ns", 0, 0, None), ("FIELD", "u64", "total_ns", 0, 0, None), ("COUNT", "u32", "layers", 4294967295, 10, None), ("LIST", "LayerTime", "layers", 0, 0, None),)),
    "Timings": (False, (("SEQ", "u32", "ns", 0, 0, None),)),
    "InferTensor": (False, (("INDEX", "u32", "index", 16, 0, None), ("BLOB", "u32", "bytes", 0, 0, None),)),
    "InferRequest": (False, (("COUNT", "u32", "inputs", 16, 8, None), ("LIST", "InferTensor", "inputs", 0, 0, None), ("BLOBS", "InferTensor", "inputs", 0, 0, None),)),
    "InferAnswer": (False, (("COUNT", "u32", "outputs", 16, 4, None), ("LIST", "blob", "outputs", 0, 0, None), ("BLOBS", "blob", "outputs", 0, 0, None),)),
    "SessionInfo": (True, (("FIELD", "u64", "id", 0, 0, None), ("FIELD", "str8", "transport", 0, 0, None), ("FIELD", "str8", "peer", 0, 0, None), ("ENUM", "Role", "role", 1, 0, "user"), ("FIELD", "boolean", "authenticated", 0, 0, None), ("FIELD", "u64", "memory_used", 0, 0, None), ("FIELD", "u64", "memory_cap", 0, 0, None), ("FIELD", "u32", "max_queued", 0, 0, None), ("FIELD", "u32", "sessions", 0, 0, None),)),
    "EngineStats": (False, (("FIELD", "u32", "engine", 0, 0, None), ("FIELD", "str8", "kind", 0, 0, None), ("FIELD", "u32", "state", 0, 0, None), ("FIELD", "boolean", "model_loaded", 0, 0, None), ("FIELD", "str8", "model_format", 0, 0, None), ("FIELD", "str8", "model_source", 0, 0, None), ("FIELD", "u32", "model_bytes", 0, 0, None), ("FIELD", "u64", "inferences", 0, 0, None), ("FIELD", "u64", "failed", 0, 0, None), ("FIELD", "u64", "cancelled", 0, 0, None), ("FIELD", "u64", "compute_ns", 0, 0, None), ("FIELD", "u64", "queue_ns", 0, 0, None), ("FIELD", "u64", "total_ns", 0, 0, None), ("FIELD", "u64", "last_compute_ns", 0, 0, None), ("FIELD", "u64", "last_queue_ns", 0, 0, None), ("FIELD", "u64", "last_total_ns", 0, 0, None), ("FIELD", "u64", "last_end_ns", 0, 0, None), ("FIELD", "u32", "queued", 0, 0, None), ("FIELD", "u64", "running_session", 0, 0, None),)),
    "ServerStats": (True, (("FIELD", "u64", "uptime_ns", 0, 0, None), ("FIELD", "u32", "sessions", 0, 0, None), ("FIELD", "u64", "sessions_total", 0, 0, None), ("COUNT", "u32", "engines", 16, 0, None), ("LIST", "EngineStats", "engines", 0, 0, None),)),
    "MetadataEntry": (False, (("FIELD", "str8", "first", 0, 0, None), ("FIELD", "str32", "second", 67108864, 0, None),)),
    "ModelMetadata": (False, (("COUNT", "u32", "entries", 256, 5, None), ("LIST", "MetadataEntry", "entries", 0, 0, None),)),
    "FlashBegin": (False, (("FIELD", "u64", "size", 0, 0, None), ("OPT0", "u64", "xxh64", 1, 0, None), ("FIELD", "u32", "format", 0, 0, None), ("FLAGS", "u32", "flags", 1, 0, None), ("FIELD", "str8", "name", 0, 0, None),)),
    "FlashChunk": (False, (("FIELD", "u64", "offset", 0, 0, None), ("REST", "bytes", "bytes", 0, 0, None),)),
    "FlashSlotInfo": (False, (("FIELD", "u8", "slot", 0, 0, None), ("FIELD", "str8", "name", 0, 0, None), ("FIELD", "u32", "format", 0, 0, None), ("FIELD", "u64", "size", 0, 0, None), ("FIELD", "u64", "xxh64", 0, 0, None), ("FIELD", "u64", "seq", 0, 0, None), ("FIELD", "u64", "parameters", 0, 0, None),)),
    "FlashEntry": (False, (("FIELD", "u32", "client", 0, 0, None), ("FIELD", "u64", "seq", 0, 0, None), ("FLAGS", "u8", "flags", 7, 0, None), ("OPT", "FlashSlotInfo", "active", 1, 0, None), ("OPT", "FlashSlotInfo", "previous", 2, 0, None), ("FLAG", "boolean", "writing", 4, 0, None), ("WHEN", "u64", "received", 4, 0, None), ("WHEN", "u64", "expected", 4, 0, None),)),
    "FlashCatalogue": (False, (("FIELD", "u64", "store_size", 0, 0, None), ("FIELD", "u32", "erase_block", 0, 0, None), ("FIELD", "u32", "write_size", 0, 0, None), ("FIELD", "u64", "data_bytes", 0, 0, None), ("FIELD", "u64", "free_bytes", 0, 0, None), ("FIELD", "u32", "read_chunk", 0, 0, None), ("FIELD", "str8", "device", 0, 0, None), ("COUNT", "u32", "entries", 4096, 13, None), ("LIST", "FlashEntry", "entries", 0, 0, None),)),
    "FlashWriteState": (False, (("FIELD", "boolean", "in_progress", 0, 0, None), ("FIELD", "u8", "slot", 0, 0, None), ("FIELD", "u64", "next_offset", 0, 0, None), ("FIELD", "u64", "received", 0, 0, None), ("FIELD", "u64", "expected", 0, 0, None),)),
}

# Enums the records carry as u8: name -> {enumerator: code} (payloads.hpp).
ENUMS = {
    "DType": {"float32": 0, "int8": 1, "uint8": 2, "int16": 3, "uint16": 4, "int32": 5, "int64": 6, "boolean": 7, "float16": 8, "unknown": 255},
    "Role": {"user": 0, "admin": 1},
}
