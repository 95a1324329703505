"""Host transports of the aisrv protocol: sockets (Unix and TCP, docs/protocol.md 5.1) and USB bulk through pyusb
(5.2, docs/transport-usb.md). A transport moves one command and brings back (status, payload); it interprets
nothing beyond its framing."""
import os
import socket
import struct
import zlib

from . import _protocol as P
from .errors import ServerError, TransportError

_SETS = {v for v, kind in P.COMMANDS.values() if kind != "GET"}
_RETURNS = {v for v, kind in P.COMMANDS.values() if kind != "SET"}


def host_sends(cmd: int) -> bool:
    """The host sends a payload (SET and CALL commands: bit 0x80)."""
    return bool(cmd & 0x80)


def server_returns(cmd: int) -> bool:
    """The server answers with a payload (GET and CALL commands; unknown opcodes follow their bit)."""
    if cmd in _RETURNS or cmd in _SETS:
        return cmd in _RETURNS
    return not cmd & 0x80


def default_target() -> str:
    """Where aisrvd listens by default (protocol/src/endpoint.cpp): /run/aisrv/aisrv.sock for root, else in the user's
    runtime directory, else /tmp/aisrv-UID/aisrv.sock."""
    if os.geteuid() == 0:
        return "unix:/run/aisrv/aisrv.sock"
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return "unix:%s/aisrv/aisrv.sock" % runtime
    return "unix:/tmp/aisrv-%d/aisrv.sock" % os.geteuid()


def system_target() -> str:
    """The system-wide socket of the packaged aisrvd.socket, where a user without a daemon of their own is served:
    unix:/run/aisrv/aisrv.sock, or $AISRV_SYSTEM_SOCKET."""
    return os.environ.get("AISRV_SYSTEM_SOCKET") or "unix:/run/aisrv/aisrv.sock"


class SocketTransport:
    """unix:PATH, tcp:HOST:PORT, tcp:PORT (loopback), tcp:[IPv6]:PORT."""

    def __init__(self, target: str, timeout: float = 10.0):
        self.target = target
        self.sock = None
        try:
            if target.startswith("unix:"):
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.settimeout(timeout)
                self.sock.connect(target[5:])
            elif target.startswith("tcp:"):
                rest = target[4:]
                if rest.startswith("["):
                    host, port = rest[1:].split("]:", 1)
                elif ":" in rest:
                    host, port = rest.rsplit(":", 1)
                else:
                    host, port = "127.0.0.1", rest
                self.sock = socket.create_connection((host, int(port)), timeout=timeout)
                self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            else:
                raise ValueError("not a socket target: %r (unix:PATH or tcp:HOST:PORT)" % target)
        except OSError as e:
            if getattr(self, "sock", None) is not None:
                self.sock.close()
            raise TransportError("cannot connect to %s: %s" % (target, e)) from e

    def _recv_exactly(self, n: int) -> bytes:
        chunks, got = [], 0
        while got < n:
            try:
                b = self.sock.recv(min(n - got, 4 << 20))
            except OSError as e:
                raise TransportError("%s: %s" % (self.target, e)) from e
            if not b:
                raise TransportError("%s closed the connection" % self.target)
            chunks.append(b)
            got += len(b)
        return b"".join(chunks)

    def transact(self, cmd: int, engine: int, tensor: int, payload: bytes = b""):
        payload = bytes(payload)
        try:
            self.sock.sendall(struct.pack("<IIII", cmd, engine, tensor, len(payload)) + payload)
        except OSError as e:
            raise TransportError("%s: %s" % (self.target, e)) from e
        status, length = struct.unpack("<II", self._recv_exactly(8))
        if length > P.MAX_PAYLOAD:
            raise TransportError("%s answered with %d payload bytes, above the limit" % (self.target, length))
        return status, self._recv_exactly(length) if length else b""

    def describe(self) -> str:
        return self.target

    def close(self):
        self.sock.close()


