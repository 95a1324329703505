"""The aisrv client: typed commands over any transport, NumPy arrays in and out, errors as exceptions that carry the
server's own log line. One Client is one session on the server (docs/protocol.md section 6): the inputs it writes,
the outputs and timings of its inferences and its error bits are its own."""
import os
from typing import Callable, Dict, List, Optional, Sequence, Union

from . import _protocol as P
from . import codec
from .errors import IncompatibleServer, ServerError, TransportError
from .transport import default_target, open_transport, system_target

try:  # NumPy is what users pass tensors as; the wire code works without it (bytes in, bytes out).
    import numpy as np
except ImportError:  # pragma: no cover
    np = None

OP = {name: value for name, (value, _) in P.COMMANDS.items()}
Progress = Callable[[int, int], None]


def numpy_dtype(t: codec.TensorInfo):
    """The NumPy dtype of a tensor of the tensor-info record (what `t.dtype` holds)."""
    if np is None:
        raise RuntimeError("NumPy is needed for arrays (Debian: python3-numpy)")
    name = getattr(t, "dtype_name", None) or codec.DTYPE_NAMES.get(codec.dtype_code(t.dtype), "unknown")
    if name not in codec.NUMPY_DTYPES:
        raise ValueError("tensor '%s' has an element type NumPy cannot hold (%s)" % (t.name, name))
    return np.dtype(codec.NUMPY_DTYPES[name])


def quantize(values, t: codec.TensorInfo):
    """Real values to the tensor's integer type with its scale and zero point (rounded half away from zero as the
    C++ side does, saturated)."""
    dt = numpy_dtype(t)
    v = np.asarray(values, dtype=np.float64)
    if not t.scale:
        return v.astype(dt)
    scale = np.asarray(t.scale, dtype=np.float64)
    zp = np.asarray(t.zero_point, dtype=np.float64)
    if len(t.scale) > 1 and t.quant_axis >= 0:
        shape = [1] * v.ndim
        shape[t.quant_axis] = len(t.scale)
        scale, zp = scale.reshape(shape), zp.reshape(shape)
    info = np.iinfo(dt)
    x = v / scale
    return np.clip(np.sign(x) * np.floor(np.abs(x) + 0.5) + zp, info.min, info.max).astype(dt)


def dequantize(array, t: codec.TensorInfo):
    """A quantized tensor's values as float32: (q - zero point) * scale, per tensor or per channel."""
    a = np.asarray(array)
    if not t.scale:
        return a.astype(np.float32)
    scale = np.asarray(t.scale, dtype=np.float32)
    zp = np.asarray(t.zero_point, dtype=np.float32)
    if len(t.scale) > 1 and t.quant_axis >= 0:
        shape = [1] * a.ndim
        shape[t.quant_axis] = len(t.scale)
        scale, zp = scale.reshape(shape), zp.reshape(shape)
    return ((a.astype(np.float32) - zp) * scale).astype(np.float32)


def _shape_fits(given, expected) -> bool:
    """The array's shape is the tensor's (negative dimensions match any size), leading 1s (a batch of one) aside."""
    g, e = list(given), list(expected)
    while g and g[0] == 1 and len(g) > len(e):
        g.pop(0)
    while e and e[0] == 1 and len(e) > len(g):
        e.pop(0)
    return len(g) == len(e) and all(x < 0 or x == y for x, y in zip(e, g))


