"""Test support: start an aisrv server (aisrvd or the C++ test server with test-double engines) on a Unix socket in a
private temporary directory, wait until it answers, stop it with SIGTERM and check it exited cleanly."""
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import aisrv


def program(env_name: str) -> str:
    path = os.environ.get(env_name)
    if not path or not os.access(path, os.X_OK):
        raise unittest.SkipTest("%s is not set to a program (ctest sets it)" % env_name)
    return path


def testdata(relative: str) -> str:
    """A file of the shared test data; skipped when absent (a failure with AISRV_REQUIRE_TESTDATA=1, as on CI)."""
    root = (os.environ.get("AISRV_TESTDATA") or os.environ.get("AISRV_TESTDATA_DEFAULT") or
            os.path.join(os.path.dirname(__file__), "../../../../shared/testdata"))
    path = os.path.join(root, relative)
    if not os.path.exists(path):
        if os.environ.get("AISRV_REQUIRE_TESTDATA") == "1":
            raise AssertionError("test data missing: %s" % path)
        raise unittest.SkipTest("test data not found at %s" % path)
    return path


class Server:
    def __init__(self, argv, timeout: float = 30.0):
        self.dir = tempfile.mkdtemp(prefix="aisrv-py-")
        os.chmod(self.dir, 0o700)
        self.socket = os.path.join(self.dir, "s.sock")
        self.target = "unix:" + self.socket
        self.log_path = os.path.join(self.dir, "server.log")
        self.log = open(self.log_path, "wb")
        argv = [a.replace("{dir}", self.dir) for a in argv]  # "{dir}": the server's private temporary directory
        self.proc = subprocess.Popen(argv + ["--listen", self.target], stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("server exited with %d: %s" % (self.proc.returncode, self.output()))
            if os.path.exists(self.socket):
                try:
                    aisrv.Client(self.target, timeout=5).close()
                    break
                except aisrv.TransportError:
                    pass
            if time.monotonic() > deadline:
                self.proc.kill()
                raise RuntimeError("server did not answer within %.0f s: %s" % (timeout, self.output()))
            time.sleep(0.05)

    def output(self) -> str:
        self.log.flush()
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        code = self.proc.returncode
        shutil.rmtree(self.dir, ignore_errors=True)
        return code
