"""The shared wire cases (tests/conformance/cases.json), the same table the C++ conformance suite runs, through this
package's Client.call against the C++ test server (test-double engines) that ctest names in $AISRV_TEST_SERVER."""
import json
import os
import struct
import unittest

import aisrv
from aisrv import _protocol as P
from aisrv import codec

from servers import Server, program

CASES = os.environ.get("AISRV_CONF_CASES",
                       os.path.join(os.path.dirname(__file__), "../../../tests/conformance/cases.json"))


def test_double_model(inputs=(16,), outputs=(16,), layers=4, delay_us=0) -> bytes:
    """A model of the C++ test double (tests/support/test_backend.hpp): 'AIST', counts, layers, delay, sizes."""
    m = b"AIST" + struct.pack("<BBHI", len(inputs), len(outputs), layers, delay_us)
    return m + b"".join(struct.pack("<I", n) for n in inputs) + b"".join(struct.pack("<I", n) for n in outputs)


def test_double_output(input0: bytes, size: int, j: int) -> bytes:
    """Output j of the test double: input byte k (cycled) + j + 1."""
    return bytes((input0[k % len(input0)] + j + 1) & 0xFF for k in range(size))


DECODERS = {
    "version": codec.decode_version,
    "tensor_info": codec.decode_tensor_info,
    "engine_info": codec.decode_engine_info,
    "timing_record": codec.decode_timing_record,
    "timings": codec.decode_timings,
    "session_info": codec.decode_session_info,
    "server_stats": codec.decode_server_stats,
    "model_metadata": codec.decode_model_metadata,
}


class SharedWireCases(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server([program("AISRV_TEST_SERVER"), "--engines", "2"])
        cls.model = test_double_model()
        cls.input = bytes(i * 3 for i in range(16))
        cls.expected = test_double_output(cls.input, 16, 0)
        with open(CASES, encoding="utf-8") as f:
            cls.table = json.load(f)

    @classmethod
    def tearDownClass(cls):
        code = cls.server.stop()
        assert code == 0, "the test server exited with %d" % code

    def payload(self, c: aisrv.Client, word: str) -> bytes:
        if word == "":
            return b""
        if word in ("model", "input", "expected"):
            return getattr(self, word)
        if word == "input+1":
            return self.input + b"\x5a"
        if word == "input-1":
            return self.input[:-1]
        if word.startswith("hex:"):
            return bytes.fromhex(word[4:])
        if word.startswith("junk:"):
            return b"\x5a" * int(word[5:])
        if word == "infer:input":
            info = c.tensor_info(0, refresh=True)
            return codec.encode_infer_request([self.input if i == 0 else bytes(t.bytes)
                                               for i, t in enumerate(info.inputs)])
        self.fail("cases.json uses an unknown payload word %r" % word)

    def test_every_case(self):
        self.assertGreater(len(self.table["cases"]), 5)
        for case in self.table["cases"]:
            with self.subTest(case=case["name"]), aisrv.Client(self.server.target) as c:
                for step in case["steps"]:
                    cmd = step["op"] if "op" in step else P.COMMANDS[step["cmd"]][0]
                    engine = step.get("engine", 0)
                    if engine == "engines":
                        engine = c.version.engines
                    tensor = step.get("tensor", 0)
                    send = self.payload(c, step.get("send", ""))
                    where = "%s: %s" % (case["name"], json.dumps(step))
                    want = step["status"]
                    try:
                        answer = c.call(cmd, engine, tensor, send)
                        error = None
                    except aisrv.ServerError as e:
                        error = e
                    if want == "any":
                        continue
                    if want != "OKAY":
                        self.assertIsNotNone(error, where)
                        bit = P.STATUS[want][0]
                        self.assertEqual(error.status & -error.status, bit, where)
                        if "message" in step:
                            self.assertIn(step["message"].replace("{input_len}", str(len(self.input))),
                                          error.message, where)
                        continue
                    self.assertIsNone(error, "%s: %s" % (where, error))
                    if "expect" in step:
                        self.assertEqual(answer, self.payload(c, step["expect"]), where)
                    if "decode" in step:
                        DECODERS[step["decode"]](answer)  # raises DecodeError when it does not decode
                    if "outputs" in step:
                        outs = codec.decode_infer_answer(answer)
                        for i, word in enumerate(step["outputs"]):
                            self.assertEqual(outs[i], self.payload(c, word), where)


if __name__ == "__main__":
    unittest.main()
