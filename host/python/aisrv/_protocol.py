"""The aisrv wire tables, generated from protocol/ by tools/gen-python-protocol: do not edit."""

# Commands: name -> (opcode, kind) with kind GET (the server answers data), SET (the host sends data),
# CALL (both ways).
COMMANDS = {
    "NONE": (0x00, "GET"),
    "GET_STATUS": (0x01, "GET"),
    "GET_INPUT_TENSOR": (0x03, "GET"),
    "SET_INPUT_TENSOR": (0x83, "SET"),
    "SET_SERVER": (0x04, "GET"),
    "START_INFER": (0x84, "SET"),
    "GET_OUTPUT_TENSOR": (0x05, "GET"),
    "SET_MODEL_PRIMARY": (0x86, "SET"),
    "SET_MODEL_SECONDARY": (0x87, "SET"),
    "SET_MODEL_PRIMARY_FLASH": (0x96, "SET"),
    "SET_MODEL_SECONDARY_FLASH": (0x97, "SET"),
    "GET_SPEC": (0x08, "GET"),
    "GET_TIMINGS": (0x09, "GET"),
    "GET_INPUT_TENSOR_LENGTH": (0x0A, "GET"),
    "GET_OUTPUT_TENSOR_LENGTH": (0x0B, "GET"),
    "START_ACQUIRE_SINGLE": (0x8C, "SET"),
    "START_ACQUIRE_STREAM": (0x8E, "SET"),
    "START_ACQUIRE_SET_I2C": (0x8F, "SET"),
    "GET_ACQUIRE_MODE": (0x0E, "GET"),
    "GET_SENSOR_TENSOR": (0x0D, "GET"),
    "SET_SENSOR_TENSOR": (0x8D, "SET"),
    "GET_DEBUG_LOG": (0x0F, "GET"),
    "GET_ID": (0x10, "GET"),
    "GET_OUTPUT_GPIO_EN": (0x11, "GET"),
    "SET_OUTPUT_GPIO_EN": (0x91, "SET"),
    "GET_OUTPUT_GPIO_THRESH": (0x12, "GET"),
    "SET_OUTPUT_GPIO_THRESH": (0x92, "SET"),
    "GET_OUTPUT_GPIO_MODE": (0x13, "GET"),
    "SET_OUTPUT_GPIO_MODE": (0x93, "SET"),
    "HELLO": (0x55, "GET"),
    "GET_VERSION": (0x20, "GET"),
    "GET_TENSOR_INFO": (0x21, "GET"),
    "GET_ENGINE_INFO": (0x22, "GET"),
    "GET_TIMING_RECORD": (0x23, "GET"),
    "GET_SESSION_INFO": (0x24, "GET"),
    "GET_SERVER_STATS": (0x25, "GET"),
    "GET_MODEL_METADATA": (0x26, "GET"),
    "UNLOAD_MODEL": (0xA0, "SET"),
    "CANCEL_INFER": (0xA1, "SET"),
    "AUTH": (0xA2, "SET"),
    "INFER": (0xA3, "CALL"),
    "GET_FLASH_CATALOGUE": (0x30, "GET"),
    "GET_FLASH_MODEL": (0x31, "GET"),
    "GET_FLASH_WRITE_STATE": (0x32, "GET"),
    "SET_FLASH_BEGIN": (0xB0, "SET"),
    "SET_FLASH_CHUNK": (0xB1, "SET"),
    "SET_FLASH_COMMIT": (0xB2, "SET"),
    "SET_FLASH_ABORT": (0xB3, "SET"),
    "SET_FLASH_ERASE": (0xB4, "SET"),
}

