"""Codecs of the aisrv payload records (docs/protocol.md section 3): little-endian, bounds-checked, refusing trailing
bytes where the C++ codecs do. Every record's layout comes from protocol/include/aisrv/protocol/records.def (generated
into _records.py by tools/gen-python-protocol): one encoder and one decoder walk those field lists, as the C++ record
codec (records.hpp) does, and the record classes (TensorInfo, ServerStats, FlashCatalogue, InferRequest, ...) are
dataclasses made from them, members and defaults as the table gives them."""
import struct
from dataclasses import field, make_dataclass
from typing import List, Optional, Sequence

from . import _protocol as P
from . import _records as R

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

    def str32(self, f, most):
        n = self.u32(f)
        if n > most:
            raise DecodeError("field '%s': length %d above the limit %d" % (f, n, most))
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


def compatible(v: "VersionInfo", our_major=P.PROTOCOL_MAJOR, our_min=P.PROTOCOL_MIN_MAJOR) -> Optional[str]:
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




class _TensorInfoBase:
    """One tensor of GET_TENSOR_INFO. `dtype` is the element type as a NumPy dtype (`numpy.dtype('int8')`), or its
    name (a str) when NumPy is not installed or cannot hold the type ("unknown"); `dtype_code` is the wire code
    (`_protocol.DTYPES`) and `dtype_name` its name ("int8"). The constructor takes the type as a wire code, a name or
    a NumPy dtype."""

    def __post_init__(self):
        self.dtype_code = dtype_code(self.dtype)
        name = self.dtype_name
        self.dtype = _np.dtype(NUMPY_DTYPES[name]) if _np is not None and name in NUMPY_DTYPES else name

    @property
    def dtype_name(self) -> str:
        return DTYPE_NAMES.get(self.dtype_code, "unknown")


# --- the record codec: records.def's field kinds (described there) -------------------------------------------------

_SCALARS = {"u8": "<B", "u16": "<H", "u32": "<I", "u64": "<Q", "i32": "<i", "f32": "<f"}
_ENUM_NAMES = {enum: {code: name for name, code in names.items()} for enum, names in R.ENUMS.items()}
_BASES = {"TensorInfo": (_TensorInfoBase,)}


def _zero(kind, typ, default):
    """The value of a member that the record has not been given: the table's DEFAULT, else zero, empty or absent."""
    if default is not None:
        return default
    if kind in ("OPT", "OPT0"):
        return None
    if kind == "ENUM":
        return _ENUM_NAMES[typ][0]
    if kind in ("REST", "BLOB"):
        return b""
    return {"f32": 0.0, "boolean": False, "str8": "", "str32": ""}.get(typ, 0)


def _members(fields):
    """(kind, type, member, default) of a record's data members, in order; a list stands where its count does."""
    zipped = {f[2]: f for f in fields if f[0] == "ZIP"}
    for kind, typ, member, a, b, default in fields:
        if kind == "COUNT":
            yield "LIST", typ, member, None
            if member in zipped:
                yield "LIST", zipped[member][3], zipped[member][4], None
        elif kind == "SEQ":
            yield "LIST", typ, member, None
        elif kind not in ("ZERO", "FLAGS", "LIST", "ZIP", "BLOBS"):
            yield kind, typ, member, default


def _make_class(name, fields):
    spec = []
    for kind, typ, member, default in _members(fields):
        if kind == "LIST":
            spec.append((member, list, field(default_factory=list)))
        else:
            spec.append((member, object, field(default=_zero(kind, typ, default))))
    if name == "TensorInfo":
        spec.append(("dtype_code", int, field(init=False, repr=False, compare=False, default=255)))
    cls = make_dataclass(name, spec, bases=_BASES.get(name, ()), namespace={"__module__": __name__})
    cls.__doc__ = _BASES[name][0].__doc__ if name in _BASES else "The %s record (records.def)." % name
    return cls


CLASSES = {name: _make_class(name, fields) for name, (_, fields) in R.RECORDS.items()}
# TensorInfo, ModelTensors, VersionInfo, EngineInfo, LayerTime, TimingRecord, SessionInfo, EngineStats, ServerStats,
# FlashBegin, FlashChunk, FlashSlotInfo, FlashEntry, FlashCatalogue, FlashWriteState, ... as attributes of this module.
globals().update(CLASSES)
Version, FlashSlot = CLASSES["VersionInfo"], CLASSES["FlashSlotInfo"]  # the names this module used before


def _enum_code(typ, value) -> int:
    if isinstance(value, str):
        return R.ENUMS[typ][value]
    return dtype_code(value) if typ == "DType" else int(value)


