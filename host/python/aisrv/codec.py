"""Codecs of the aisrv payload records (docs/protocol.md section 3): little-endian, bounds-checked, refusing trailing
bytes where the C++ codecs do (protocol/src/payloads.cpp, flash_payloads.cpp)."""
import struct
from dataclasses import dataclass, field
from typing import List, Optional, Sequence

from . import _protocol as P

try:  # NumPy gives tensor element types as numpy.dtype; the codecs work without it (types then are names)
    import numpy as _np
except ImportError:  # pragma: no cover
    _np = None


class DecodeError(ValueError):
    """A payload that does not decode (truncated, trailing bytes, counts above the limits)."""


class Reader:
    def __init__(self, data: bytes):
        self.data = memoryview(bytes(data))
        self.pos = 0

    def take(self, n: int, field_name: str) -> memoryview:
        if n < 0 or self.pos + n > len(self.data):
            raise DecodeError("field '%s' truncated at byte %d" % (field_name, self.pos))
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def u8(self, f):
        return self.take(1, f)[0]

    def u16(self, f):
        return struct.unpack("<H", self.take(2, f))[0]

    def u32(self, f):
        return struct.unpack("<I", self.take(4, f))[0]

    def i32(self, f):
        return struct.unpack("<i", self.take(4, f))[0]

    def u64(self, f):
        return struct.unpack("<Q", self.take(8, f))[0]

    def f32(self, f):
        return struct.unpack("<f", self.take(4, f))[0]

    def str8(self, f):
        n = self.u8(f)
        return bytes(self.take(n, f)).decode("utf-8", "replace")

    @property
    def remaining(self):
        return len(self.data) - self.pos

    def end(self, exact=True):
        if exact and self.remaining:
            raise DecodeError("%d unexpected trailing byte(s)" % self.remaining)


def str8(s: str) -> bytes:
    b = s.encode("utf-8")[:255]
    return bytes([len(b)]) + b


@dataclass
class Version:
    major: int
    minor: int
    min_major: int
    capabilities: int
    max_payload: int
    engines: int
    server_version: str


def decode_version(data: bytes) -> Version:
    r = Reader(data)
    v = Version(r.u16("major"), r.u16("minor"), r.u16("min_major"), 0, 0, 0, "")
    r.u16("reserved")
    v.capabilities = r.u32("capabilities")
    v.max_payload = r.u32("max_payload")
    v.engines = r.u32("engines")
    v.server_version = r.str8("server_version")
    r.end(exact=False)  # later minors may append fields
    return v


def compatible(v: Version, our_major=P.PROTOCOL_MAJOR, our_min=P.PROTOCOL_MIN_MAJOR) -> Optional[str]:
    """None when a server speaking [v.min_major, v.major] can talk to us, else why not."""
    peer_min = v.min_major or v.major
    if peer_min <= our_major and our_min <= v.major:
        return None
    return ("server speaks protocol %d.%d (majors %d..%d), this client speaks majors %d..%d; upgrade the %s"
            % (v.major, v.minor, peer_min, v.major, our_min, our_major, "client" if v.major > our_major else "server"))


DTYPE_NAMES = {code: name for name, code in P.DTYPES.items()}
NUMPY_DTYPES = {"float32": "<f4", "int8": "i1", "uint8": "u1", "int16": "<i2", "uint16": "<u2", "int32": "<i4",
                "int64": "<i8", "boolean": "?", "float16": "<f2"}


def dtype_code(dtype) -> int:
    """The wire code (P.DTYPES) of an element type given as a wire code, a name ("int8") or a NumPy dtype; 255
    (unknown) for anything else."""
    if isinstance(dtype, str) and dtype in P.DTYPES:
        return P.DTYPES[dtype]
    if isinstance(dtype, int):
        return int(dtype)
    if _np is not None:
        if isinstance(dtype, _np.integer):
            return int(dtype)
        try:
            dt = _np.dtype(dtype)
        except TypeError:
            return P.DTYPES["unknown"]
        for name, code in NUMPY_DTYPES.items():
            if _np.dtype(code) == dt:
                return P.DTYPES[name]
    return P.DTYPES["unknown"]


@dataclass
class TensorInfo:
    """One tensor of GET_TENSOR_INFO. `dtype` is the element type as a NumPy dtype (`numpy.dtype('int8')`), or its
    name (a str) when NumPy is not installed or cannot hold the type ("unknown"); `dtype_code` is the wire code
    (`_protocol.DTYPES`) and `dtype_name` its name ("int8"). The constructor takes the type as a wire code, a name or
    a NumPy dtype."""
    name: str
    dtype: object
    shape: List[int]
    bytes: int
    quant_axis: int = -1
    scale: List[float] = field(default_factory=list)
    zero_point: List[int] = field(default_factory=list)
    dtype_code: int = field(init=False, repr=False, compare=False, default=255)

    def __post_init__(self):
        self.dtype_code = dtype_code(self.dtype)
        name = self.dtype_name
        self.dtype = _np.dtype(NUMPY_DTYPES[name]) if _np is not None and name in NUMPY_DTYPES else name

    @property
    def dtype_name(self) -> str:
        return DTYPE_NAMES.get(self.dtype_code, "unknown")


