"""The package without a server: record decoders against truncation and oversized counts, the INFER request against
docs/protocol.md's worked example, version compatibility, quantization rules, the pure-Python xxHash64 against
published values, target parsing, the generated wire tables and records against protocol/ (via
tools/gen-python-protocol), and (CrossCodec, with the C++ tool records_dump) every record written and read alike by the
C++ and the Python codec."""
import os
import struct
import subprocess
import sys
import tempfile
import unittest

import numpy as np

import aisrv
from aisrv import _protocol as P
from aisrv import _records as R
from aisrv import codec
from aisrv._xxh64 import xxh64
from aisrv.client import input_bytes

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "../../.."))


def tensor_record(name="in", dtype=P.DTYPES["uint8"], shape=(1, 4), nbytes=4, axis=-1, scale=(0.5,), zp=(3,)):
    b = codec.str8(name) + struct.pack("<BB", dtype, len(shape)) + struct.pack("<I", nbytes)
    b += b"".join(struct.pack("<i", d) for d in shape)
    b += struct.pack("<iI", axis, len(scale))
    return b + b"".join(struct.pack("<fi", s, z) for s, z in zip(scale, zp))


class Codecs(unittest.TestCase):
    def test_infer_request_is_the_documented_example(self):
        # docs/protocol.md 3.9: one input, #0, 4 bytes 0a 0b 0c 0d
        self.assertEqual(codec.encode_infer_request([bytes([10, 11, 12, 13])]).hex(),
                         "01000000" "00000000" "04000000" "0a0b0c0d")
        self.assertEqual(codec.decode_infer_answer(bytes.fromhex("01000000" "02000000" "0b0c")), [b"\x0b\x0c"])
        with self.assertRaises(codec.DecodeError):
            codec.decode_infer_answer(bytes.fromhex("01000000" "03000000" "0b0c"))
        with self.assertRaises(codec.DecodeError):
            codec.decode_infer_answer(struct.pack("<I", 17) + bytes(17 * 4))

    def test_version_and_compatibility(self):
        rec = struct.pack("<HHHHIII", 1, 2, 1, 0, P.CAP_INFER | P.CAP_STATS, 1 << 20, 2) + codec.str8("aisrvd 0.1.0")
        v = codec.decode_version(rec + b"later fields")
        self.assertEqual((v.major, v.minor, v.engines, v.server_version), (1, 2, 2, "aisrvd 0.1.0"))
        self.assertIsNone(codec.compatible(v))
        v.major, v.min_major = 3, 3
        self.assertIn("upgrade the client", codec.compatible(v))
        for cut in range(len(rec) - 1):
            with self.assertRaises(codec.DecodeError):
                codec.decode_version(rec[:cut])

    def test_tensor_info_decodes_and_refuses_truncation(self):
        body = codec.str8("tflite") + struct.pack("<IIBB", 1000, 2000, 1, 1) + tensor_record()
        body += tensor_record("out", P.DTYPES["int8"], (1, 2), 2, -1, (0.25,), (-1,))
        m = codec.decode_tensor_info(body)
        self.assertEqual(m.inputs[0].shape, [1, 4])
        self.assertEqual(m.outputs[0].zero_point, [-1])
        for cut in range(len(body)):
            with self.assertRaises(codec.DecodeError):
                codec.decode_tensor_info(body[:cut])
        with self.assertRaises(codec.DecodeError):
            codec.decode_tensor_info(body + b"x")

    def test_server_stats(self):
        engine = (struct.pack("<I", 0) + codec.str8("cpu") + struct.pack("<IB", 1, 1) + codec.str8("tflite") +
                  codec.str8("wire") + struct.pack("<I", 1234) + struct.pack("<10Q", 5, 1, 0, 70, 3, 80, 7, 2, 9, 60) +
                  struct.pack("<IQ", 2, 4))
        rec = struct.pack("<QIQI", 10 ** 9, 3, 8, 1) + engine
        s = codec.decode_server_stats(rec)
        self.assertEqual((s.sessions, s.sessions_total, len(s.engines)), (3, 8, 1))
        e = s.engines[0]
        self.assertEqual((e.kind, e.inferences, e.compute_ns, e.total_ns, e.last_end_ns, e.queued, e.running_session),
                         ("cpu", 5, 70, 80, 60, 2, 4))
        with self.assertRaises(codec.DecodeError):
            codec.decode_server_stats(rec[:-1])
        with self.assertRaises(codec.DecodeError):
            codec.decode_server_stats(struct.pack("<QIQI", 1, 1, 1, 17))

    def test_model_metadata(self):
        entries = [("task", "detection"), ("labels", "person\nkite\n"), ("empty", "")]
        body = struct.pack("<I", len(entries))
        for k, v in entries:
            body += codec.str8(k) + struct.pack("<I", len(v.encode())) + v.encode()
        self.assertEqual(codec.decode_model_metadata(body), dict(entries))
        for cut in range(len(body)):
            with self.assertRaises(codec.DecodeError):
                codec.decode_model_metadata(body[:cut])
        with self.assertRaises(codec.DecodeError):
            codec.decode_model_metadata(body + b"x")
        with self.assertRaises(codec.DecodeError):
            codec.decode_model_metadata(struct.pack("<I", 257))

    def test_random_bytes_never_escape_as_other_errors(self):
        rng = np.random.default_rng(7)
        for _ in range(3000):
            junk = rng.integers(0, 256, int(rng.integers(0, 80)), dtype=np.uint8).tobytes()
            for decode in (codec.decode_tensor_info, codec.decode_engine_info, codec.decode_timing_record,
                           codec.decode_version, codec.decode_session_info, codec.decode_server_stats,
                           codec.decode_infer_answer, codec.decode_flash_catalogue, codec.decode_model_metadata):
                try:
                    decode(junk)
                except codec.DecodeError:
                    pass