def input_bytes(t: codec.TensorInfo, index: int, value) -> bytes:
    """An input's value as the bytes SET_INPUT_TENSOR / INFER send, checked against the tensor's shape and dtype
    (docs/python.md, *Inputs*): refuses with ValueError naming the input, what it takes and what was given."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    dt = numpy_dtype(t)
    a = np.asarray(value)
    what = "input %d '%s' takes %s %s" % (index, t.name, t.dtype_name, list(t.shape))
    given = "%s %s" % (a.dtype, list(a.shape))
    count = int(np.prod(t.shape)) if t.shape and min(t.shape) >= 0 else None
    flat = a.ndim == 1 and count is not None and a.size == count  # flat data, as np.fromfile reads it
    if not flat and not _shape_fits(a.shape, t.shape):
        raise ValueError("%s; got %s (wrong shape)" % (what, given))
    if a.dtype != dt:
        if a.dtype.kind not in "biuf" or dt.kind not in "biuf":
            raise ValueError("%s; got %s (wrong dtype)" % (what, given))
        if a.dtype.kind == "f" and dt.kind in "iu" and t.scale:
            a = _quantize_real(a, t, what, given)  # real values into a quantized input
        elif dt.kind != "f":
            converted = a.astype(dt)
            if not np.array_equal(converted, a):  # would wrap, truncate or round: a different input
                raise ValueError("%s; got %s whose values %s..%s do not fit %s (wrong dtype)"
                                 % (what, given, a.min(), a.max(), t.dtype_name))
            a = converted
        else:
            a = a.astype(dt)
    if a.nbytes != t.bytes:
        raise ValueError("%s (%d bytes); got %s (%d bytes)" % (what, t.bytes, given, a.nbytes))
    return a.tobytes()


def _quantize_real(a, t: codec.TensorInfo, what: str, given: str):
    """Real values quantized with the input's parameters, refused when some lie more than a quantization step outside
    what the input represents: float 0..255 pixel values for a uint8 input scaled to 0..1 are a picture given in the
    wrong type, and saturating them would answer for a different picture."""
    if a.size and not np.all(np.isfinite(a)):
        raise ValueError("%s; got %s holding NaN or infinite values" % (what, given))
    q = quantize(a, t)
    step = float(np.max(np.abs(np.asarray(t.scale, dtype=np.float64))))
    if a.size and np.max(np.abs(dequantize(q, t).astype(np.float64) - a.astype(np.float64))) > step:
        info = np.iinfo(q.dtype)
        span = ""
        if len(t.scale) == 1:
            zp, scale = t.zero_point[0], t.scale[0]
            span = " %.6g..%.6g" % ((info.min - zp) * scale, (info.max - zp) * scale)
        raise ValueError("%s (quantized: real values%s); got %s with values %.6g..%.6g, outside what the input "
                         "represents: pass %s data as a %s array, or real values in its range"
                         % (what, span, given, float(a.min()), float(a.max()), t.dtype_name, t.dtype_name))
    return q


def read_token_file(path: str) -> bytes:
    with open(path, "rb") as f:
        token = f.read(P.MAX_TOKEN + 2).rstrip(b"\r\n")
    if not token or len(token) > P.MAX_TOKEN:
        raise ValueError("the token file %s holds %d bytes; a token is 1..%d bytes" % (path, len(token), P.MAX_TOKEN))
    return token


class Client:
    """A connection to an aisrv server.

    >>> with aisrv.Client("unix:/run/aisrv/aisrv.sock") as c:
    ...     c.load_model(0, "model.tflite")
    ...     scores = c.infer({0: image})[0]

    `target`: unix:PATH, tcp:HOST:PORT, tcp:PORT, usb[:VID:PID[:SERIAL]]; default $AISRV_CONNECT, else the daemon's
    default socket, else (when that does not exist) the system socket /run/aisrv/aisrv.sock ($AISRV_SYSTEM_SOCKET).
    `token`: the server's shared secret (TCP to an aisrvd --token-file); default from the file
    $AISRV_TOKEN_FILE names."""

    def __init__(self, target: Optional[str] = None, timeout: float = 10.0, token: Union[bytes, str, None] = None,
                 fetch_error_details: bool = True):
        chosen = target or os.environ.get("AISRV_CONNECT")
        self.target = chosen or default_target()
        self.fetch_error_details = fetch_error_details
        system = system_target()
        if chosen or self.target == system or not self.target.startswith("unix:") or os.path.lexists(self.target[5:]):
            self.transport = open_transport(self.target, timeout)
        else:  # no daemon of this user's own: the packaged service's socket, named when it fails too
            try:
                self.transport = open_transport(system, timeout)
            except TransportError as e:
                raise TransportError("cannot connect to your own default socket %s (it does not exist) nor to the "
                                     "system socket: %s" % (self.target, e)) from e
            self.target = system
        self._tensors: Dict[int, codec.ModelTensors] = {}
        try:
            self.version = codec.decode_version(self.call(OP["GET_VERSION"]))
            why = codec.compatible(self.version)
            if why:
                raise IncompatibleServer(why)
            if self.version.capabilities & P.CAP_CRC32 and hasattr(self.transport, "crc"):
                self.transport.crc = True
            if token is None and os.environ.get("AISRV_TOKEN_FILE"):
                token = read_token_file(os.environ["AISRV_TOKEN_FILE"])
            if token:
                self.auth(token)
        except BaseException:
            self.transport.close()
            raise

    # --- connection ------------------------------------------------------------------------------------------------
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self.transport.close()

    def call(self, cmd: int, engine: int = 0, tensor: int = 0, payload: bytes = b"") -> bytes:
        """Any command: its answer payload, or ServerError carrying the server's reason."""
        status, answer = self.transport.transact(cmd, engine, tensor, payload)
        if status == 0:
            return answer
        name = next((n for n, (v, _) in P.COMMANDS.items() if v == cmd), "UNKNOWN")
        message = "%s from %s" % (_status_names(status), name)
        if self.fetch_error_details and cmd != OP["GET_DEBUG_LOG"]:
            message = self._reason(status, engine) or message
        if status & P.STATUS["ERROR_MODEL_CHANGED"][0]:
            self._tensors.pop(engine, None)
        raise ServerError(status, name, message)

    def _reason(self, status: int, engine: int) -> Optional[str]:
        """The server's debug-log line for the error just answered: this session's newest line of the engine's log,
        or of the server's when the engine number was the problem."""
        version = getattr(self, "version", None)
        bad_engine = bool(status & P.STATUS["ERROR_BAD_ENGINE"][0]) or (version is not None and engine >= version.engines)
        log_engine = P.ENGINE_SERVER if bad_engine else engine
        own = P.DEBUG_LOG_OWN if version is not None and version.capabilities & P.CAP_SESSIONS else 0
        try:
            st, text = self.transport.transact(OP["GET_DEBUG_LOG"], log_engine, 1 | own, b"")
        except TransportError:
            return None
        line = text.decode("utf-8", "replace").strip()
        if st != 0 or not line:
            return None
        return line.split("] ", 1)[1] if line.startswith("[") and "] " in line else line

    def auth(self, token: Union[bytes, str]):
        self.call(OP["AUTH"], 0, 0, token.encode() if isinstance(token, str) else bytes(token))

    # --- identity and state ----------------------------------------------------------------------------------------
    def hello(self):
        self.call(OP["HELLO"])

    def id(self) -> int:
        return int.from_bytes(self.call(OP["GET_ID"]), "little")

    def status(self, engine: int = 0) -> int:
        """The engine's state bits and this session's error bits (cleared by reading)."""
        return int.from_bytes(self.call(OP["GET_STATUS"], engine), "little")

    def session_info(self) -> codec.SessionInfo:
        return codec.decode_session_info(self.call(OP["GET_SESSION_INFO"]))

    def server_stats(self) -> codec.ServerStats:
        """Uptime, sessions and every engine's counters (servers of protocol 1.2 and later)."""
        return codec.decode_server_stats(self.call(OP["GET_SERVER_STATS"]))

    def engine_info(self, engine: int = 0) -> codec.EngineInfo:
        return codec.decode_engine_info(self.call(OP["GET_ENGINE_INFO"], engine))

    def tensor_info(self, engine: int = 0, refresh: bool = False) -> codec.ModelTensors:
        if refresh or engine not in self._tensors:
            self._tensors[engine] = codec.decode_tensor_info(self.call(OP["GET_TENSOR_INFO"], engine))
        return self._tensors[engine]

    def model_metadata(self, engine: int = 0) -> dict:
        """What the engine read about the model's outputs: task, labels, NMS layout, input preprocessing
        (docs/protocol.md 3.11); {} from servers without the capability (protocol before 1.3)."""
        if not self.version.capabilities & P.CAP_MODEL_METADATA:
            return {}
        return codec.decode_model_metadata(self.call(OP["GET_MODEL_METADATA"], engine))

    def debug_log(self, engine: int = 0, lines: int = 0) -> str:
        return self.call(OP["GET_DEBUG_LOG"], engine, lines).decode("utf-8", "replace")

    def timings(self, engine: int = 0) -> List[int]:
        return codec.decode_timings(self.call(OP["GET_TIMINGS"], engine))

    def timing_record(self, engine: int = 0) -> codec.TimingRecord:
        return codec.decode_timing_record(self.call(OP["GET_TIMING_RECORD"], engine))

    def cancel(self, engine: int = 0, any_session: bool = False):
        self.call(OP["CANCEL_INFER"], engine, P.CANCEL_ANY if any_session else P.CANCEL_OWN)

    # --- models ------------------------------------------------------------------------------------------------
    def load_model(self, engine: int, model: Union[bytes, str, os.PathLike], arena: bool = False):
        """Loads a model (bytes, or a .tflite / .hef path) on the engine."""
        data = _bytes_of(model)
        self._tensors.pop(engine, None)
        self.call(OP["SET_MODEL_PRIMARY" if arena else "SET_MODEL_SECONDARY"], engine, 0, data)

    def unload_model(self, engine: int = 0):
        self._tensors.pop(engine, None)
        self.call(OP["UNLOAD_MODEL"], engine)

    # --- tensors and inference -------------------------------------------------------------------------------------
    def _input_bytes(self, engine: int, index: int, value) -> bytes:
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value)
        return input_bytes(self.tensor_info(engine).inputs[index], index, value)

    def _output_array(self, engine: int, index: int, data: bytes, dequantized: bool):
        if np is None:
            return data
        t = self.tensor_info(engine).outputs[index]
        a = np.frombuffer(data, dtype=numpy_dtype(t))
        if t.shape and int(np.prod(t.shape)) == a.size:
            a = a.reshape(t.shape)
        return dequantize(a, t) if dequantized else a

    def set_input(self, engine: int, index: int, value):
        self.call(OP["SET_INPUT_TENSOR"], engine, index, self._input_bytes(engine, index, value))

    def start_inference(self, engine: int = 0):
        self.call(OP["START_INFER"], engine)

    def get_output(self, engine: int = 0, index: int = 0, dequantized: bool = False):
        return self._output_array(engine, index, self.call(OP["GET_OUTPUT_TENSOR"], engine, index), dequantized)

    def infer(self, inputs: Union[Dict[int, object], Sequence[object]], engine: int = 0,
              dequantized: bool = False) -> list:
        """One inference: `inputs` maps input indices to arrays (or raw bytes); inputs not given are zeros. Returns every
        output as a NumPy array of the tensor's type and shape (float32 with `dequantized`). One INFER round trip when
        the server offers it, else SET_INPUT_TENSOR, START_INFER, GET_OUTPUT_TENSOR."""
        if not isinstance(inputs, dict):
            inputs = dict(enumerate(inputs))
        info = self.tensor_info(engine)
        raw = []
        for i, t in enumerate(info.inputs):
            raw.append(self._input_bytes(engine, i, inputs[i]) if i in inputs else bytes(t.bytes))
        unknown = set(inputs) - set(range(len(info.inputs)))
        if unknown:
            raise ValueError("the model has %d input(s); no input %s" % (len(info.inputs), sorted(unknown)))
        if self.version.capabilities & P.CAP_INFER:
            outs = codec.decode_infer_answer(self.call(OP["INFER"], engine, 0, codec.encode_infer_request(raw)))
        else:
            for i, b in enumerate(raw):
                self.call(OP["SET_INPUT_TENSOR"], engine, i, b)
            self.call(OP["START_INFER"], engine)
            outs = [self.call(OP["GET_OUTPUT_TENSOR"], engine, i) for i in range(len(info.outputs))]
        return [self._output_array(engine, i, b, dequantized) for i, b in enumerate(outs)]

    # --- the model store (docs/flash-format.md) --------------------------------------------------------------------
    def flash_catalogue(self) -> codec.FlashCatalogue:
        return codec.decode_flash_catalogue(self.call(OP["GET_FLASH_CATALOGUE"]))

    def flash_write_state(self, engine: int = 0) -> codec.FlashWriteState:
        return codec.decode_flash_write_state(self.call(OP["GET_FLASH_WRITE_STATE"], engine))

    def flash_write(self, engine: int, model, name: str, chunk: int = 1 << 20, progress: Optional[Progress] = None):
        """Stores `model` as the engine's model (chunked; the old one stays until the commit verified the new one).
        An error after the transfer began aborts it."""
        data = _bytes_of(model)
        chunk = max(1, min(chunk, self.version.max_payload - 8))
        digest = _xxh64(data)
        self.call(OP["SET_FLASH_BEGIN"], engine, 0, codec.encode_flash_begin(len(data), name, digest))
        try:
            for off in range(0, len(data), chunk):
                self.call(OP["SET_FLASH_CHUNK"], engine, 0, codec.encode_flash_chunk(off, data[off:off + chunk]))
                if progress:
                    progress(min(off + chunk, len(data)), len(data))
            self.call(OP["SET_FLASH_COMMIT"], engine)
        except BaseException:
            try:
                self.call(OP["SET_FLASH_ABORT"], engine)
            except (ServerError, TransportError):
                pass
            raise

    def flash_read(self, engine: int = 0, progress: Optional[Progress] = None) -> bytes:
        """The engine's stored model, chunk by chunk, checked against the catalogue's size and xxHash64."""
        cat = self.flash_catalogue()
        entry = next((e for e in cat.entries if e.client == engine), None)
        if entry is None or entry.active is None:
            raise ServerError(P.STATUS["ERROR_NO_MODEL"][0], "GET_FLASH_MODEL",
                              "engine %d has no model in the store" % engine)
        size, chunks = entry.active.size, []
        got = 0
        for i in range((size + cat.read_chunk - 1) // cat.read_chunk):
            b = self.call(OP["GET_FLASH_MODEL"], engine, i)
            chunks.append(b)
            got += len(b)
            if progress:
                progress(got, size)
        data = b"".join(chunks)
        if len(data) != size:
            raise TransportError("stored model of engine %d: %d bytes read, the catalogue says %d" %
                                 (engine, len(data), size))
        digest = _xxh64(data)
        if digest != entry.active.xxh64:
            raise TransportError("stored model of engine %d: xxh64 %016x, the catalogue says %016x" %
                                 (engine, digest, entry.active.xxh64))
        return data

    def flash_erase(self, engine: int = 0):
        self.call(OP["SET_FLASH_ERASE"], engine)

    def flash_abort(self, engine: int = 0):
        self.call(OP["SET_FLASH_ABORT"], engine)

    def flash_load(self, engine: int = 0, arena: bool = False):
        self._tensors.pop(engine, None)
        self.call(OP["SET_MODEL_PRIMARY_FLASH" if arena else "SET_MODEL_SECONDARY_FLASH"], engine)


def connect(target: Optional[str] = None, **kwargs) -> Client:
    """Client(target, ...): for `with aisrv.connect() as c:`."""
    return Client(target, **kwargs)


def _bytes_of(model) -> bytes:
    if isinstance(model, (bytes, bytearray, memoryview)):
        return bytes(model)
    with open(model, "rb") as f:
        return f.read()


def _xxh64(data: bytes) -> int:
    """The store's integrity hash: python3-xxhash when installed, else the pure-Python one."""
    try:
        import xxhash  # optional (Debian python3-xxhash), much faster
    except ImportError:
        from ._xxh64 import xxh64
        return xxh64(data)
    return xxhash.xxh64_intdigest(data)


def _status_names(status: int) -> str:
    names = [n for n, (bit, _) in P.STATUS.items() if status & bit]
    return "|".join(names) or "OKAY"
