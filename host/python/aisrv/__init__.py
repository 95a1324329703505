"""aisrv — the Python client of the aisrv AI server (docs/python.md).

    import aisrv, numpy as np
    with aisrv.connect() as c:                        # $AISRV_CONNECT, else the daemon's default socket
        c.load_model(0, "model.tflite")
        outputs = c.infer({0: image}, dequantized=True)

Speaks the aisrv protocol over Unix and TCP sockets and USB (pyusb); tensors are NumPy arrays whose dtype, shape and
quantization come from the server (GET_TENSOR_INFO); a refused command raises ServerError carrying the server's own
reason. Pure Python: NumPy for arrays, pyusb only for USB."""
from . import codec, results
from ._protocol import PROTOCOL_MAJOR, PROTOCOL_MINOR
from .client import Client, connect, dequantize, numpy_dtype, quantize, read_token_file
from .errors import AisrvError, IncompatibleServer, ServerError, TransportError
from .transport import default_target

__version__ = "0.1.0"
__all__ = ["Client", "connect", "quantize", "dequantize", "numpy_dtype", "read_token_file", "codec", "results",
           "AisrvError", "ServerError", "TransportError", "IncompatibleServer", "default_target",
           "PROTOCOL_MAJOR", "PROTOCOL_MINOR", "__version__"]