class Quantization(unittest.TestCase):
    def test_round_half_away_from_zero_and_saturation(self):
        t = codec.TensorInfo("x", P.DTYPES["int8"], [4], 4, -1, [0.5], [0])
        q = aisrv.quantize([0.25, -0.25, 100.0, -100.0], t)
        self.assertEqual(q.dtype, np.int8)
        self.assertEqual(q.tolist(), [1, -1, 127, -128])
        np.testing.assert_allclose(aisrv.dequantize(q, t), [0.5, -0.5, 63.5, -64.0])

    def test_per_channel(self):
        t = codec.TensorInfo("w", P.DTYPES["uint8"], [2, 2], 4, 0, [1.0, 0.5], [0, 10])
        q = aisrv.quantize(np.array([[1.0, 2.0], [1.0, 2.0]]), t)
        self.assertEqual(q.tolist(), [[1, 2], [12, 14]])


class TensorTypes(unittest.TestCase):
    def test_dtypes_are_numpy_dtypes(self):
        t = codec.decode_tensor_info(codec.str8("tflite") + struct.pack("<IIBB", 0, 0, 1, 0) +
                                     tensor_record(dtype=P.DTYPES["int8"])).inputs[0]
        self.assertEqual(t.dtype, np.dtype(np.int8))
        self.assertEqual((t.dtype_code, t.dtype_name), (P.DTYPES["int8"], "int8"))
        self.assertEqual(aisrv.numpy_dtype(t), np.int8)
        # the type given as a wire code (as before), a name or a NumPy dtype is the same tensor
        for given in (P.DTYPES["int8"], "int8", np.int8, np.dtype("i1")):
            self.assertEqual(codec.TensorInfo("in", given, [1, 4], 4, -1, [0.5], [3]), t)
        unknown = codec.TensorInfo("u", P.DTYPES["unknown"], [1], 1)
        self.assertEqual((unknown.dtype, unknown.dtype_name), ("unknown", "unknown"))