# Status bits: name -> (bit, meaning).
STATUS = {
    "BUSY": (0x0001, 'the engine is running an inference or a model load'),
    "SENSING": (0x0002, 'the engine is acquiring a sensor frame'),
    "ERROR_NO_MODEL": (0x0004, 'no model is loaded on this engine'),
    "ERROR_MODEL_ERR": (0x0008, 'the model was refused (malformed, unsupported, too large)'),
    "ERROR_INFER_ERR": (0x0010, 'the inference failed'),
    "ERROR_BAD_CMD": (0x0020, 'unknown opcode or command not valid here'),
    "ERROR_BAD_ENGINE": (0x0040, 'engine number out of range'),
    "ERROR_BAD_TENSOR": (0x0080, 'tensor index out of range'),
    "ERROR_BAD_LENGTH": (0x0100, 'payload length wrong for this command (or any payload on one that takes none)'),
    "ERROR_NOT_SUPPORTED": (0x0200, 'the hardware or feature this command needs is not configured'),
    "ERROR_FLASH": (0x0400, 'model store error (missing, corrupt, full, write failed)'),
    "ERROR_CRC": (0x0800, 'payload integrity check failed'),
    "ERROR_CANCELLED": (0x1000, 'the operation was cancelled'),
    "ERROR_INTERNAL": (0x2000, 'internal server error (see the debug log)'),
    "ERROR_MODEL_CHANGED": (0x4000, "the engine's model changed since this session wrote its inputs or ran its inference"),
    "ERROR_DENIED": (0x8000, 'not allowed for this session (access rule, token, or another session owns it)'),
    "ERROR_LIMIT": (0x10000, 'a configured limit was reached (session memory, queued requests)'),
    "ERROR_SENSOR": (0x20000, 'the sensor failed: no frame in time, the camera went away, an I2C write failed'),
}

# Limits, capability bits and other constants of limits.h.
PROTOCOL_MAJOR = 1
PROTOCOL_MINOR = 3
PROTOCOL_MIN_MAJOR = 1
MAX_PAYLOAD = 64 * 1024 * 1024
MAX_ENGINES = 16
MAX_TENSORS = 16
MAX_RANK = 8
MAX_NAME = 255
DEBUG_LOG_LINES = 256
DEBUG_LOG_LINE_MAX = 240
ENGINE_SERVER = 0xFFFFFFFF
SERVER_ID = 0x41495356
HEADER_SIZE = 12
CAP_CRC32 = 0x0001
CAP_FLASH = 0x0002
CAP_TIMING_RECORD = 0x0004
CAP_CANCEL = 0x0008
CAP_SENSOR = 0x0010
CAP_GPIO = 0x0020
CAP_CHAIN = 0x0040
CAP_USB_ONE_TRANSFER = 0x0080
CAP_INFER = 0x0100
CAP_SESSIONS = 0x0200
CAP_STATS = 0x0400
CAP_I2C = 0x0800
CAP_MODEL_METADATA = 0x1000
SESSION_LOG_LINES = 32
DEBUG_LOG_NEW = 0x80000000
DEBUG_LOG_OWN = 0x40000000
CANCEL_OWN = 0
CANCEL_ANY = 1
ACQUIRE_MODE_SINGLE = 0
ACQUIRE_MODE_STREAM = 1
ACQUIRE_FILL = 0
ACQUIRE_INFER = 1
MAX_TOKEN = 256

# Element types of the tensor-info record (payloads.hpp): name -> code.
DTYPES = {
    "float32": 0,
    "int8": 1,
    "uint8": 2,
    "int16": 3,
    "uint16": 4,
    "int32": 5,
    "int64": 6,
    "boolean": 7,
    "float16": 8,
    "unknown": 255,
}

# Record limits, model-store formats, USB link constants (payloads.hpp, flash_payloads.hpp, usb_link.hpp).
MAX_METADATA_ENTRIES = 256
FLASH_FORMAT_ANY = 0
FLASH_FORMAT_TFLITE = 1
FLASH_FORMAT_HEF = 2
MAX_CATALOGUE_ENTRIES = 4096
DEFAULT_VENDOR_ID = 0x1209
DEFAULT_PRODUCT_ID = 0x0001
INTERFACE_CLASS = 0xFF
INTERFACE_SUB_CLASS = 0x41
INTERFACE_PROTOCOL = 0x01
CRC_FLAG = 0x80000000
CRC_SIZE = 4
STATUS_SIZE = 4
REQUEST_TYPE_VENDOR_INTERFACE_IN = 0xC1
REQUEST_TYPE_VENDOR_INTERFACE_OUT = 0x41
RESET_NEW_SESSION = 0x0001
FULL_SPEED_PACKET = 64
HIGH_SPEED_PACKET = 512
SUPER_SPEED_PACKET = 1024
VENDOR_LAST_ERROR = 0x01
VENDOR_RESET_LINK = 0x02
