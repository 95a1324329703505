"""Model outputs turned into what people read: the top classes of a classifier, detection boxes (TFLite_Detection_
PostProcess outputs, a YOLOv8 raw head with Ultralytics' non-maximum suppression, the Hailo-8 HAILO_NMS_BY_CLASS
frame), a segmentation mask, or single-pose keypoints, in the coordinates of the original picture. The same rules as
the C++ decoder (engine/results/include/aisrv/results/results.hpp); both are tested on tests/data/results.

    import aisrv, aisrv.results as R
    with aisrv.connect() as c:
        info = c.tensor_info(0)
        outputs = c.infer({0: image})
        decoded = R.decode(R.ModelDescription(info.inputs, info.outputs, metadata), outputs,
                           R.Options(placement=R.Placement(640, 640, 1352, 900, 0.473373, 0.473333, 0, 107)))
        for d in decoded.detections:
            print(d.label or d.class_id, d.score, d.box)

Outputs are NumPy arrays as Client.infer() returns them (raw, or float32 with dequantized=True: a floating-point
array for a quantized tensor is taken as already dequantized) or the raw bytes. Errors raise ResultsError (code
"invalid_argument"). Pure Python and NumPy."""
import math
from dataclasses import dataclass, field, replace
from typing import List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _protocol as P
from . import codec
from .errors import AisrvError

TASKS = ("classification", "detection", "segmentation", "pose")
_TASK_ALIASES = {"classification": "classification", "classify": "classification", "detection": "detection",
                 "detect": "detection", "segmentation": "segmentation", "segment": "segmentation", "pose": "pose"}

DETECTION_THRESHOLD = 0.25
CLASSIFICATION_TOP = 5
DETECTION_MAX = 300
_MAX_NMS = 30000
_MAX_LABEL_ID = 1000000

COCO_KEYPOINTS = ("nose", "left_eye", "right_eye", "left_ear", "right_ear", "left_shoulder", "right_shoulder",
                  "left_elbow", "right_elbow", "left_wrist", "right_wrist", "left_hip", "right_hip", "left_knee",
                  "right_knee", "left_ankle", "right_ankle")
COCO_SKELETON = ((0, 1), (0, 2), (1, 3), (2, 4), (0, 5), (0, 6), (5, 6), (5, 7), (7, 9), (6, 8), (8, 10), (5, 11),
                 (6, 12), (11, 12), (11, 13), (13, 15), (12, 14), (14, 16))


def coco_skeleton() -> Tuple[Tuple[int, int], ...]:
    """The skeleton edges between COCO keypoints (pairs of indices), for drawing."""
    return COCO_SKELETON


class ResultsError(AisrvError):
    """The outputs or the options cannot be decoded; `message` says why."""

    def __init__(self, message: str, code: str = "invalid_argument"):
        self.code = code
        self.message = message
        super().__init__("%s: %s" % (code, message))


# --- the objects --------------------------------------------------------------------------------------------------
@dataclass
class Placement:
    """Where the picture lies in input 0 (the C++ image::Placement): input pixel (x, y) shows picture pixel
    (crop_x + (x - left) / scale_x, crop_y + (y - top) / scale_y)."""
    input_width: int
    input_height: int
    picture_width: int
    picture_height: int
    scale_x: float = 1.0
    scale_y: float = 1.0
    left: float = 0.0
    top: float = 0.0
    crop_x: int = 0
    crop_y: int = 0

    @classmethod
    def stretch(cls, picture_width: int, picture_height: int, input_width: int, input_height: int) -> "Placement":
        """The picture resized to fill the input (as `aisrv infer --image` does by default)."""
        return cls(input_width, input_height, picture_width, picture_height, input_width / picture_width,
                   input_height / picture_height)

    @classmethod
    def letterbox(cls, picture_width: int, picture_height: int, input_width: int, input_height: int) -> "Placement":
        """The picture resized with its aspect kept and centred (Ultralytics' letterbox, `--fit letterbox`): scale
        min(W/w, H/h), the resized size rounded, the padding split in half with the odd pixel after."""
        r = min(input_width / picture_width, input_height / picture_height)
        w = min(max(int(_round_half_away(picture_width * r)), 1), input_width)
        h = min(max(int(_round_half_away(picture_height * r)), 1), input_height)
        return cls(input_width, input_height, picture_width, picture_height, w / picture_width, h / picture_height,
                   float(_round_half_away((input_width - w) / 2.0 - 0.1)),
                   float(_round_half_away((input_height - h) / 2.0 - 0.1)))

    def picture_x(self, input_x: float) -> float:
        return self.crop_x + (input_x - self.left) / self.scale_x

    def picture_y(self, input_y: float) -> float:
        return self.crop_y + (input_y - self.top) / self.scale_y


def _round_half_away(v: float) -> float:
    return math.floor(v + 0.5) if v >= 0 else -math.floor(-v + 0.5)