class InputChecks(unittest.TestCase):
    """What Client.infer / set_input send for an input: checked against the tensor's shape and dtype first."""
    picture = codec.TensorInfo("image", P.DTYPES["uint8"], [1, 4, 4, 3], 48, -1, [1 / 128], [128])

    def refused(self, t, value, *words):
        with self.assertRaises(ValueError) as e:
            input_bytes(t, 0, value)
        for w in ("input 0 '%s'" % t.name,) + words:
            self.assertIn(w, str(e.exception))

    def test_a_float_picture_of_pixel_values_is_refused(self):
        pixels = np.arange(48, dtype=np.uint8).reshape(1, 4, 4, 3) * 5
        self.assertEqual(input_bytes(self.picture, 0, pixels), pixels.tobytes())
        self.refused(self.picture, pixels.astype(np.float32), "uint8 [1, 4, 4, 3]", "float32 [1, 4, 4, 3]",
                     "-1..0.992188", "0..235")
        # real values in the input's range are still quantized with its scale and zero point
        real = (pixels.astype(np.float32) - 128) / 128
        self.assertEqual(input_bytes(self.picture, 0, real), pixels.tobytes())
        self.refused(self.picture, np.full((1, 4, 4, 3), np.nan, np.float32), "NaN")

    def test_shape_and_dtype_are_checked(self):
        self.refused(self.picture, np.zeros((1, 4, 3, 4), np.uint8), "uint8 [1, 4, 4, 3]", "uint8 [1, 4, 3, 4]",
                     "wrong shape")
        self.refused(self.picture, np.zeros((1, 48), np.uint8), "wrong shape")
        self.refused(self.picture, np.full((1, 4, 4, 3), 200, np.int64) + 100, "int64", "do not fit uint8")
        self.refused(self.picture, np.full((1, 4, 4, 3), 1.5, np.float16).astype(np.complex64), "wrong dtype")
        # accepted: no batch dimension, flat data of the element count (np.fromfile), lossless integer types, bytes
        want = np.full((1, 4, 4, 3), 7, np.uint8).tobytes()
        self.assertEqual(input_bytes(self.picture, 0, np.full((4, 4, 3), 7, np.uint8)), want)
        self.assertEqual(input_bytes(self.picture, 0, np.full(48, 7, np.uint8)), want)
        self.assertEqual(input_bytes(self.picture, 0, np.full((1, 4, 4, 3), 7, np.int64)), want)
        self.assertEqual(input_bytes(self.picture, 0, b"\x07" * 5), b"\x07" * 5)  # raw bytes: the server checks
        plain = codec.TensorInfo("ids", P.DTYPES["int32"], [1, 3], 12)
        self.assertEqual(input_bytes(plain, 0, [[1, 2, 3]]), np.array([1, 2, 3], "<i4").tobytes())
        self.refused(plain, np.array([[1.5, 2, 3]]), "float64", "do not fit int32")
        floats = codec.TensorInfo("x", P.DTYPES["float32"], [1, 2], 8)
        self.assertEqual(input_bytes(floats, 0, [[0.5, 255]]), np.array([0.5, 255], "<f4").tobytes())


class Xxh64(unittest.TestCase):
    def test_published_values(self):
        self.assertEqual(xxh64(b""), 0xEF46DB3751D8E999)
        self.assertEqual(xxh64(b"a"), 0xD24EC4F1A98C6E5B)
        self.assertEqual(xxh64(b"abc"), 0x44BC2CF5AD770999)

    def test_long_input_against_libxxhash(self):
        # the same 805 bytes hashed by Debian's libxxhash (XXH64, seed 0) while writing this test
        self.assertEqual(xxh64(bytes((i * 7 + 3) & 255 for i in range(805))), 0xC5128AE09A51E91B)