def _put(out: bytearray, typ, value):
    if typ in _SCALARS:
        out += struct.pack(_SCALARS[typ], value)
    elif typ == "blob":  # a byte string in a list: its length here, its bytes where BLOBS stands
        out += struct.pack("<I", len(value))
    elif typ == "boolean":
        out.append(1 if value else 0)
    elif typ == "str8":
        out += str8(value)
    elif typ == "str32":
        b = value.encode("utf-8")
        out += struct.pack("<I", len(b)) + b
    elif typ in R.ENUMS:
        out.append(_enum_code(typ, value) & 0xFF)
    else:
        _encode_into(out, typ, value)


def _blobs(typ, element):
    """The byte strings of a list element, as BLOBS writes them: the element itself (`blob`) or its BLOB fields."""
    if typ == "blob":
        return [element]
    return [getattr(element, f[2]) for f in R.RECORDS[typ][1] if f[0] == "BLOB"]


def _encode_into(out: bytearray, name, v):
    fields = R.RECORDS[name][1]
    flags, counts = 0, {}
    for kind, typ, member, a, b, _ in fields:  # the flag bits first: a flag word may precede what it describes
        if kind in ("OPT", "OPT0") and getattr(v, member) is not None or kind == "FLAG" and getattr(v, member):
            flags |= a
    for kind, typ, member, a, b, _ in fields:
        value = getattr(v, member, None)
        if kind in ("FIELD", "INDEX"):
            _put(out, typ, value)
        elif kind == "ENUM":
            out.append(_enum_code(typ, value))
        elif kind == "ZERO":
            _put(out, typ, 0)
        elif kind == "COUNT":
            counts[member] = min(len(value), a)
            _put(out, typ, counts[member])
        elif kind == "LIST":
            for e in value[:counts[member]]:
                _put(out, typ, e)
        elif kind == "ZIP":
            second = getattr(v, b)
            for i, e in enumerate(value[:counts[member]]):
                _put(out, typ, e)
                _put(out, a, second[i] if i < len(second) else 0)
        elif kind == "FLAGS":
            _put(out, typ, flags & a)
        elif kind == "OPT" and value is not None:
            _put(out, typ, value)
        elif kind == "OPT0":
            _put(out, typ, 0 if value is None else value)
        elif kind == "WHEN" and flags & a:
            _put(out, typ, value)
        elif kind == "REST":
            out += bytes(value)
        elif kind == "SEQ":
            for e in value:
                _put(out, typ, e)
        elif kind == "BLOB":
            out += struct.pack("<I", len(value))
        elif kind == "BLOBS":
            for e in value[:counts[member]]:
                for b in _blobs(typ, e):
                    out += bytes(b)


def _get(r: Reader, typ, member, a=0, ctx=None):
    if typ in _SCALARS:
        return struct.unpack(_SCALARS[typ], r.take(struct.calcsize(_SCALARS[typ]), member))[0]
    if typ == "boolean":
        return r.u8(member) != 0
    if typ == "str8":
        return r.str8(member)
    if typ == "str32":
        return r.str32(member, a)
    if typ in R.ENUMS:
        return r.u8(member)
    if typ == "blob":  # its length now, its bytes when BLOBS stands
        ctx["lengths"].append(r.u32(member))
        return b""
    return _decode_from(r, typ, ctx)