@dataclass
class ModelTensors:
    format: str
    model_bytes: int
    arena_bytes: int
    inputs: List[TensorInfo]
    outputs: List[TensorInfo]


def _tensor(r: Reader) -> TensorInfo:
    name = r.str8("tensor name")
    dtype = r.u8("dtype")
    rank = r.u8("rank")
    nbytes = r.u32("bytes")
    if rank > P.MAX_RANK:
        raise DecodeError("rank %d above %d" % (rank, P.MAX_RANK))
    shape = [r.i32("dim") for _ in range(rank)]
    axis = r.i32("quant_axis")
    n = r.u32("quant count")
    if n * 8 > r.remaining:
        raise DecodeError("%d quantization entries in %d bytes" % (n, r.remaining))
    scale, zp = [], []
    for _ in range(n):
        scale.append(r.f32("scale"))
        zp.append(r.i32("zero_point"))
    return TensorInfo(name, dtype, shape, nbytes, axis, scale, zp)


def decode_tensor_info(data: bytes) -> ModelTensors:
    r = Reader(data)
    fmt = r.str8("format")
    model_bytes = r.u32("model_bytes")
    arena = r.u32("arena_bytes")
    ni, no = r.u8("input count"), r.u8("output count")
    if ni > P.MAX_TENSORS or no > P.MAX_TENSORS:
        raise DecodeError("tensor counts %d/%d above the limit %d" % (ni, no, P.MAX_TENSORS))
    inputs = [_tensor(r) for _ in range(ni)]
    outputs = [_tensor(r) for _ in range(no)]
    r.end()
    return ModelTensors(fmt, model_bytes, arena, inputs, outputs)


MAX_METADATA_ENTRIES = 256  # protocol::kMaxMetadataEntries


def decode_model_metadata(data: bytes) -> dict:
    """GET_MODEL_METADATA: the engine's key/value facts about the model (docs/protocol.md 3.11), in its order."""
    r = Reader(data)
    n = r.u32("entry count")
    if n > MAX_METADATA_ENTRIES:
        raise DecodeError("%d metadata entries, above the limit %d" % (n, MAX_METADATA_ENTRIES))
    out = {}
    for _ in range(n):
        key = r.str8("metadata key")
        size = r.u32("metadata value")
        out[key] = bytes(r.take(size, "metadata value")).decode("utf-8", "replace")
    r.end()
    return out


@dataclass
class EngineInfo:
    kind: str
    options: str
    model_loaded: bool
    model_format: str
    model_bytes: int
    model_source: str
    inferences: int
    chained_to: str


def decode_engine_info(data: bytes) -> EngineInfo:
    r = Reader(data)
    e = EngineInfo(r.str8("kind"), r.str8("options"), r.u8("model_loaded") != 0, r.str8("model_format"),
                   r.u32("model_bytes"), r.str8("model_source"), r.u64("inferences"), r.str8("chained_to"))
    r.end()
    return e


@dataclass
class LayerTime:
    name: str
    op: str
    ns: int


@dataclass
class TimingRecord:
    queue_ns: int
    compute_ns: int
    total_ns: int
    layers: List[LayerTime]


def decode_timing_record(data: bytes) -> TimingRecord:
    r = Reader(data)
    t = TimingRecord(r.u64("queue_ns"), r.u64("compute_ns"), r.u64("total_ns"), [])
    n = r.u32("layer count")
    if n * 10 > r.remaining:
        raise DecodeError("timing record announces %d layers in %d bytes" % (n, r.remaining))
    for _ in range(n):
        t.layers.append(LayerTime(r.str8("layer name"), r.str8("layer op"), r.u64("layer ns")))
    r.end()
    return t