class UsbTransport:
    """usb, usb:VID:PID or usb:VID:PID:SERIAL (hexadecimal ids), through pyusb (Debian python3-usb). The device is an
    aisrv interface (class 0xFF, subclass 0x41, protocol 0x01); the CRC-32 trailer is used when the server offers
    it (set by the client after GET_VERSION)."""

    def __init__(self, target: str = "usb", timeout: float = 10.0):
        try:
            import usb.core  # noqa: F401  (pyusb; only needed for USB)
            import usb.util  # noqa: F401
        except ImportError as e:
            raise TransportError("USB needs pyusb (Debian: python3-usb)") from e
        import usb.core
        import usb.util
        self.usb = usb
        self.target = target
        self.timeout_ms = int(timeout * 1000)
        self.crc = False
        parts = target.split(":")
        vid = int(parts[1], 16) if len(parts) > 1 else None
        pid = int(parts[2], 16) if len(parts) > 2 else None
        serial = parts[3] if len(parts) > 3 else None

        def is_aisrv(dev):
            if vid is not None and dev.idVendor != vid or pid is not None and dev.idProduct != pid:
                return False
            for cfg in dev:
                for itf in cfg:
                    if (itf.bInterfaceClass, itf.bInterfaceSubClass, itf.bInterfaceProtocol) == (
                            P.INTERFACE_CLASS, P.INTERFACE_SUB_CLASS, P.INTERFACE_PROTOCOL):
                        return True
            return False

        devices = list(usb.core.find(find_all=True, custom_match=is_aisrv) or [])
        if serial is not None:
            devices = [d for d in devices if usb.util.get_string(d, d.iSerialNumber) == serial]
        if not devices:
            raise TransportError("no aisrv USB device matching '%s' is attached" % target)
        if len(devices) > 1:
            raise TransportError("%d aisrv USB devices match '%s': name one with usb:VID:PID:SERIAL" %
                                 (len(devices), target))
        dev = self.dev = devices[0]
        itf = None
        for i in dev.get_active_configuration():
            if (i.bInterfaceClass, i.bInterfaceSubClass) == (P.INTERFACE_CLASS, P.INTERFACE_SUB_CLASS):
                itf = i
        self.interface = itf.bInterfaceNumber
        try:
            if dev.is_kernel_driver_active(self.interface):
                dev.detach_kernel_driver(self.interface)
        except (NotImplementedError, usb.core.USBError):
            pass
        usb.util.claim_interface(dev, self.interface)
        eps = list(itf)
        self.ep_out = next(e for e in eps if usb.util.endpoint_direction(e.bEndpointAddress) == usb.util.ENDPOINT_OUT)
        self.ep_in = next(e for e in eps if usb.util.endpoint_direction(e.bEndpointAddress) == usb.util.ENDPOINT_IN)
        self.mps = self.ep_in.wMaxPacketSize
        # A new program is a new session on the device (RESET_LINK with the new-session bit).
        self._control_out(P.VENDOR_RESET_LINK, P.RESET_NEW_SESSION)
        self._clear_halts()

    def _control_out(self, request: int, value: int = 0):
        self.dev.ctrl_transfer(P.REQUEST_TYPE_VENDOR_INTERFACE_OUT, request, value, self.interface, None,
                               timeout=self.timeout_ms)

    def _clear_halts(self):
        for ep in (self.ep_out, self.ep_in):
            try:
                self.dev.clear_halt(ep)
            except self.usb.core.USBError:
                pass

    def _stalled(self, cmd: int):
        """Clear both halts and raise the reason the device recorded (LAST_ERROR)."""
        self._clear_halts()
        data = bytes(self.dev.ctrl_transfer(P.REQUEST_TYPE_VENDOR_INTERFACE_IN, P.VENDOR_LAST_ERROR, 0, self.interface,
                                            10 + P.DEBUG_LOG_LINE_MAX, timeout=self.timeout_ms))
        status, _stalls, n = struct.unpack("<IIH", data[:10])
        from .errors import status_name  # noqa: E402
        raise ServerError(status, _command_name(cmd), data[10:10 + n].decode("utf-8", "replace") or status_name(status))

    def _write_transfer(self, data: bytes):
        if data:
            self.ep_out.write(data, timeout=self.timeout_ms)
        if len(data) % self.mps == 0:  # a zero-length packet ends a transfer of whole packets (or an empty one)
            self.ep_out.write(b"", timeout=self.timeout_ms)

    def _read_transfer(self, limit: int) -> bytes:
        chunk = max(self.mps, (256 << 10) // self.mps * self.mps)
        out = bytearray()
        while True:
            b = bytes(self.ep_in.read(chunk, timeout=self.timeout_ms))
            out += b
            if len(b) < chunk or len(out) > limit:
                return bytes(out)

    def transact(self, cmd: int, engine: int, tensor: int, payload: bytes = b""):
        payload = bytes(payload)
        usb = self.usb
        flag = P.CRC_FLAG if self.crc else 0
        packet = struct.pack("<III", cmd | flag, engine, tensor)
        try:
            self.ep_out.write(packet, timeout=self.timeout_ms)
            if host_sends(cmd):
                data = payload
                if self.crc:
                    data += struct.pack("<I", zlib.crc32(payload, zlib.crc32(packet)) & 0xFFFFFFFF)
                self._write_transfer(data)
            raw = bytes(self.ep_in.read(self.mps, timeout=self.timeout_ms))
            if len(raw) != 4:
                raise TransportError("%s answered with a %d-byte status transfer" % (self.target, len(raw)))
            status = struct.unpack("<I", raw)[0]
            answer = b""
            if server_returns(cmd):
                answer = self._read_transfer(P.MAX_PAYLOAD + 4)
                if self.crc:
                    if len(answer) < 4:
                        raise TransportError("answer too short for its CRC trailer")
                    body, sent = answer[:-4], struct.unpack("<I", answer[-4:])[0]
                    if zlib.crc32(body, zlib.crc32(raw)) & 0xFFFFFFFF != sent:
                        raise TransportError("the answer of %s is corrupt (CRC)" % _command_name(cmd))
                    answer = body
            return status, answer
        except usb.core.USBError as e:
            if e.errno == 32 or "Pipe" in str(e):  # EPIPE: the device stalled: it says why on ep0
                self._stalled(cmd)
            self._control_out(P.VENDOR_RESET_LINK)
            raise TransportError("%s: %s during %s" % (self.target, e, _command_name(cmd))) from e

    def describe(self) -> str:
        return self.target

    def close(self):
        self.usb.util.release_interface(self.dev, self.interface)
        self.usb.util.dispose_resources(self.dev)


def _command_name(cmd: int) -> str:
    for name, (value, _) in P.COMMANDS.items():
        if value == cmd:
            return name
    return "UNKNOWN"


def open_transport(target: str, timeout: float = 10.0):
    if target.startswith(("unix:", "tcp:")):
        return SocketTransport(target, timeout)
    if target == "usb" or target.startswith("usb:"):
        return UsbTransport(target, timeout)
    raise ValueError("cannot connect to %r: expected unix:PATH, tcp:HOST:PORT, tcp:PORT or usb[:VID:PID[:SERIAL]]" %
                     target)
