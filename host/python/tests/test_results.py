"""aisrv.results without a server: every case of tests/data/results/*.json (shared with the C++ test
tests/unit/results/test_results.cpp; expectations written by hand) through decode() and recognise(), with the outputs
given three ways (arrays of the tensor's type, raw bytes, and float32 arrays already dequantized as
Client.infer(dequantized=True) returns them), label files through parse_labels(), then the pieces."""
import glob
import json
import os
import unittest

import numpy as np

from aisrv import _protocol as P
from aisrv import codec
from aisrv import results as R

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "../../.."))
CASES = os.path.join(ROOT, "tests", "data", "results")
NUMPY = {"float32": "<f4", "int8": "i1", "uint8": "u1", "int16": "<i2", "uint16": "<u2", "int32": "<i4",
         "int64": "<i8", "boolean": "?", "float16": "<f2"}
SIZE = {"float32": 4, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "int32": 4, "int64": 8, "boolean": 1,
        "float16": 2, "unknown": 0}


def load_cases():
    cases = []
    for path in sorted(glob.glob(os.path.join(CASES, "*.json"))):
        with open(path) as f:
            for c in json.load(f)["cases"]:
                cases.append((os.path.basename(path), c))
    return cases


def number(v):
    return float(v) if isinstance(v, str) else v


def flatten(v, out):
    if isinstance(v, list):
        for e in v:
            flatten(e, out)
    else:
        out.append(number(v))
    return out


def tensor_of(j):
    shape = j["shape"]
    n = 1
    for d in shape:
        n *= max(d, 0)
    return codec.TensorInfo(j["name"], P.DTYPES[j["dtype"]], shape, n * SIZE[j["dtype"]], j.get("quant_axis", -1),
                            j.get("scale", []), j.get("zero_point", []))


def model_of(j):
    return R.ModelDescription([tensor_of(t) for t in j["inputs"]], [tensor_of(t) for t in j["outputs"]],
                              [tuple(kv) for kv in j.get("metadata", [])])


def output_values(j, spec):
    """The case's values of one output as a flat float64 list, or None for raw bytes ("hex")."""
    prefix = flatten(j.get("values", []), [])
    if "fill" in j:
        count = j.get("count", int(np.prod([max(d, 0) for d in spec["shape"]])))
        values = [number(j["fill"])] * count
        values[:len(prefix)] = prefix
        return values
    return prefix


def output_forms(j, spec, info):
    """The output as arrays of its type, as bytes, and (for quantized tensors) dequantized float32."""
    if "hex" in j:
        b = bytes.fromhex(j["hex"])
        return {"bytes": b}
    name = spec["dtype"]
    a = np.array(output_values(j, spec), dtype=np.float64).astype(NUMPY[name])
    if a.size == int(np.prod([max(d, 0) for d in spec["shape"]])):
        a = a.reshape(spec["shape"])
    forms = {"array": a, "bytes": a.tobytes()}
    if info.scale and name not in ("float32", "float16"):
        scale = np.asarray(info.scale, dtype=np.float32)
        zp = np.asarray(info.zero_point, dtype=np.float32)
        per_axis = len(info.scale) > 1
        usable = len(info.scale) == len(info.zero_point) and (
            not per_axis or (0 <= info.quant_axis < a.ndim and a.shape[info.quant_axis] == len(info.scale)))
        if usable:  # (client.dequantize's rule)
            if per_axis:
                shape = [1] * a.ndim
                shape[info.quant_axis] = len(info.scale)
                scale, zp = scale.reshape(shape), zp.reshape(shape)
            forms["dequantized"] = ((a.astype(np.float32) - zp) * scale).astype(np.float32)
    return forms


def placement_of(j):
    return R.Placement(j["input_width"], j["input_height"], j["picture_width"], j["picture_height"],
                       j.get("scale_x", 1.0), j.get("scale_y", 1.0), j.get("left", 0.0), j.get("top", 0.0),
                       j.get("crop_x", 0), j.get("crop_y", 0))


def options_of(c):
    j = c.get("options", {})
    o = R.Options()
    if "task" in j:
        o.task = j["task"]
    if "labels" in j:
        o.labels = j["labels"]
    if "labels_text" in j:
        o.labels = R.parse_labels(j["labels_text"])
    if "threshold" in j:
        o.threshold = float(number(j["threshold"]))
    if "iou_threshold" in j:
        o.iou_threshold = float(number(j["iou_threshold"]))
    if "max_results" in j:
        o.max_results = j["max_results"]
    if "placement" in j:
        o.placement = placement_of(j["placement"])
    return o


