"""A Frigate `zmq` detector client written from the protocol facts of issue 25 (docs/frigate.md), with Debian's
python3-zmq: a REQ socket with send/receive timeouts (Frigate's request_timeout_ms, default 200 ms) that is closed and
reopened after a timeout; at start and after every timeout it first asks for its model (model_request, up to 30 s)
and sends the model file when the server does not have it (model_data); until a model is ready, and on any error or
timeout, a detection is 20 rows of zeros. Used by tests/frigate/test_frigate.py and `tools/bench frigate`."""
import json

import numpy as np
import zmq

ROWS = (20, 6)
MODEL_TIMEOUT_MS = 30000


class FrigateClient:
    def __init__(self, endpoint: str, model_name: str = "", model_path: str = "", model_type: str = "ssd",
                 request_timeout_ms: int = 200, context=None):
        self.endpoint = endpoint
        self.model_name = model_name
        self.model_path = model_path
        self.model_type = model_type
        self.timeout_ms = request_timeout_ms
        self.context = context or zmq.Context.instance()
        self.socket = None
        self.model_ready = False
        self.timeouts = 0
        self.replies = []  # the JSON answers of the model handshake, in order
        self._open()

    def _open(self):
        if self.socket is not None:
            self.socket.close(linger=0)
        self.socket = self.context.socket(zmq.REQ)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.connect(self.endpoint)
        self.model_ready = False

    def _request(self, parts, timeout_ms):
        self.socket.setsockopt(zmq.SNDTIMEO, timeout_ms)
        self.socket.setsockopt(zmq.RCVTIMEO, timeout_ms)
        try:
            self.socket.send_multipart(parts)
            return self.socket.recv_multipart()
        except zmq.Again:  # Frigate: close and reopen, the next request starts with the model again
            self.timeouts += 1
            self._open()
            return None

    def ensure_model(self) -> bool:
        """The model handshake; True when the server says the model is loaded."""
        if self.model_ready or not self.model_name:
            self.model_ready = self.model_ready or not self.model_name
            return self.model_ready
        reply = self._request([json.dumps({"model_request": True, "model_name": self.model_name}).encode()],
                              MODEL_TIMEOUT_MS)
        if reply is None:
            return False
        answer = json.loads(reply[0])
        self.replies.append(answer)
        if answer.get("model_available") and answer.get("model_loaded"):
            self.model_ready = True
            return True
        if not self.model_path:
            return False
        with open(self.model_path, "rb") as f:
            data = f.read()
        reply = self._request([json.dumps({"model_data": True, "model_name": self.model_name}).encode(), data],
                              MODEL_TIMEOUT_MS)
        if reply is None:
            return False
        answer = json.loads(reply[0])
        self.replies.append(answer)
        self.model_ready = bool(answer.get("model_saved") and answer.get("model_loaded"))
        return self.model_ready

    def detect(self, pixels: np.ndarray) -> np.ndarray:
        """`pixels`: uint8 [1, H, W, 3]. The 20x6 rows (zeros until a model is ready, on a timeout or an error)."""
        zeros = np.zeros(ROWS, np.float32)
        if not self.ensure_model():
            return zeros
        header = {"shape": list(pixels.shape), "dtype": str(pixels.dtype), "model_type": self.model_type}
        reply = self._request([json.dumps(header).encode(), pixels.tobytes(order="C")], self.timeout_ms)
        return decode_reply(reply) if reply is not None else zeros

    def close(self):
        if self.socket is not None:
            self.socket.close(linger=0)
            self.socket = None


def decode_reply(frames) -> np.ndarray:
    """Either one 480-byte part or [header, tensor], as Frigate's client reads them."""
    if len(frames) == 1:
        if len(frames[0]) != 20 * 6 * 4:
            raise ValueError("a reply of %d bytes" % len(frames[0]))
        return np.frombuffer(frames[0], np.float32).reshape(ROWS)
    header = json.loads(frames[0])
    return np.frombuffer(frames[1], np.dtype(header["dtype"])).reshape(header["shape"])