@dataclass
class Options:
    task: Optional[str] = None          # force the decoder family: a name of TASKS or classify/detect/segment
    labels: List[str] = field(default_factory=list)  # empty: the model's metadata "labels"
    threshold: float = -1.0             # minimum score; < 0: detection 0.25, classification none
    iou_threshold: float = 0.7          # YOLOv8 NMS: suppress IoU above this
    max_results: int = 0                # 0: classification 5, detection 300
    placement: Optional[Placement] = None  # absent: coordinates in input pixels


@dataclass
class ModelDescription:
    """The model's tensors (codec.TensorInfo, as Client.tensor_info() gives them) and the engine's metadata
    entries (key, value) — "task", "labels", "hailo.nms.output", "hailo.nms.classes",
    "hailo.nms.max_bboxes_per_class"; other keys are ignored."""
    inputs: list
    outputs: list
    metadata: List[Tuple[str, str]] = field(default_factory=list)


@dataclass
class Box:  # picture pixels, x right, y down; (x0, y0) top left
    x0: float
    y0: float
    x1: float
    y1: float


@dataclass
class ClassScore:
    index: int
    label: str
    score: float


@dataclass
class Detection:
    class_id: int
    label: str
    score: float
    box: Box


@dataclass
class ClassArea:
    class_id: int
    label: str
    pixels: int
    fraction: float


@dataclass
class Segmentation:
    width: int
    height: int
    classes: np.ndarray                 # int32 [height, width]; -1 where every score was NaN
    present: List[ClassArea]            # largest area first
    placement: Optional[Placement] = None

    def class_at(self, picture_x: float, picture_y: float) -> int:
        return class_at(self, picture_x, picture_y)


@dataclass
class Keypoint:
    name: str
    x: float
    y: float
    score: float


@dataclass
class Decoded:
    task: str
    decoder: str  # top_k, tflite_detection_postprocess, yolov8, hailo_nms_by_class, class_mask, argmax_mask, movenet
    classes: List[ClassScore] = field(default_factory=list)
    detections: List[Detection] = field(default_factory=list)
    mask: Optional[Segmentation] = None
    keypoints: List[Keypoint] = field(default_factory=list)


# --- names, labels, metadata ---------------------------------------------------------------------------------------
def task_from_name(name: str) -> Optional[str]:
    """classification/detection/segmentation/pose, also classify/detect/segment (any case); None otherwise."""
    return _TASK_ALIASES.get(str(name).lower())


def _trim(s: str) -> str:
    return s.strip(" \t\r\v\f")


def _id_line(line: str):
    i = 0
    while i < len(line) and line[i] in "0123456789":
        i += 1
    if i == 0 or i == len(line) or line[i] not in ": \t":
        return None
    ident = min(int(line[:i]), _MAX_LABEL_ID + 1)
    while i < len(line) and line[i] in ": \t":
        i += 1
    name = _trim(line[i:])
    return (ident, name) if name else None


def parse_labels(text: str) -> List[str]:
    """Class names from a label file's text: one per line, either "label" or "ID label" (an integer, whitespace or
    ':', then the name; IDs place the names, gaps stay ""). The first non-blank line decides the format; in the ID
    format every line must have it, and an ID given twice or above 1000000 is refused. Blank lines are ignored."""
    lines = [(n + 1, _trim(l)) for n, l in enumerate(text.split("\n"))]
    lines = [(n, l) for n, l in lines if l]
    if not lines or _id_line(lines[0][1]) is None:
        return [l for _, l in lines]
    labels: List[str] = []
    seen = set()
    for number, line in lines:
        parsed = _id_line(line)
        if parsed is None:
            raise ResultsError("label line %d ('%s') is not 'ID label' like the lines before it" % (number, line))
        ident, name = parsed
        if ident > _MAX_LABEL_ID:
            raise ResultsError("label line %d: ID above %d" % (number, _MAX_LABEL_ID))
        if ident in seen:
            raise ResultsError("label line %d: ID %d given twice" % (number, ident))
        seen.add(ident)
        if ident >= len(labels):
            labels.extend([""] * (ident + 1 - len(labels)))
        labels[ident] = name
    return labels


def _metadata(model) -> List[Tuple[str, str]]:
    md = getattr(model, "metadata", None) or []
    return list(md.items()) if isinstance(md, dict) else [tuple(kv) for kv in md]


def _metadata_value(model, key: str) -> Optional[str]:
    for k, v in _metadata(model):
        if k == key:
            return v
    return None


def metadata_labels(model) -> List[str]:
    """The labels of the model's metadata ("labels"), [] when absent or unreadable."""
    text = _metadata_value(model, "labels")
    if text is None:
        return []
    try:
        return parse_labels(text)
    except ResultsError:
        return []


def _label(labels: Sequence[str], ident: int) -> str:
    return labels[ident] if 0 <= ident < len(labels) else ""


# --- tensors ---------------------------------------------------------------------------------------------------------
_DTYPE_NAME = {code: name for name, code in P.DTYPES.items()}
_SIZE = {"float32": 4, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "int32": 4, "int64": 8, "boolean": 1,
         "float16": 2}