class Targets(unittest.TestCase):
    def test_bad_targets(self):
        with self.assertRaises(ValueError):
            aisrv.Client("serial:/dev/ttyS0")
        with self.assertRaises(aisrv.TransportError):
            aisrv.Client("unix:/nonexistent/aisrv.sock", timeout=1)

    def test_default_target_follows_the_daemon(self):
        self.assertTrue(aisrv.default_target().startswith("unix:"))
        self.assertTrue(aisrv.default_target().endswith("/aisrv.sock"))


class GeneratedTables(unittest.TestCase):
    def test_protocol_tables_and_records_are_current(self):
        with tempfile.TemporaryDirectory() as d:
            subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gen-python-protocol"), d], check=True)
            for module in (P, R):
                with open(os.path.join(d, os.path.basename(module.__file__)), encoding="utf-8") as f, \
                        open(module.__file__, encoding="utf-8") as g:
                    self.assertEqual(f.read(), g.read(), "host/python/aisrv/%s is stale: run tools/gen-python-protocol"
                                     % os.path.basename(module.__file__))


def sample(record, variant, k):
    """The record filled by records_dump's rule (tests/unit/protocol/records_dump.cpp): k[0] counts the values filled in
    wire order; variant 0 leaves lists empty and options absent, variant 1 gives every list two elements and byte
    strings 3 bytes, variant 2 fills every list to its limit (at most 16) and leaves byte strings empty."""
    def some_bytes(n):
        return bytes([n & 255, (n + 1) & 255, (n + 2) & 255]) if variant == 1 else b""

    def value(typ, a=0):
        if typ in R.RECORDS:
            return sample(typ, variant, k)
        if typ == "blob":
            return some_bytes(k[0])
        k[0] += 1
        n = k[0]
        return {"u8": lambda: n & 0x7F, "u16": lambda: 0x100 + n, "u32": lambda: 0x01020300 + n,
                "u64": lambda: 0x0102030405060700 + n, "i32": lambda: -n, "f32": lambda: n + 0.5,
                "boolean": lambda: n % 2 == 1, "str8": lambda: "s%d" % n, "str32": lambda: "long value %d" % n,
                "DType": lambda: n % 9}[typ]()

    values, counts = {}, {}
    for kind, typ, member, a, b, _ in R.RECORDS[record][1]:
        if kind == "FIELD":
            values[member] = value(typ)
        elif kind == "ENUM":
            k[0] += 1
            values[member] = codec._ENUM_NAMES[typ][k[0] % (a + 1)]
        elif kind == "COUNT":
            counts[member] = min({0: 0, 1: 2, 2: 16}[variant], a)
        elif kind == "LIST":
            values[member] = [value(typ) for _ in range(counts[member])]
        elif kind == "ZIP":
            pairs = [(value(typ), value(a)) for _ in range(counts[member])]
            values[member], values[b] = [p[0] for p in pairs], [p[1] for p in pairs]
        elif kind in ("OPT", "OPT0"):
            values[member] = value(typ) if variant else None
        elif kind == "FLAG":
            values[member] = bool(variant)
        elif kind == "WHEN" and variant:
            values[member] = value(typ)
        elif kind == "REST" and variant:
            k[0] += 1
            values[member] = some_bytes(k[0])
        elif kind == "SEQ":
            values[member] = [value(typ) for _ in range({0: 0, 1: 2, 2: 16}[variant])]
        elif kind == "INDEX":
            k[0] += 1
            values[member] = k[0] % a
        elif kind == "BLOB":
            values[member] = some_bytes(k[0])  # k not counted
    return codec.CLASSES[record](**values)


# Records with BLOB fields are elements of a list followed by BLOBS (InferTensor): on their own only their lengths are
# on the wire, so reading one back gives empty byte strings (of the lengths both codecs then write as 0).
ELEMENT_ONLY = {name for name, (_, fields) in R.RECORDS.items() if any(f[0] == "BLOB" for f in fields)}


