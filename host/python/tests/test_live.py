"""The Python client against a live aisrvd ($AISRVD, set by ctest) with two CPU engines and a model store, on the
shared test data's models: `python3 -c "import aisrv; ..."` runs an inference; NumPy arrays in and out with the
server's dtype, shape and quantization give TensorFlow Lite Micro's expected bytes, decoded into labelled classes
(aisrv.results with the model's own metadata); real values are quantized;
refusals raise ServerError carrying the server's reason; the model store round-trips a model."""
import math
import os
import subprocess
import sys
import unittest

import numpy as np

import aisrv

from servers import Server, program, testdata

PERSON = "tflite/tensorflow__tflite-micro/person_detect.tflite"
PERSON_IN = "reference_io/tflite-micro/person_int8_96x96.bin"
PERSON_OUT = "expected/person_detect__person_int8_96x96.out0.bin"
HELLO = "tflite/tensorflow__tflite-micro/hello_world_int8.tflite"
CORAL = "tflite/google-coral__test_data/mobilenet_v1_0.25_128_quant.tflite"
CAT = "reference_io/coral/cat_coral_u8_128x128x3.bin"
CAT_OUT = "expected/mobilenet_v1_0.25_128_quant__cat_coral_u8_128x128x3.out0.bin"


class LiveDaemon(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        daemon = program("AISRVD")
        testdata(PERSON)
        cls.server = Server([daemon, "--engine", "0=cpu", "--engine", "1=cpu", "--flash", "{dir}/store.img", "--flash-size", "4M"])

    @classmethod
    def tearDownClass(cls):
        code = cls.server.stop()
        assert code == 0, "aisrvd exited with %d:\n%s" % (code, cls.server.output())

    def read(self, relative, dtype=np.uint8):
        return np.fromfile(testdata(relative), dtype=dtype)

    def test_python_c_import_and_infer(self):
        """The one-liner a user types: import, connect, load, infer, print the class."""
        code = ("import aisrv, numpy as np; c = aisrv.connect(%r); c.load_model(1, %r); "
                "print(int(np.argmax(c.infer({0: np.fromfile(%r, np.int8)})[0])))"
                % (self.server.target, testdata(PERSON), testdata(PERSON_IN)))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, env=env)
        self.assertEqual(out.stdout.strip(), str(int(np.argmax(self.read(PERSON_OUT, np.int8)))))

    def test_arrays_in_and_out_are_the_reference(self):
        with aisrv.connect(self.server.target) as c:
            c.load_model(0, testdata(PERSON))
            info = c.tensor_info(0)
            self.assertEqual(info.inputs[0].shape, [1, 96, 96, 1])
            image = self.read(PERSON_IN, np.int8).reshape(1, 96, 96, 1)
            out = c.infer({0: image})[0]
            self.assertEqual(out.dtype, np.int8)
            self.assertEqual(list(out.shape), info.outputs[0].shape)
            np.testing.assert_array_equal(out.ravel(), self.read(PERSON_OUT, np.int8))
            # raw bytes work too, and the step-by-step commands give the same answer
            self.assertEqual(c.infer([image.tobytes()])[0].tobytes(), out.tobytes())
            c.set_input(0, 0, image)
            c.start_inference(0)
            np.testing.assert_array_equal(c.get_output(0, 0), out)
            scores = c.infer({0: image}, dequantized=True)[0]
            self.assertEqual(scores.dtype, np.float32)
            t = info.outputs[0]
            np.testing.assert_allclose(scores, (out.astype(np.float32) - t.zero_point[0]) * t.scale[0])

    def test_uint8_classifier(self):
        with aisrv.connect(self.server.target) as c:
            c.load_model(1, testdata(CORAL))
            out = c.infer({0: self.read(CAT).reshape(1, 128, 128, 3)}, engine=1)[0]
            np.testing.assert_array_equal(out.ravel(), self.read(CAT_OUT))
            self.assertEqual(int(np.argmax(out)), 283)  # tiger cat (libcoral's expectation)
            self.assertEqual(c.tensor_info(1).inputs[0].dtype, np.uint8)
            # the same picture as float32 0..255 values would saturate into a different picture: refused, not sent
            with self.assertRaises(ValueError) as e:
                c.infer({0: self.read(CAT).reshape(1, 128, 128, 3).astype(np.float32)}, engine=1)
            for words in ("input 0 'input' takes uint8 [1, 128, 128, 3]", "got float32 [1, 128, 128, 3]"):
                self.assertIn(words, str(e.exception))
            # What people read: the decoder with the labels the model carries (GET_MODEL_METADATA).
            model = aisrv.results.describe(c, 1)
            self.assertTrue(dict(model.metadata)["labels"].startswith("background\ntench"))
            found = aisrv.results.decode(model, [out])
            self.assertEqual(found.task, "classification")
            self.assertEqual((found.classes[0].index, found.classes[0].label), (283, "tiger cat"))
            self.assertAlmostEqual(found.classes[0].score, 76 / 256)

    def test_real_values_are_quantized_with_the_input_parameters(self):
        # hello_world predicts sin(x); hello_world_test.cc accepts |sin(x) - y| <= 0.05
        with aisrv.connect(self.server.target) as c:
            c.load_model(0, testdata(HELLO))
            for x in (0.77, 1.57, 2.3, 3.14):
                y = c.infer({0: np.array([[x]], dtype=np.float32)}, dequantized=True)[0]
                self.assertLessEqual(abs(math.sin(x) - float(y.ravel()[0])), 0.05, x)

    def test_refusals_carry_the_servers_reason(self):
        with aisrv.connect(self.server.target) as c:
            with self.assertRaises(aisrv.ServerError) as e:
                c.status(9)
            self.assertEqual(e.exception.code, "bad_engine")
            self.assertIn("does not exist", e.exception.message)
            try:  # another test may have left a model: a failed load keeps it (atomic replace)
                c.unload_model(0)
            except aisrv.ServerError:
                pass
            with self.assertRaises(aisrv.ServerError) as e:
                c.load_model(0, b"not a model at all" * 10)
            self.assertEqual(e.exception.code, "model_error")
            self.assertTrue(e.exception.message)
            with self.assertRaises(aisrv.ServerError) as e:
                c.infer({0: np.zeros(4, np.int8)})
            self.assertEqual(e.exception.code, "no_model")
            c.load_model(0, testdata(PERSON))
            with self.assertRaises(ValueError):  # the wrong size is caught before sending
                c.infer({0: np.zeros((1, 10), np.int8)})
            with self.assertRaises(aisrv.ServerError) as e:
                c.set_input(0, 0, b"\x00" * 5)
            self.assertEqual(e.exception.code, "bad_length")
            self.assertIn("9216", e.exception.message)
            c.status(0)  # error bits read (and cleared)
            self.assertEqual(c.status(0) & 0x3FFFC, 0)

    def test_sessions_and_statistics(self):
        with aisrv.connect(self.server.target) as a, aisrv.connect(self.server.target) as b:
            ia, ib = a.session_info(), b.session_info()
            self.assertNotEqual(ia.id, ib.id)
            self.assertEqual(ia.transport, "unix")
            self.assertGreaterEqual(ia.sessions, 2)
            a.load_model(0, testdata(PERSON))
            before = a.server_stats().engines[0].inferences
            a.infer({0: self.read(PERSON_IN, np.int8)})
            after = b.server_stats()
            self.assertEqual(after.engines[0].inferences, before + 1)
            self.assertEqual(after.engines[0].kind, "cpu")
            self.assertGreater(after.engines[0].last_compute_ns, 0)

    def test_without_a_default_socket_the_system_socket_serves(self):
        """A user with no daemon of their own (their default socket missing) is served by the system socket
        ($AISRV_SYSTEM_SOCKET stands in for /run/aisrv/aisrv.sock); when neither is there both are named."""
        from unittest import mock
        own = "unix:" + os.path.join(os.path.dirname(self.server.socket), "no-own.sock")
        with mock.patch("aisrv.client.default_target", return_value=own), \
                mock.patch.dict(os.environ, {"AISRV_SYSTEM_SOCKET": self.server.target}):
            os.environ.pop("AISRV_CONNECT", None)
            with aisrv.connect() as c:
                self.assertEqual(c.target, self.server.target)
                self.assertEqual(c.session_info().transport, "unix")
            missing = own.replace("no-own", "no-system")
            os.environ["AISRV_SYSTEM_SOCKET"] = missing
            with self.assertRaises(aisrv.TransportError) as e:
                aisrv.connect()
            self.assertIn(own, str(e.exception))
            self.assertIn(missing, str(e.exception))

    def test_model_store_round_trip(self):
        with open(testdata(PERSON), "rb") as f:
            model = f.read()
        seen = []
        with aisrv.connect(self.server.target) as c:
            c.flash_write(1, model, "person", chunk=64 << 10, progress=lambda done, total: seen.append((done, total)))
            self.assertEqual(seen[-1], (len(model), len(model)))
            self.assertGreater(len(seen), 3)
            entry = next(e for e in c.flash_catalogue().entries if e.client == 1)
            self.assertEqual((entry.active.name, entry.active.size), ("person", len(model)))
            self.assertEqual(c.flash_read(1), model)
            c.flash_load(1)
            out = c.infer({0: self.read(PERSON_IN, np.int8)}, engine=1)[0]
            np.testing.assert_array_equal(out.ravel(), self.read(PERSON_OUT, np.int8))
            c.flash_erase(1)
            with self.assertRaises(aisrv.ServerError):
                c.flash_read(1)


if __name__ == "__main__":
    unittest.main()