class SharedCases(unittest.TestCase):
    def check_near(self, got, expected, tol, what):
        self.assertLessEqual(abs(got - number(expected)), tol, "%s: got %r, expected %r" % (what, got, expected))

    def check_decoded(self, d, e, tol):
        self.assertEqual(d.task, e["task"])
        self.assertEqual(d.decoder, e["decoder"])
        classes = e.get("classes", [])
        self.assertEqual(len(d.classes), len(classes), d.classes)
        for got, want in zip(d.classes, classes):
            self.assertEqual(got.index, want["index"])
            self.assertEqual(got.label, want["label"])
            self.check_near(got.score, want["score"], tol, "score")
        dets = e.get("detections", [])
        self.assertEqual(len(d.detections), len(dets), d.detections)
        for got, want in zip(d.detections, dets):
            self.assertEqual(got.class_id, want["class_id"])
            self.assertEqual(got.label, want["label"])
            self.check_near(got.score, want["score"], tol, "score")
            for v, w, what in zip((got.box.x0, got.box.y0, got.box.x1, got.box.y1), want["box"], "x0 y0 x1 y1".split()):
                self.check_near(v, w, tol, what)
        kps = e.get("keypoints", [])
        self.assertEqual(len(d.keypoints), len(kps))
        for got, want in zip(d.keypoints, kps):
            self.assertEqual(got.name, want["name"])
            self.check_near(got.x, want["x"], tol, "x")
            self.check_near(got.y, want["y"], tol, "y")
            self.check_near(got.score, want["score"], tol, "score")
        self.assertEqual(d.mask is not None, "mask" in e)
        if d.mask is None:
            return
        m, em = d.mask, e["mask"]
        self.assertEqual((m.width, m.height), (em["width"], em["height"]))
        self.assertEqual(m.classes.shape, (m.height, m.width))
        if "classes" in em:
            self.assertEqual(m.classes.reshape(-1).tolist(), em["classes"])
        self.assertEqual(len(m.present), len(em["present"]))
        for got, want in zip(m.present, em["present"]):
            self.assertEqual((got.class_id, got.label, got.pixels), (want["class_id"], want["label"], want["pixels"]))
            self.check_near(got.fraction, want["fraction"], 1e-6, "fraction")
        if "placement" in em:
            if em["placement"] is None:
                self.assertIsNone(m.placement)
            else:
                self.assertEqual(m.placement, placement_of(em["placement"]))
        for x, y, cls in e.get("class_at", []):
            self.assertEqual(m.class_at(x, y), cls, "class_at(%s, %s)" % (x, y))

    def test_every_case(self):
        cases = load_cases()
        self.assertGreaterEqual(len(cases), 60)
        for file, c in cases:
            with self.subTest(file=file, case=c["name"]):
                if "labels_text" in c and "model" not in c:
                    if "error" in c:
                        with self.assertRaises(R.ResultsError) as cm:
                            R.parse_labels(c["labels_text"])
                        self.assertEqual(cm.exception.code, c["error"]["code"])
                        self.assertIn(c["error"]["contains"], cm.exception.message)
                    else:
                        self.assertEqual(R.parse_labels(c["labels_text"]), c["expect_labels"])
                    continue
                model = model_of(c["model"])
                options = options_of(c)
                specs = c["model"]["outputs"]
                forms = [output_forms(j, specs[min(i, len(specs) - 1)], model.outputs[min(i, len(specs) - 1)])
                         for i, j in enumerate(c["outputs"])]
                if "recognise" in c:
                    self.assertEqual(R.recognise(model, options), c["recognise"])
                for form in ("array", "bytes", "dequantized"):
                    if form == "dequantized" and ("error" in c or not any(form in f for f in forms)):
                        continue
                    outputs = [f.get(form, f.get("array", f.get("bytes"))) for f in forms]
                    if "error" in c:
                        with self.assertRaises(R.ResultsError, msg=form) as cm:
                            R.decode(model, outputs, options)
                        self.assertEqual(cm.exception.code, c["error"]["code"])
                        self.assertIn(c["error"]["contains"], cm.exception.message, form)
                    else:
                        self.check_decoded(R.decode(model, outputs, options), c["expect"], c.get("tolerance", 1e-3))