_NUMPY = {"float32": "<f4", "int8": "i1", "uint8": "u1", "int16": "<i2", "uint16": "<u2", "int32": "<i4",
          "int64": "<i8", "boolean": "?", "float16": "<f2"}
_INTEGER = {"int8", "uint8", "int16", "uint16", "int32", "int64", "boolean"}
_UPPER = {"boolean": "BOOL"}


def _dtype(t) -> str:
    name = getattr(t, "dtype_name", None)
    if name is not None:
        return name
    return t.dtype if isinstance(t.dtype, str) else _DTYPE_NAME.get(codec.dtype_code(t.dtype), "unknown")


def _shape_text(shape) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


def _is_quantized(t) -> bool:
    return _dtype(t) in _INTEGER and bool(t.scale)


def _tensor_text(index: int, t) -> str:
    name = _dtype(t)
    return "%d '%s' %s %s%s" % (index, t.name, _UPPER.get(name, name.upper()), _shape_text(t.shape),
                                " (quantized)" if _is_quantized(t) else "")


def _outputs_text(model) -> str:
    s = "%d output(s)" % len(model.outputs)
    for i, t in enumerate(model.outputs):
        s += (": " if i == 0 else "; ") + _tensor_text(i, t)
    return s


def _count(shape) -> Optional[int]:
    n = 1
    for d in shape:
        if d < 0:
            return None
        n *= d
        if n > (1 << 40):
            return None
    return n


def _num(v: float) -> str:
    """A number as the C++ side prints it ({fmt}: shortest form, no '.0')."""
    v = float(v)
    if math.isfinite(v) and v.is_integer() and abs(v) < 1e16:
        return "%d" % v
    if math.isnan(v):
        return "-nan" if math.copysign(1.0, v) < 0 else "nan"
    return repr(v)