def decode_timings(data: bytes) -> List[int]:
    if len(data) % 4:
        raise DecodeError("timings payload of %d bytes is not a multiple of 4" % len(data))
    return list(struct.unpack("<%dI" % (len(data) // 4), data))


@dataclass
class SessionInfo:
    id: int
    transport: str
    peer: str
    role: str
    authenticated: bool
    memory_used: int
    memory_cap: int
    max_queued: int
    sessions: int


def decode_session_info(data: bytes) -> SessionInfo:
    r = Reader(data)
    s = SessionInfo(r.u64("id"), r.str8("transport"), r.str8("peer"), "admin" if r.u8("role") == 1 else "user",
                    r.u8("authenticated") != 0, r.u64("memory_used"), r.u64("memory_cap"), r.u32("max_queued"),
                    r.u32("sessions"))
    r.end(exact=False)
    return s


@dataclass
class EngineStats:
    engine: int
    kind: str
    state: int
    model_loaded: bool
    model_format: str
    model_source: str
    model_bytes: int
    inferences: int
    failed: int
    cancelled: int
    compute_ns: int
    queue_ns: int
    total_ns: int
    last_compute_ns: int
    last_queue_ns: int
    last_total_ns: int
    last_end_ns: int
    queued: int
    running_session: int


@dataclass
class ServerStats:
    uptime_ns: int
    sessions: int
    sessions_total: int
    engines: List[EngineStats]


def decode_server_stats(data: bytes) -> ServerStats:
    """GET_SERVER_STATS (docs/protocol.md 3.10)."""
    r = Reader(data)
    s = ServerStats(r.u64("uptime_ns"), r.u32("sessions"), r.u64("sessions_total"), [])
    n = r.u32("engine count")
    if n > P.MAX_ENGINES:
        raise DecodeError("statistics of %d engines; at most %d" % (n, P.MAX_ENGINES))
    for _ in range(n):
        s.engines.append(EngineStats(
            r.u32("engine"), r.str8("kind"), r.u32("state"), r.u8("model_loaded") != 0, r.str8("model_format"),
            r.str8("model_source"), r.u32("model_bytes"), r.u64("inferences"), r.u64("failed"), r.u64("cancelled"),
            r.u64("compute_ns"), r.u64("queue_ns"), r.u64("total_ns"), r.u64("last_compute_ns"),
            r.u64("last_queue_ns"), r.u64("last_total_ns"), r.u64("last_end_ns"), r.u32("queued"),
            r.u64("running_session")))
    r.end(exact=False)  # later minors may append fields
    return s


def encode_infer_request(inputs: Sequence[bytes]) -> bytes:
    """INFER request: every input, input i being inputs[i]."""
    head = struct.pack("<I", len(inputs))
    for i, b in enumerate(inputs):
        head += struct.pack("<II", i, len(b))
    return head + b"".join(bytes(b) for b in inputs)


def decode_infer_answer(data: bytes) -> List[bytes]:
    r = Reader(data)
    m = r.u32("output count")
    if m > P.MAX_TENSORS:
        raise DecodeError("INFER answer carries %d outputs; the limit is %d" % (m, P.MAX_TENSORS))
    lengths = [r.u32("output length") for _ in range(m)]
    if sum(lengths) != r.remaining:
        raise DecodeError("INFER answer announces %d bytes of outputs, %d follow" % (sum(lengths), r.remaining))
    outs = [bytes(r.take(n, "output bytes")) for n in lengths]
    r.end()
    return outs


# --- model store (docs/flash-format.md) --------------------------------------------------------------------------


def encode_flash_begin(size: int, name: str, xxh64: Optional[int] = None, fmt: int = P.FLASH_FORMAT_ANY) -> bytes:
    return struct.pack("<QQII", size, xxh64 or 0, fmt, 1 if xxh64 is not None else 0) + str8(name)


def encode_flash_chunk(offset: int, data: bytes) -> bytes:
    return struct.pack("<Q", offset) + bytes(data)


@dataclass
class FlashSlot:
    slot: int
    name: str
    format: int
    size: int
    xxh64: int
    seq: int
    parameters: int


@dataclass
class FlashEntry:
    client: int
    seq: int
    active: Optional[FlashSlot] = None
    previous: Optional[FlashSlot] = None
    writing: bool = False
    received: int = 0
    expected: int = 0


@dataclass
class FlashCatalogue:
    store_size: int
    erase_block: int
    write_size: int
    data_bytes: int
    free_bytes: int
    read_chunk: int
    device: str
    entries: List[FlashEntry]


def _slot(r: Reader) -> FlashSlot:
    return FlashSlot(r.u8("slot"), r.str8("name"), r.u32("format"), r.u64("size"), r.u64("xxh64"), r.u64("seq"),
                     r.u64("parameters"))


def decode_flash_catalogue(data: bytes) -> FlashCatalogue:
    r = Reader(data)
    c = FlashCatalogue(r.u64("store_size"), r.u32("erase_block"), r.u32("write_size"), r.u64("data_bytes"),
                       r.u64("free_bytes"), r.u32("read_chunk"), r.str8("device"), [])
    n = r.u32("entry_count")
    if n > 4096:
        raise DecodeError("flash catalogue: %d entries (at most 4096)" % n)
    for _ in range(n):
        e = FlashEntry(r.u32("client"), r.u64("seq"))
        flags = r.u8("flags")
        if flags & ~7:
            raise DecodeError("flash catalogue entry: unknown flags 0x%x" % flags)
        if flags & 1:
            e.active = _slot(r)
        if flags & 2:
            e.previous = _slot(r)
        if flags & 4:
            e.writing, e.received, e.expected = True, r.u64("received"), r.u64("expected")
        c.entries.append(e)
    r.end()
    return c


@dataclass
class FlashWriteState:
    in_progress: bool
    slot: int
    next_offset: int
    received: int
    expected: int


def decode_flash_write_state(data: bytes) -> FlashWriteState:
    r = Reader(data)
    s = FlashWriteState(r.u8("in_progress") != 0, r.u8("slot"), r.u64("next_offset"), r.u64("received"),
                        r.u64("expected"))
    r.end()
    return s