class Pieces(unittest.TestCase):
    def test_task_names(self):
        self.assertEqual(R.task_from_name("classify"), "classification")
        self.assertEqual(R.task_from_name("Detect"), "detection")
        self.assertEqual(R.task_from_name("segment"), "segmentation")
        self.assertEqual(R.task_from_name("pose"), "pose")
        self.assertIsNone(R.task_from_name("obb"))
        with self.assertRaises(R.ResultsError):
            R.recognise(R.ModelDescription([], []), R.Options(task="obb"))

    def test_placements_as_the_image_pipeline_makes_them(self):
        # the values tests/unit/image and `aisrv infer --image` give: kite_and_cold.jpg (1352x900) into 640x640
        p = R.Placement.letterbox(1352, 900, 640, 640)
        self.assertEqual((p.left, p.top), (0.0, 107.0))
        self.assertAlmostEqual(p.scale_x, 640 / 1352)
        self.assertAlmostEqual(p.scale_y, 426 / 900)
        self.assertAlmostEqual(p.picture_y(107 + 426), 900)
        g = R.Placement.letterbox(512, 600, 640, 640)  # grace_hopper.bmp: padded left and right
        self.assertEqual((g.left, g.top), (47.0, 0.0))
        self.assertAlmostEqual(g.scale_x, 546 / 512)
        s = R.Placement.stretch(500, 610, 192, 192)
        self.assertAlmostEqual(s.picture_x(192), 500)
        self.assertAlmostEqual(s.picture_y(96), 305)

    def test_skeleton(self):
        self.assertEqual(len(R.coco_skeleton()), 18)
        for a, b in R.coco_skeleton():
            self.assertTrue(0 <= a < 17 and 0 <= b < 17 and a != b)

    def test_metadata_labels(self):
        self.assertEqual(R.metadata_labels(R.ModelDescription([], [], [("labels", "0 cat\n1 dog\n")])), ["cat", "dog"])
        self.assertEqual(R.metadata_labels(R.ModelDescription([], [], {"labels": "0 cat\ndog\n"})), [])
        self.assertEqual(R.metadata_labels(R.ModelDescription([], [])), [])

    def test_keywords_and_tensor_info_records(self):
        # codec.ModelTensors (what Client.tensor_info() returns) works as a description; options as keywords.
        out = codec.TensorInfo("probs", P.DTYPES["float32"], [1, 3], 12)
        tensors = codec.ModelTensors("tflite", 0, 0, [], [out])
        d = R.decode(tensors, [np.array([[0.1, 0.7, 0.2]], dtype=np.float32)], max_results=1, labels=["a", "b", "c"])
        self.assertEqual([(c.index, c.label) for c in d.classes], [(1, "b")])

    def test_yolov8_at_ultralytics_size(self):
        n, rows = 8400, 84
        m = R.ModelDescription([codec.TensorInfo("images", P.DTYPES["float32"], [1, 640, 640, 3], 640 * 640 * 12)],
                               [codec.TensorInfo("output0", P.DTYPES["float32"], [1, rows, n], rows * n * 4)])
        v = np.zeros((1, rows, n), dtype=np.float32)
        v[0, 0:2] = 0.5
        v[0, 2:4] = 0.25
        v[0, 4 + 7] = 0.3 + 0.6 * np.arange(n, dtype=np.float32) / n
        d = R.decode(m, [v])
        self.assertEqual(len(d.detections), 1)
        self.assertEqual(d.detections[0].class_id, 7)
        self.assertAlmostEqual(d.detections[0].box.x0, 240, places=3)
        self.assertAlmostEqual(d.detections[0].box.x1, 400, places=3)

    def test_yolov8_forty_thousand_candidates(self):
        n, rows = 40000, 5
        m = R.ModelDescription([codec.TensorInfo("images", P.DTYPES["float32"], [1, 2000, 2000, 3], 2000 * 2000 * 12)],
                               [codec.TensorInfo("output0", P.DTYPES["float32"], [1, rows, n], rows * n * 4)])
        a = np.arange(n)
        v = np.zeros((rows, n), dtype=np.float32)
        v[0] = (a % 200) * 10 + 5
        v[1] = (a // 200) * 10 + 5
        v[2:4] = 5
        v[4] = 0.3 + 0.6 * a.astype(np.float32) / n
        d = R.decode(m, [v.reshape(1, rows, n)])
        self.assertEqual(len(d.detections), 300)
        self.assertEqual([det.score for det in d.detections], [float(v[4, n - 1 - i]) for i in range(300)])
        self.assertAlmostEqual(d.detections[0].box.x0, 1992.5)

    def test_mutated_outputs_decode_or_fail_cleanly(self):
        rng = np.random.default_rng(1234)
        runs = failures = 0
        for _, c in load_cases():
            if "model" not in c:
                continue
            model = model_of(c["model"])
            options = options_of(c)
            specs = c["model"]["outputs"]
            base = [output_forms(j, specs[min(i, len(specs) - 1)], model.outputs[min(i, len(specs) - 1)])["bytes"]
                    for i, j in enumerate(c["outputs"])]
            for _ in range(40):
                outs = []
                for b in base:
                    b = bytearray(b)
                    if b:
                        for _ in range(int(rng.integers(1, 9))):
                            b[int(rng.integers(len(b)))] = int(rng.integers(256))
                        if rng.integers(16) == 0:
                            b = b[:int(rng.integers(len(b) + 1))]
                    outs.append(bytes(b))
                runs += 1
                try:
                    with np.errstate(all="ignore"):
                        R.decode(model, outs, options)
                except R.ResultsError as e:
                    failures += 1
                    self.assertEqual(e.code, "invalid_argument")
        self.assertGreater(runs, 1000)


if __name__ == "__main__":
    unittest.main()