class _Tensor:
    """One output checked against its description, as float64 real values (dequantized when quantized)."""

    def __init__(self, index: int, info, data):
        self.info = info
        name = _dtype(info)
        elem = _SIZE.get(name, 0)
        if not elem:
            raise ResultsError("output %s has an element type the decoder cannot read" % _tensor_text(index, info))
        count = _count(info.shape)
        if count is None:
            raise ResultsError("output %s has no usable size" % _tensor_text(index, info))
        if isinstance(data, (bytes, bytearray, memoryview)):
            data = bytes(data)
            if len(data) != count * elem:
                raise ResultsError("output %s holds %d bytes; its shape and type make %d"
                                   % (_tensor_text(index, info), len(data), count * elem))
            arr = np.frombuffer(data, dtype=_NUMPY[name])
            raw = True
        else:
            arr = np.asarray(data)
            if arr.size != count:
                raise ResultsError("output %s holds %d bytes; its shape and type make %d"
                                   % (_tensor_text(index, info), arr.size * elem, count * elem))
            raw = not (arr.dtype.kind == "f" and name in _INTEGER)  # float for an integer tensor: dequantized already
        v = arr.reshape(-1).astype(np.float64)
        if name in _INTEGER and info.scale:
            n = len(info.scale)
            if len(info.zero_point) != n:
                raise ResultsError("output %s has %d scale(s) but %d zero point(s)"
                                   % (_tensor_text(index, info), n, len(info.zero_point)))
            scale = np.array([float(np.float32(s)) for s in info.scale], dtype=np.float64)
            if not np.all(np.isfinite(scale)):
                raise ResultsError("output %s has a non-finite scale" % _tensor_text(index, info))
            zero = np.array(info.zero_point, dtype=np.float64)
            if n > 1:
                axis = info.quant_axis
                if axis < 0 or axis >= len(info.shape) or info.shape[axis] != n:
                    raise ResultsError("output %s has %d scales along axis %d, which does not match its shape"
                                       % (_tensor_text(index, info), n, axis))
                stride = 1
                for d in info.shape[axis + 1:]:
                    stride *= d
                channel = (np.arange(count) // stride) % n
                if raw:
                    v = (v - zero[channel]) * scale[channel]
            elif raw:
                v = (v - zero[0]) * scale[0]
        self.values = v

    def index_at(self, i: int) -> Optional[int]:
        v = self.values[i]
        if not math.isfinite(v) or v < 0 or v > 2147483647 or v != math.floor(v):
            return None
        return int(v)


def _first_max(scores: np.ndarray, axis: int):
    """Along `axis` of a 2-D array: the index of the first maximum ignoring NaN (-1 where every value is NaN) and
    that maximum."""
    nan = np.isnan(scores)
    if not nan.any():
        return np.argmax(scores, axis=axis), scores.max(axis=axis)
    best = np.where(nan, -np.inf, scores).max(axis=axis)
    idx = np.argmax(scores == np.expand_dims(best, axis), axis=axis)
    return np.where(np.all(nan, axis=axis), -1, idx), best


# --- coordinates -----------------------------------------------------------------------------------------------------
def _input_geometry(t) -> Tuple[int, int]:
    """(width, height) of a picture input, as the C++ image::input_geometry guesses it."""
    s = list(t.shape)

    def not_picture():
        return ResultsError("input '%s' of shape %s does not hold a picture (batch 1, height, width and 1 or 3 "
                            "channels, NHWC or NCHW)" % (t.name, _shape_text(s)))
    if any(d <= 0 for d in s):
        raise not_picture()
    hwc = list(s)
    if len(hwc) == 4:
        if hwc[0] != 1:
            raise not_picture()
        hwc = hwc[1:]
    if len(hwc) == 2:
        if hwc[0] == 1:
            raise not_picture()
        w, h, c = hwc[1], hwc[0], 1
    elif len(hwc) == 3:
        if hwc[2] in (1, 3):
            w, h, c = hwc[1], hwc[0], hwc[2]
        elif hwc[0] in (1, 3):
            w, h, c = hwc[2], hwc[1], hwc[0]
        else:
            raise not_picture()
    else:
        raise not_picture()
    name = _dtype(t)
    expected = w * h * c * _SIZE.get(name, 0)
    if expected != t.bytes:
        raise ResultsError("input '%s': shape %s of %s is %d bytes, the tensor has %d"
                           % (t.name, _shape_text(s), _UPPER.get(name, name.upper()), expected, t.bytes))
    return w, h


class _Frame:
    def __init__(self, model, options: Options):
        p = options.placement
        self.placement = p
        if p is not None:
            ok = (p.input_width > 0 and p.input_height > 0 and p.picture_width > 0 and p.picture_height > 0 and
                  all(math.isfinite(v) for v in (p.scale_x, p.scale_y, p.left, p.top)) and
                  p.scale_x > 0 and p.scale_y > 0)
            if not ok:
                raise ResultsError("the placement is unusable (input %dx%d, picture %dx%d, scale %s x %s, left %s, "
                                   "top %s)" % (p.input_width, p.input_height, p.picture_width, p.picture_height,
                                                _num(p.scale_x), _num(p.scale_y), _num(p.left), _num(p.top)))
            self.width, self.height = float(p.input_width), float(p.input_height)
            return
        if not model.inputs:
            raise ResultsError("the model has no input to place coordinates in; give a placement")
        try:
            w, h = _input_geometry(model.inputs[0])
        except ResultsError as e:
            raise ResultsError("coordinates need the input's picture size: %s" % e.message)
        self.width, self.height = float(w), float(h)

    def x(self, input_x: float) -> float:
        if self.placement is not None:
            return min(max(self.placement.picture_x(input_x), 0.0), float(self.placement.picture_width))
        return min(max(input_x, 0.0), self.width)

    def y(self, input_y: float) -> float:
        if self.placement is not None:
            return min(max(self.placement.picture_y(input_y), 0.0), float(self.placement.picture_height))
        return min(max(input_y, 0.0), self.height)

    def box(self, x0: float, y0: float, x1: float, y1: float) -> Box:
        return Box(self.x(min(x0, x1)), self.y(min(y0, y1)), self.x(max(x0, x1)), self.y(max(y0, y1)))


def class_at(mask: Segmentation, picture_x: float, picture_y: float) -> int:
    """The class the mask gives a picture pixel: its centre (x + 0.5, y + 0.5) through the placement to input
    coordinates, then the mask cell covering it (the mask spans the input); without a placement, coordinates are
    mask cells. -1 outside the mask."""
    classes = np.asarray(mask.classes).reshape(-1)
    if mask.width == 0 or mask.height == 0 or classes.size != mask.width * mask.height:
        return -1
    cx, cy = picture_x + 0.5, picture_y + 0.5
    p = mask.placement
    if p is not None and p.input_width > 0 and p.input_height > 0:
        ix = p.left + (cx - p.crop_x) * p.scale_x
        iy = p.top + (cy - p.crop_y) * p.scale_y
        cx = ix * mask.width / p.input_width
        cy = iy * mask.height / p.input_height
    if not (cx >= 0 and cy >= 0 and cx < mask.width and cy < mask.height):
        return -1
    return int(classes[int(cy) * mask.width + int(cx)])


# --- recognition -----------------------------------------------------------------------------------------------------
_DECODER_TASK = {"top_k": "classification", "tflite_detection_postprocess": "detection", "yolov8": "detection",
                 "hailo_nms_by_class": "detection", "class_mask": "segmentation", "argmax_mask": "segmentation",
                 "movenet": "pose"}


@dataclass
class _Plan:
    decoder: str
    output: int = 0
    postprocess: Tuple[int, int, int, int] = (0, 0, 0, 0)  # boxes, classes, scores, count
    transposed: bool = False
    classes: int = 0
    max_boxes: int = 0


def _readable(t) -> bool:
    return _SIZE.get(_dtype(t), 0) > 0 and _count(t.shape) is not None


def _integer_map(t) -> bool:
    return _dtype(t) in _INTEGER and not t.scale


def _suffix(name: str) -> int:
    colon = name.rfind(":")
    tail = name[colon + 1:] if colon >= 0 else ""
    return int(tail) if tail.isdigit() and tail.isascii() else -1


def _postprocess_candidates(m) -> List[int]:
    """The outputs a TFLite_Detection_PostProcess may have written: all of them when there are four; with more
    (models that also output a recurrent state), the four named after the operator, else the four with its shapes."""
    if len(m.outputs) <= 4:
        return list(range(len(m.outputs)))
    named, shaped = [], []
    for i, t in enumerate(m.outputs):
        if "detection_postprocess" in t.name.lower():
            named.append(i)
        s = list(t.shape)
        if _dtype(t) == "float32" and ((len(s) == 3 and s[0] == 1 and s[2] == 4) or
                                       (len(s) == 2 and s[0] == 1) or (len(s) <= 1 and _count(s) == 1)):
            shaped.append(i)
    if len(named) == 4:
        return named
    if len(shaped) == 4:
        return shaped
    return []


def _match_postprocess(m) -> Optional[_Plan]:
    candidates = _postprocess_candidates(m)
    if len(candidates) != 4:
        return None
    boxes = count = -1
    pair = []
    for i in candidates:
        t = m.outputs[i]
        if not _readable(t):
            return None
        s = list(t.shape)
        if len(s) == 3 and s[0] == 1 and s[2] == 4 and s[1] >= 1 and boxes < 0:
            boxes = i
        elif len(s) <= 1 and _count(s) == 1 and count < 0:
            count = i
        elif len(s) == 2 and s[0] == 1 and s[1] >= 1:
            pair.append(i)
        else:
            return None
    if boxes < 0 or count < 0 or len(pair) != 2:
        return None
    n = m.outputs[boxes].shape[1]
    if m.outputs[pair[0]].shape[1] != n or m.outputs[pair[1]].shape[1] != n:
        return None
    a, b = m.outputs[pair[0]].name, m.outputs[pair[1]].name
    a_classes = True
    if ("class" in a.lower()) != ("class" in b.lower()):
        a_classes = "class" in a.lower()
    elif ("score" in a.lower()) != ("score" in b.lower()):
        a_classes = "score" in b.lower()
    else:
        sa, sb = _suffix(a), _suffix(b)
        if (sa, sb) in ((1, 2), (2, 1)):
            tf2 = _suffix(m.outputs[boxes].name) == 3
            a_classes = sa == (2 if tf2 else 1)
    cls, sc = (pair[0], pair[1]) if a_classes else (pair[1], pair[0])
    return _Plan("tflite_detection_postprocess", postprocess=(boxes, cls, sc, count))


def _has_hailo(m) -> bool:
    return any(_metadata_value(m, k) is not None
               for k in ("hailo.nms.classes", "hailo.nms.max_bboxes_per_class", "hailo.nms.output"))


def _metadata_number(m, key: str, lo: int, hi: int) -> int:
    v = _metadata_value(m, key)
    if v is None:
        raise ResultsError('the Hailo NMS metadata lacks "%s"' % key)
    if not (v.isdigit() and v.isascii()) or not lo <= int(v) <= hi:
        raise ResultsError("metadata \"%s\" is '%s'; a number %d..%d is needed" % (key, v, lo, hi))
    return int(v)


def _match_hailo(m) -> _Plan:
    classes = _metadata_number(m, "hailo.nms.classes", 1, 100000)
    max_boxes = _metadata_number(m, "hailo.nms.max_bboxes_per_class", 1, 100000)
    output = 0
    if _metadata_value(m, "hailo.nms.output") is not None:
        if not m.outputs:
            raise ResultsError("the model has no outputs")
        output = _metadata_number(m, "hailo.nms.output", 0, len(m.outputs) - 1)
    elif len(m.outputs) != 1:
        raise ResultsError('the Hailo NMS metadata does not say which of the %d outputs is the NMS frame '
                           '("hailo.nms.output")' % len(m.outputs))
    t = m.outputs[output]
    floats = classes * (1 + 5 * max_boxes)
    if _dtype(t) != "float32" or _count(t.shape) != floats:
        raise ResultsError("output %s is not the HAILO_NMS_BY_CLASS frame of %d classes x %d boxes (FLOAT32, %d "
                           "values)" % (_tensor_text(output, t), classes, max_boxes, floats))
    return _Plan("hailo_nms_by_class", output=output, classes=classes, max_boxes=max_boxes)


def _match_classification(m) -> Optional[_Plan]:
    if len(m.outputs) != 1 or not _readable(m.outputs[0]):
        return None
    s = list(m.outputs[0].shape)
    if not s or len(s) > 4 or s[-1] < 1 or any(d != 1 for d in s[:-1]):
        return None
    return _Plan("top_k")


def _match_pose(m) -> Optional[_Plan]:
    if len(m.outputs) != 1 or not _readable(m.outputs[0]):
        return None
    s = list(m.outputs[0].shape)
    if len(s) != 4 or s[0] != 1 or s[1] != 1 or s[2] < 2 or s[3] != 3:
        return None
    return _Plan("movenet")


def _match_yolov8(m, labels: Sequence[str], lenient: bool) -> Optional[_Plan]:
    if len(m.outputs) != 1 or not _readable(m.outputs[0]):
        return None
    t = m.outputs[0]
    s = list(t.shape)
    if len(s) != 3 or s[0] != 1 or min(s[1], s[2]) < 5 or (not lenient and _integer_map(t)):
        return None
    n = len(labels)
    first = n > 0 and s[1] == n + 4
    second = n > 0 and s[2] == n + 4
    transposed = second if first != second else s[2] < s[1]
    return _Plan("yolov8", transposed=transposed, classes=(s[2] if transposed else s[1]) - 4)


def _match_segmentation(m, lenient: bool) -> Optional[_Plan]:
    if len(m.outputs) != 1 or not _readable(m.outputs[0]):
        return None
    t = m.outputs[0]
    s = list(t.shape)
    if not s or s[0] != 1 or any(d < 1 for d in s):
        return None
    if len(s) == 3 and (lenient or _integer_map(t)):
        return _Plan("class_mask")
    if len(s) == 4 and s[3] == 1 and _integer_map(t):
        return _Plan("class_mask")
    if len(s) == 4:
        return _Plan("argmax_mask")
    return None


def _match_task(m, labels, task: str) -> Optional[_Plan]:
    if task == "classification":
        return _match_classification(m)
    if task == "pose":
        return _match_pose(m)
    if task == "segmentation":
        return _match_segmentation(m, True)
    if _has_hailo(m):
        return _match_hailo(m)
    return _match_postprocess(m) or _match_yolov8(m, labels, True)


_EXPECTED = {
    "classification": "one output [C], [1,C] or [1,1,1,C]",
    "detection": "TFLite_Detection_PostProcess's [1,N,4] [1,N] [1,N] [1], a YOLOv8 head [1,4+C,N], or Hailo NMS "
                 "metadata",
    "segmentation": "one output [1,H,W] of class indices or [1,H,W,C] of scores",
    "pose": "one output [1,1,K,3] of (y, x, score), K >= 2",
}


def _forced_task(options: Options) -> Optional[str]:
    if options.task is None:
        return None
    task = task_from_name(options.task)
    if task is None:
        raise ResultsError("unknown task '%s' (classification, detection, segmentation, pose)" % options.task)
    return task


def _labels(model, options: Options) -> List[str]:
    return list(options.labels) if options.labels else metadata_labels(model)


def _plan(model, options: Options) -> _Plan:
    labels = _labels(model, options)
    task = _forced_task(options)
    if task is not None:
        p = _match_task(model, labels, task)
        if p is not None:
            return p
        raise ResultsError("the outputs do not fit a %s decoder (%s expected): %s"
                           % (task, _EXPECTED[task], _outputs_text(model)))
    hint = _metadata_value(model, "task")
    if hint is not None and task_from_name(hint) is not None:
        p = _match_task(model, labels, task_from_name(hint))
        if p is not None:
            return p
    if _has_hailo(model):
        return _match_hailo(model)
    for p in (_match_postprocess(model), _match_pose(model), _match_classification(model),
              _match_yolov8(model, labels, False), _match_segmentation(model, False)):
        if p is not None:
            return p
    raise ResultsError("cannot tell what the model's outputs hold (%s); --task classification|detection|"
                       "segmentation|pose forces a decoder" % _outputs_text(model))


def recognise(model, options: Optional[Options] = None) -> str:
    """The task of the decoder that applies ("classification", "detection", "segmentation", "pose"); raises
    ResultsError saying why none does."""
    return _DECODER_TASK[_plan(model, options or Options()).decoder]


# --- the decoders ----------------------------------------------------------------------------------------------------
def _f32(v: float) -> float:
    return float(np.float32(v))


def _sort_and_cut(dets: List[Detection], limit: int) -> List[Detection]:
    dets = sorted(dets, key=lambda d: -d.score)  # stable: equal scores keep their order
    return dets[:limit]


def _classification(t: _Tensor, labels, o: Options, plan: _Plan, model) -> Decoded:
    v = t.values
    keep = ~np.isnan(v)
    if o.threshold >= 0:
        keep &= v >= _f32(o.threshold)
    idx = np.nonzero(keep)[0]
    order = idx[np.lexsort((idx, -v[idx]))][:o.max_results or CLASSIFICATION_TOP]
    return Decoded("classification", "top_k",
                   classes=[ClassScore(int(i), _label(labels, int(i)), float(v[i])) for i in order])


def _postprocess(tensors, labels, o: Options, plan: _Plan, model) -> Decoded:
    bi, ci, si, ni = plan.postprocess
    boxes, classes, scores = tensors[bi], tensors[ci], tensors[si]
    n = scores.values.size
    count = float(tensors[ni].values[0])
    if not math.isfinite(count) or count < 0 or count > n:
        raise ResultsError("the detection count (output %s) is %s; the outputs hold %d entries"
                           % (_tensor_text(ni, model.outputs[ni]), _num(count), n))
    frame = _Frame(model, o)
    threshold = _f32(o.threshold) if o.threshold >= 0 else DETECTION_THRESHOLD
    dets = []
    for i in range(int(count)):
        score = float(scores.values[i])
        if not score >= threshold:
            continue
        cls = classes.index_at(i)
        if cls is None:
            raise ResultsError("detection %d has class %s, not a class index" % (i, _num(classes.values[i])))
        y0, x0, y1, x1 = (float(boxes.values[i * 4 + k]) for k in range(4))
        if not all(math.isfinite(v) for v in (y0, x0, y1, x1)):
            raise ResultsError("detection %d has a box that is not finite" % i)
        dets.append(Detection(cls, _label(labels, cls), score,
                              frame.box(x0 * frame.width, y0 * frame.height, x1 * frame.width, y1 * frame.height)))
    return Decoded("detection", "tflite_detection_postprocess",
                   detections=_sort_and_cut(dets, o.max_results or DETECTION_MAX))


def _iou(b: np.ndarray, rest: np.ndarray) -> np.ndarray:
    w = np.maximum(0.0, np.minimum(b[2], rest[:, 2]) - np.maximum(b[0], rest[:, 0]))
    h = np.maximum(0.0, np.minimum(b[3], rest[:, 3]) - np.maximum(b[1], rest[:, 1]))
    inter = w * h
    union = (b[2] - b[0]) * (b[3] - b[1]) + (rest[:, 2] - rest[:, 0]) * (rest[:, 3] - rest[:, 1]) - inter
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(union > 0, inter / np.where(union > 0, union, 1.0), 0.0)


def _yolov8(t: _Tensor, labels, o: Options, plan: _Plan, model) -> Decoded:
    rows = plan.classes + 4
    s = t.info.shape
    n = s[1] if plan.transposed else s[2]
    m = t.values.reshape(n, rows).T if plan.transposed else t.values.reshape(rows, n)
    frame = _Frame(model, o)
    centres = m[0:2]
    finite = centres[np.isfinite(centres)]
    extent = float(np.abs(finite).max()) if finite.size else 0.0
    normalised = extent <= 2.0
    sx, sy = (frame.width, frame.height) if normalised else (1.0, 1.0)
    threshold = _f32(o.threshold) if o.threshold >= 0 else DETECTION_THRESHOLD
    cls, score = _first_max(m[4:], 0)
    cx, cy, w, h = m[0] * sx, m[1] * sy, m[2] * sx, m[3] * sy
    xa, xb, ya, yb = cx - w / 2, cx + w / 2, cy - h / 2, cy + h / 2
    with np.errstate(invalid="ignore"):
        keep = (cls >= 0) & (score >= threshold) & np.isfinite(cx) & np.isfinite(cy) & np.isfinite(w) & np.isfinite(h)
    anchor = np.nonzero(keep)[0]
    score, cls = score[anchor], cls[anchor]
    boxes = np.stack([np.minimum(xa, xb)[anchor], np.minimum(ya, yb)[anchor], np.maximum(xa, xb)[anchor],
                      np.maximum(ya, yb)[anchor]], axis=1)
    order = np.lexsort((anchor, -score))
    if order.size > _MAX_NMS:
        order = order[:_MAX_NMS]
    limit = o.max_results or DETECTION_MAX
    iou_threshold = _f32(o.iou_threshold)
    kept = []
    for c in np.unique(cls[order]):
        rest = order[cls[order] == c]  # this class, best first
        n_kept = 0
        while rest.size and n_kept < limit:
            i = rest[0]
            kept.append(i)
            n_kept += 1
            rest = rest[1:]
            if rest.size:
                rest = rest[~(_iou(boxes[i], boxes[rest]) > iou_threshold)]
    kept = sorted(kept, key=lambda i: (-score[i], anchor[i]))[:limit]
    dets = [Detection(int(cls[i]), _label(labels, int(cls[i])), float(score[i]), frame.box(*boxes[i])) for i in kept]
    return Decoded("detection", "yolov8", detections=dets)


def _hailo(t: _Tensor, labels, o: Options, plan: _Plan, model) -> Decoded:
    v = t.values
    frame = _Frame(model, o)
    threshold = _f32(o.threshold) if o.threshold >= 0 else DETECTION_THRESHOLD
    pos = 0
    dets = []
    for cls in range(plan.classes):
        if pos >= v.size:
            raise ResultsError("the Hailo NMS frame ends before class %d" % cls)
        count = float(v[pos])
        pos += 1
        if not math.isfinite(count) or count < 0 or count > plan.max_boxes or count != math.floor(count):
            raise ResultsError("the Hailo NMS frame gives class %d a box count of %s; the frame has room for 0..%d"
                               % (cls, _num(count), plan.max_boxes))
        boxes = int(count)
        if boxes * 5 > v.size - pos:
            raise ResultsError("the Hailo NMS frame ends inside the boxes of class %d" % cls)
        for b in range(boxes):
            y0, x0, y1, x1, score = (float(x) for x in v[pos:pos + 5])
            pos += 5
            if not all(math.isfinite(x) for x in (y0, x0, y1, x1, score)):
                raise ResultsError("the Hailo NMS frame has a non-finite value in box %d of class %d" % (b, cls))
            if score >= threshold:
                dets.append(Detection(cls, _label(labels, cls), score,
                                      frame.box(x0 * frame.width, y0 * frame.height, x1 * frame.width,
                                                y1 * frame.height)))
    return Decoded("detection", "hailo_nms_by_class", detections=_sort_and_cut(dets, o.max_results or DETECTION_MAX))


def _segmentation(t: _Tensor, labels, o: Options, plan: _Plan, model) -> Decoded:
    s = t.info.shape
    height, width = s[1], s[2]
    cells = width * height
    v = t.values
    if plan.decoder == "class_mask":
        v = v[:cells]
        with np.errstate(invalid="ignore"):
            good = np.isfinite(v) & (v >= 0) & (v <= 2147483647)
            good &= np.where(good, v == np.floor(np.where(good, v, 0)), False)
        if not np.all(good):
            i = int(np.argmin(good))
            raise ResultsError("mask cell (%d, %d) holds %s, not a class index" % (i % width, i // width, _num(v[i])))
        classes = v.astype(np.int32)
    else:
        classes, _ = _first_max(v.reshape(cells, s[3]), 1)
        classes = classes.astype(np.int32)
    ids, counts = np.unique(classes[classes >= 0], return_counts=True)
    order = np.lexsort((ids, -counts))
    present = [ClassArea(int(ids[i]), _label(labels, int(ids[i])), int(counts[i]), float(counts[i]) / cells)
               for i in order]
    placement = o.placement
    if placement is None and model.inputs:
        try:
            w, h = _input_geometry(model.inputs[0])
            placement = Placement(w, h, w, h)
        except ResultsError:
            placement = None
    mask = Segmentation(width, height, classes.reshape(height, width), present, placement)
    return Decoded("segmentation", plan.decoder, mask=mask)


def _pose(t: _Tensor, labels, o: Options, plan: _Plan, model) -> Decoded:
    k = t.info.shape[2]
    frame = _Frame(model, o)
    points = []
    for i in range(k):
        y, x, score = (float(t.values[i * 3 + j]) for j in range(3))
        if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(score)):
            raise ResultsError("keypoint %d has a value that is not finite" % i)
        name = COCO_KEYPOINTS[i] if k == len(COCO_KEYPOINTS) else "k%d" % i
        points.append(Keypoint(name, frame.x(x * frame.width), frame.y(y * frame.height), score))
    return Decoded("pose", "movenet", keypoints=points)


def describe(client, engine: int = 0) -> ModelDescription:
    """The engine's model as the decoder needs it: its tensors (GET_TENSOR_INFO) and the engine's metadata
    (GET_MODEL_METADATA: task, labels, Hailo NMS layout; empty from servers before protocol 1.3)."""
    info = client.tensor_info(engine, refresh=True)
    return ModelDescription(info.inputs, info.outputs, list(client.model_metadata(engine).items()))


def decode(model, outputs: Sequence[Union[np.ndarray, bytes]], options: Optional[Options] = None,
           **option_fields) -> Decoded:
    """Decodes the outputs of one inference (one array or byte string per output, in output order). `model` is a
    ModelDescription (or anything with inputs, outputs and optionally metadata, e.g. Client.tensor_info()); option
    fields may also be given as keywords: decode(model, outs, threshold=0.5)."""
    o = replace(options or Options(), **option_fields)
    with np.errstate(all="ignore"):  # NaN and infinities in hostile outputs are handled, not warned about
        return _decode(model, list(outputs), o)


def _decode(model, outputs: list, o: Options) -> Decoded:
    if isinstance(o.threshold, float) and math.isnan(o.threshold):
        raise ResultsError("the score threshold is not a number")
    if not (0 <= o.iou_threshold <= 1):
        raise ResultsError("the IoU threshold %s is not within 0..1" % _num(o.iou_threshold))
    if len(outputs) != len(model.outputs):
        raise ResultsError("the model has %d output(s); %d were given" % (len(model.outputs), len(outputs)))
    tensors = [_Tensor(i, t, data) for i, (t, data) in enumerate(zip(model.outputs, outputs))]
    plan = _plan(model, o)
    labels = _labels(model, o)
    if plan.decoder == "top_k":
        return _classification(tensors[plan.output], labels, o, plan, model)
    if plan.decoder == "tflite_detection_postprocess":
        return _postprocess(tensors, labels, o, plan, model)
    if plan.decoder == "yolov8":
        return _yolov8(tensors[plan.output], labels, o, plan, model)
    if plan.decoder == "hailo_nms_by_class":
        return _hailo(tensors[plan.output], labels, o, plan, model)
    if plan.decoder in ("class_mask", "argmax_mask"):
        return _segmentation(tensors[plan.output], labels, o, plan, model)
    return _pose(tensors[plan.output], labels, o, plan, model)