@unittest.skipUnless(os.environ.get("AISRV_RECORDS_DUMP"), "needs AISRV_RECORDS_DUMP (ctest protocol_records_cross)")
class CrossCodec(unittest.TestCase):
    """Both codecs come from records.def: the C++ one (records.hpp) and this package's (codec.py) must write every
    record to the same bytes and read each other's, and agree on what they refuse."""

    @classmethod
    def setUpClass(cls):
        out = subprocess.run([os.environ["AISRV_RECORDS_DUMP"]], check=True, capture_output=True, text=True).stdout
        lines = [l.split() for l in out.splitlines()]
        cls.cpp = {(name, int(variant)): bytes.fromhex("" if h == "-" else h) for name, variant, h in lines
                   if variant != "fn"}
        cls.fn = {name: bytes.fromhex(h) for name, variant, h in lines if variant == "fn"}

    def cpp_decode(self, items):
        """What the C++ decoder makes of each (record, bytes): its record encoded again, or 'error <errc>'."""
        text = "".join("%s %s\n" % (name, data.hex() or "-") for name, data in items)
        out = subprocess.run([os.environ["AISRV_RECORDS_DUMP"], "decode"], input=text, check=True,
                             capture_output=True, text=True).stdout.splitlines()
        self.assertEqual(len(out), len(items))
        return [line if line.startswith("error") else bytes.fromhex("" if line == "-" else line) for line in out]

    def py_decode(self, name, data):
        try:
            return codec.encode(name, codec.decode(name, data))
        except codec.DecodeError:
            return "error protocol_error"

    def test_every_record_is_written_alike(self):
        self.assertEqual({name for name, _ in self.cpp}, set(R.RECORDS))
        self.assertEqual({variant for _, variant in self.cpp}, {0, 1, 2})
        for (name, variant), want in self.cpp.items():
            if name not in R.RECORDS:
                continue
            with self.subTest(record=name, variant=variant):
                mine = codec.encode(name, sample(name, variant, [0]))
                self.assertEqual(mine.hex(), want.hex())
                again = want if name not in ELEMENT_ONLY else self.cpp_decode([(name, want)])[0]
                self.assertEqual(codec.encode(name, codec.decode(name, want)), again)  # Python reads C++'s bytes
        items = [(name, codec.encode(name, sample(name, variant, [0]))) for name, variant in self.cpp
                 if name in R.RECORDS]
        self.assertEqual(self.cpp_decode(items), [data if name not in ELEMENT_ONLY else self.py_decode(name, data)
                                                  for name, data in items])  # C++ reads Python's bytes

    def test_infer_and_timings_are_written_alike(self):
        # the samples: 0 tensors, 2 tensors of 3 bytes, 16 tensors (the limit) with no bytes; 0, 2 and 16 timings
        for variant, (n, size) in enumerate(((0, 0), (2, 3), (P.MAX_TENSORS, 0))):
            request = codec.decode("InferRequest", self.cpp[("InferRequest", variant)])
            self.assertEqual([len(t.bytes) for t in request.inputs], [size] * n)
            self.assertEqual(len({t.index for t in request.inputs}), n)
            self.assertEqual([len(o) for o in codec.decode_infer_answer(self.cpp[("InferAnswer", variant)])],
                             [size] * n)
            self.assertEqual(len(codec.decode_timings(self.cpp[("Timings", variant)])), [0, 2, 16][variant])
        # the named functions of payloads.hpp: inputs given out of order (4 bytes, an empty one) after a byte the
        # request is appended to; the answer replaces what its buffer held; timings saturate at 0xFFFFFFFF
        a = bytes([10, 11, 12, 13])
        self.assertEqual(self.fn["InferRequest"][1:],
                         codec.encode("InferRequest", codec.InferRequest(inputs=[codec.InferTensor(1, a),
                                                                                 codec.InferTensor(0, b"")])))
        self.assertEqual(self.fn["InferRequest"][:1], b"\xee")
        self.assertEqual(codec.decode_infer_answer(self.fn["InferAnswer"]), [a, b""])
        self.assertEqual(codec.decode_timings(self.fn["Timings"]), [7, 0, 0xFFFFFFFF])
        # the client's request: input i is inputs[i]
        self.assertEqual(self.cpp_decode([("InferRequest", codec.encode_infer_request([a, b"", b"\x01"]))]),
                         [codec.encode_infer_request([a, b"", b"\x01"])])

    def test_infer_hostile_framings_are_refused_alike(self):
        head = struct.pack("<I", 2) + struct.pack("<II", 0, 1) + struct.pack("<II", 1, 1)
        items = [("InferRequest", head + b"\x01\x02"),  # accepted
                 ("InferRequest", head + b"\x01"),  # lengths announce 2 bytes, 1 follows
                 ("InferRequest", head + b"\x01\x02\x03"),  # 3 follow
                 ("InferRequest", struct.pack("<I", 2) + struct.pack("<II", 0, 1) * 2 + b"\x01\x02"),  # index twice
                 ("InferRequest", struct.pack("<I", 1) + struct.pack("<II", P.MAX_TENSORS, 0)),  # index at the limit
                 ("InferRequest", struct.pack("<I", P.MAX_TENSORS + 1) + bytes(8 * 17)),  # count above the limit
                 ("InferRequest", struct.pack("<I", 0xFFFFFFFF)),  # a hostile count, refused before allocating
                 ("InferAnswer", struct.pack("<III", 2, 1, 0) + b"\x07"),  # accepted: an empty output
                 ("InferAnswer", struct.pack("<III", 2, 1, 0xFFFFFFFF) + b"\x07"),
                 ("InferAnswer", struct.pack("<I", P.MAX_TENSORS + 1) + bytes(4 * 17)),
                 ("Timings", b""), ("Timings", bytes(8)), ("Timings", bytes(7))]
        cpp = self.cpp_decode(items)
        mine = [self.py_decode(name, data) for name, data in items]
        self.assertEqual(mine, cpp)
        self.assertEqual([isinstance(m, bytes) for m in mine],
                         [True, False, False, False, False, False, False, True, False, False, True, True, False])
        with self.assertRaisesRegex(codec.DecodeError, "index 0 given twice"):
            codec.decode("InferRequest", items[3][1])

    def test_both_refuse_and_accept_the_same_hostile_bytes(self):
        rng = np.random.default_rng(28)
        items = []
        for (name, variant), good in sorted(self.cpp.items()):
            if name not in R.RECORDS:
                continue
            items += [(name, good[:cut]) for cut in range(len(good))]  # every truncation
            items.append((name, good + b"\x00"))  # a trailing byte
            for _ in range(60):  # bytes changed, counts and flags among them
                data = bytearray(good)
                for pos in rng.integers(0, max(len(data), 1), int(rng.integers(1, 4))):
                    if data:
                        data[pos] = int(rng.choice([0, 1, 2, 0x7F, 0xFF, int(rng.integers(0, 256))]))
                items.append((name, bytes(data)))
        cpp = self.cpp_decode(items)
        refused = 0
        for (name, data), theirs in zip(items, cpp):
            mine = self.py_decode(name, data)
            refused += mine == "error protocol_error"
            if isinstance(mine, bytes) and isinstance(theirs, bytes) and mine != theirs:
                # Python holds text as str: bytes that are not UTF-8 come back replaced, C++ keeps them
                self.assertEqual(self.py_decode(name, theirs), mine, "%s %s" % (name, data.hex()))
                self.assertRaises(UnicodeDecodeError, lambda: data.decode("utf-8"))
            else:
                self.assertEqual(mine, theirs, "%s %s" % (name, data.hex()))
        self.assertGreater(refused, len(items) // 4)


if __name__ == "__main__":
    unittest.main()