def _decode_from(r: Reader, name, ctx=None):
    """The record `name` at the reader. `ctx` is the enclosing record's: "lengths" collects BLOB lengths in wire
    order, "seen" the INDEX values of the list being read."""
    fields = R.RECORDS[name][1]
    values, counts, flags = {}, {}, 0
    ctx = ctx if ctx is not None else {"lengths": [], "seen": None}
    for kind, typ, member, a, b, _ in fields:
        if kind == "FIELD":
            values[member] = _get(r, typ, member, a)
        elif kind == "ENUM":
            code = r.u8(member)
            values[member] = _ENUM_NAMES[typ][code if code <= a else 0]
        elif kind == "ZERO":
            _get(r, typ, member)
        elif kind == "COUNT":
            n = _get(r, typ, member)
            if n > a:
                raise DecodeError("%s: %d elements, above the limit %d" % (member, n, a))
            if n * b > r.remaining:
                raise DecodeError("%s: %d elements cannot fit in the %d bytes left" % (member, n, r.remaining))
            counts[member] = n
        elif kind == "LIST":
            outer, ctx["seen"] = ctx["seen"], set()
            values[member] = [_get(r, typ, member, 0, ctx) for _ in range(counts[member])]
            ctx["seen"] = outer
        elif kind == "ZIP":
            pairs = [(_get(r, typ, member), _get(r, a, member)) for _ in range(counts[member])]
            values[member], values[b] = [p[0] for p in pairs], [p[1] for p in pairs]
        elif kind == "FLAGS":
            flags = _get(r, typ, member)
            if flags & ~a:
                raise DecodeError("%s: unknown bits 0x%x" % (member, flags & ~a))
        elif kind == "OPT":
            values[member] = _get(r, typ, member) if flags & a else None
        elif kind == "OPT0":
            values[member] = _get(r, typ, member)
        elif kind == "FLAG":
            values[member] = bool(flags & a)
        elif kind == "WHEN" and flags & a:
            values[member] = _get(r, typ, member)
        elif kind == "REST":
            values[member] = bytes(r.take(r.remaining, member))
        elif kind == "SEQ":
            size = struct.calcsize(_SCALARS[typ])
            if r.remaining % size:
                raise DecodeError("%s: %d bytes are not a whole number of %d-byte elements" % (member, r.remaining, size))
            values[member] = [_get(r, typ, member) for _ in range(r.remaining // size)]
        elif kind == "INDEX":
            values[member] = _get(r, typ, member)
            if values[member] >= a:
                raise DecodeError("%s %d is not below the limit %d" % (member, values[member], a))
            if ctx["seen"] is not None:
                if values[member] in ctx["seen"]:
                    raise DecodeError("%s %d given twice" % (member, values[member]))
                ctx["seen"].add(values[member])
        elif kind == "BLOB":
            ctx["lengths"].append(r.u32(member))
            values[member] = b""
        elif kind == "BLOBS":
            if sum(ctx["lengths"]) != r.remaining:
                raise DecodeError("%s: the lengths announce %d bytes, %d follow" % (member, sum(ctx["lengths"]),
                                                                                  r.remaining))
            lengths = iter(ctx["lengths"])
            if typ == "blob":
                values[member] = [bytes(r.take(next(lengths), member)) for _ in values[member]]
            else:
                blob_members = [f[2] for f in R.RECORDS[typ][1] if f[0] == "BLOB"]
                for e in values[member]:
                    for m in blob_members:
                        setattr(e, m, bytes(r.take(next(lengths), member)))
    for kind, typ, member, a, b, _ in fields:  # flags that follow what they describe
        if kind == "OPT0" and not flags & a:
            values[member] = None
    return CLASSES[name](**values)


def encode(record: str, value) -> bytes:
    """The bytes of `value`, a record of records.def named `record` ("FlashBegin", ...)."""
    out = bytearray()
    _encode_into(out, record, value)
    return bytes(out)


def decode(record: str, data: bytes):
    """The record named `record` in `data`; DecodeError when it is truncated, has trailing bytes (records whose later
    minors may append fields excepted) or announces more than the limits allow."""
    r = Reader(data)
    value = _decode_from(r, record)
    r.end(exact=not R.RECORDS[record][0])
    return value


def _decoder(record):
    def decode_one(data: bytes):
        return decode(record, data)
    decode_one.__doc__ = "The %s record in `data` (records.def); DecodeError when it does not decode." % record
    return decode_one


decode_version, decode_tensor_info, decode_engine_info = map(_decoder, ("VersionInfo", "ModelTensors", "EngineInfo"))
decode_timing_record, decode_session_info, decode_server_stats = map(_decoder, ("TimingRecord", "SessionInfo",
                                                                                "ServerStats"))
decode_flash_catalogue, decode_flash_write_state = map(_decoder, ("FlashCatalogue", "FlashWriteState"))
MAX_METADATA_ENTRIES = P.MAX_METADATA_ENTRIES


def decode_model_metadata(data: bytes) -> dict:
    """GET_MODEL_METADATA: the engine's key/value facts about the model (docs/protocol.md 3.11), in its order."""
    return {e.first: e.second for e in decode("ModelMetadata", data).entries}


def encode_flash_begin(size: int, name: str, xxh64: Optional[int] = None, fmt: int = P.FLASH_FORMAT_ANY) -> bytes:
    return encode("FlashBegin", CLASSES["FlashBegin"](size=size, xxh64=xxh64, format=fmt, name=name))


def encode_flash_chunk(offset: int, data: bytes) -> bytes:
    return encode("FlashChunk", CLASSES["FlashChunk"](offset=offset, bytes=bytes(data)))


# --- INFER and GET_TIMINGS: the records InferRequest, InferAnswer and Timings -----------------------------------------


def decode_timings(data: bytes) -> List[int]:
    """GET_TIMINGS: each operator's nanoseconds (u32, saturated by the server)."""
    return decode("Timings", data).ns


def encode_infer_request(inputs: Sequence[bytes]) -> bytes:
    """INFER request: every input, input i being inputs[i]."""
    tensors = [CLASSES["InferTensor"](index=i, bytes=bytes(b)) for i, b in enumerate(inputs)]
    return encode("InferRequest", CLASSES["InferRequest"](inputs=tensors))


def decode_infer_answer(data: bytes) -> List[bytes]:
    """INFER answer: every output's bytes, output 0 first."""
    return decode("InferAnswer", data).outputs
