"""Errors of the aisrv client: a server's refusal carries its status bit, the command and the server's own log line
saying why; local failures (connection, timeout, framing) are TransportError."""
from . import _protocol as P

# Status bit -> error code name, as the C++ client's errc_name() (protocol/src/protocol.cpp).
_CODE = {
    "ERROR_NO_MODEL": "no_model",
    "ERROR_MODEL_ERR": "model_error",
    "ERROR_INFER_ERR": "infer_error",
    "ERROR_BAD_CMD": "bad_command",
    "ERROR_BAD_ENGINE": "bad_engine",
    "ERROR_BAD_TENSOR": "bad_tensor",
    "ERROR_BAD_LENGTH": "bad_length",
    "ERROR_NOT_SUPPORTED": "not_supported",
    "ERROR_FLASH": "flash_error",
    "ERROR_CRC": "crc_error",
    "ERROR_CANCELLED": "cancelled",
    "ERROR_INTERNAL": "internal",
    "ERROR_MODEL_CHANGED": "model_changed",
    "ERROR_DENIED": "denied",
    "ERROR_LIMIT": "limit",
    "ERROR_SENSOR": "sensor_error",
}


def status_name(status: int) -> str:
    """Name of the lowest status bit ("OKAY" for 0, "UNKNOWN" for a bit the table does not have)."""
    if status == 0:
        return "OKAY"
    lowest = status & -status
    for name, (bit, _) in P.STATUS.items():
        if bit == lowest:
            return name
    return "UNKNOWN"


def code_of(status: int) -> str:
    return _CODE.get(status_name(status & ~0x3), "internal")


class AisrvError(Exception):
    """Every error of this package."""

    code = "internal"


class TransportError(AisrvError):
    """The connection failed, timed out or the peer broke the framing."""

    code = "io_error"


class IncompatibleServer(AisrvError):
    """The server's protocol major range does not overlap ours."""

    code = "incompatible"


class ServerError(AisrvError):
    """The server answered a command with an error status. `message` is the server's debug-log line for it."""

    def __init__(self, status: int, command: str, message: str):
        self.status = status
        self.command = command
        self.code = code_of(status)
        self.message = message
        super().__init__("%s: %s (%s from %s)" % (self.code, message, status_name(status), command))
