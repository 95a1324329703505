"""The package installs with pip from the source tree (pyproject.toml, Debian's setuptools, no package index) and the
installed copy imports and reports its version."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SOURCE = os.path.normpath(os.path.join(os.path.dirname(__file__), ".."))


class PipInstall(unittest.TestCase):
    def test_pip_install_from_the_source_tree(self):
        if subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode != 0:
            self.skipTest("pip is not installed (Debian: python3-pip; tools/install-deps installs it)")
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "src")  # a copy: pip's build files stay out of the checkout
            shutil.copytree(SOURCE, src, ignore=shutil.ignore_patterns("tests", "__pycache__", "build", "*.egg-info"))
            site = os.path.join(d, "site")
            r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps",
                                "--no-index", "--target", site, src], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            code = "import aisrv, sys; print(aisrv.__file__); print(aisrv.__version__, aisrv.PROTOCOL_MAJOR)"
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                 env=dict(os.environ, PYTHONPATH=site), cwd=d)
            where, version = out.stdout.splitlines()
            self.assertTrue(where.startswith(site), where)
            self.assertEqual(version, "0.1.0 1")


if __name__ == "__main__":
    unittest.main()
