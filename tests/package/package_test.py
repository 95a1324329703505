#!/usr/bin/python3
"""aisrv package test: CPack builds the Debian packages of this build tree; each is checked (fields, dependencies
from dpkg-shlibdeps, contents, conffiles, maintainer scripts), all are unpacked into a throw-away root, and the
service is started the way systemd starts it: the command line of the installed aisrvd.service, the listening socket
of aisrvd.socket passed by socket activation (LISTEN_FDS), readiness awaited on NOTIFY_SOCKET. The installed `aisrv`
tool and the installed Python package then load a model and run inferences through it; SIGTERM stops it cleanly.

    package_test.py BUILD_DIR TESTDATA_DIR

The packages of a sanitizer build depend on the sanitizer runtimes; tools/package makes the Release packages."""
import glob
import gzip
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

BUILD, TESTDATA = sys.argv[1], sys.argv[2]
PYTHON_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "host", "python", "aisrv")
PACKAGES = ["aisrvd", "aisrv-tools", "libaisrv-client0", "libaisrv-server0", "libaisrv-dev", "python3-aisrv"]
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)
    return ok


def run(*args, **kw):
    return subprocess.run(list(args), check=True, capture_output=True, text=True, **kw).stdout


def field(deb, name):
    return run("dpkg-deb", "-f", deb, name).strip()


def contents(deb):
    # "mode owner size date time ./path" or, for a symbolic link, "... ./path -> target"
    return [line.split(None, 5)[5].split(" -> ")[0].lstrip(".") for line in run("dpkg-deb", "-c", deb).splitlines()]


# Run by unshare in a private mount namespace: an overlay of / (the machine stays untouched), chroot into it.
PYTHON_OVERLAY_SCRIPT = """
set -e
m=$1 upper=$2 work=$3
mount -t overlay overlay -o "lowerdir=/,upperdir=$upper,workdir=$work" "$m"
mount -t proc proc "$m/proc"
mount --rbind /dev "$m/dev"
mount -t tmpfs tmpfs "$m/run"
chroot "$m" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 sh /aisrv-test/run.sh
"""
# Inside the chroot: install, import as root (Python writes __pycache__ where it may), remove.
PYTHON_DPKG_SCRIPT = """
pkg=/usr/lib/python3/dist-packages/aisrv
dpkg -i /aisrv-test/python3-aisrv.deb >/dev/null || exit 1
echo "installed: $(find $pkg -name '*.pyc' | wc -l) .pyc files"
python3 -c 'import aisrv, aisrv.client; print(aisrv.__file__)' || exit 1
echo "after import: $(find $pkg -name '*.pyc' | wc -l) .pyc files"
dpkg -r python3-aisrv >/dev/null || exit 1
echo "removed: left $(find $pkg 2>/dev/null | wc -l) paths"
find $pkg 2>/dev/null | head -5
exit 0
"""


def python_install_remove(tmp, deb):
    """dpkg -i, import as root, dpkg -r of python3-aisrv in a copy-on-write view of this machine (an overlay of / in a
    private mount namespace, chroot into it): the machine itself is not changed. Needs root, unshare and overlayfs."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        print("not root or no unshare: the dpkg install/remove of python3-aisrv is not run")
        return
    if subprocess.run(["dpkg-query", "-W", "python3-numpy"], capture_output=True).returncode != 0:
        print("python3-numpy not installed: the dpkg install/remove of python3-aisrv is not run")
        return
    d = os.path.join(tmp, "overlay")
    for sub in ("upper", "work", "merged", "upper/aisrv-test"):
        os.makedirs(os.path.join(d, sub))
    shutil.copy(deb, os.path.join(d, "upper/aisrv-test/python3-aisrv.deb"))
    with open(os.path.join(d, "upper/aisrv-test/run.sh"), "w") as f:
        f.write(PYTHON_DPKG_SCRIPT)
    r = subprocess.run(["unshare", "--mount", "--fork", "sh", "-c", PYTHON_OVERLAY_SCRIPT, "sh",
                        os.path.join(d, "merged"), os.path.join(d, "upper"), os.path.join(d, "work")],
                       capture_output=True, text=True, timeout=300)
    out = (r.stdout + r.stderr).strip()
    if r.returncode != 0 and "installed:" not in out:
        # No overlay or no mount namespace here (a container without CAP_SYS_ADMIN): say so, fail only when required.
        check(os.environ.get("AISRV_REQUIRE_DPKG_CHROOT") != "1", "dpkg install/remove in an overlay: " + out[-300:])
        print("cannot install into an overlay of / here: the dpkg install/remove of python3-aisrv is not run: " +
              out[-300:])
        return
    modules = len([f for f in os.listdir(PYTHON_SOURCE) if f.endswith(".py")])
    compiled = re.search(r"installed: (\d+) \.pyc", out)
    check(r.returncode == 0 and compiled is not None and int(compiled.group(1)) >= modules,
          "python3-aisrv byte-compiled by its postinst (py3compile) at dpkg -i, %d modules: %s"
          % (modules, out.replace("\n", "; ")))
    check(r.returncode == 0 and "removed: left 0 paths" in out,
          "dpkg -r python3-aisrv leaves no __pycache__ (prerm: py3clean), not even after an import as root")


def main():
    tmp = tempfile.mkdtemp(prefix="aisrv-package-")
    proc = None
    try:
        out = os.path.join(tmp, "debs")
        t0 = time.monotonic()
        run("cpack", "-G", "DEB", "-B", out, "--config", os.path.join(BUILD, "CPackConfig.cmake"), cwd=BUILD)
        debs = {}
        for name in PACKAGES:
            found = glob.glob(os.path.join(out, name + "_*.deb"))
            if check(len(found) == 1, "package %s built" % name):
                debs[name] = found[0]
        print("cpack: %d packages in %.0f s" % (len(debs), time.monotonic() - t0))
        if len(debs) != len(PACKAGES):
            return

        # --- control fields and dependencies --------------------------------------------------------------------
        version = field(debs["libaisrv-client0"], "Version")
        for name, deb in debs.items():
            check(field(deb, "Package") == name and field(deb, "Version") == version, "%s %s" % (name, version))
        depends = {name: field(deb, "Depends") for name, deb in debs.items()}
        for name in ("aisrvd", "aisrv-tools", "libaisrv-client0", "libaisrv-server0"):
            check("libc6" in depends[name] and "libstdc++6" in depends[name],
                  "%s: shared-library dependencies from dpkg-shlibdeps (%s)" % (name, depends[name][:90]))
        check("libsystemd0" in depends["aisrvd"], "aisrvd depends on libsystemd0")
        check("libzmq5" in depends["aisrvd"], "aisrvd depends on libzmq5 (--frigate)")
        check("libturbojpeg0" in depends["aisrv-tools"] and "libpng16-16" in depends["aisrv-tools"],
              "aisrv-tools depends on the picture decoders")
        check(re.search(r"libaisrv-client0 \(= [^)]+\)", depends["libaisrv-dev"]) is not None and
              re.search(r"libaisrv-server0 \(= [^)]+\)", depends["libaisrv-dev"]) is not None,
              "libaisrv-dev depends on exactly its libraries (%s)" % depends["libaisrv-dev"])
        check("libaisrv-client0" in depends["libaisrv-server0"], "libaisrv-server0 depends on libaisrv-client0")
        check("init-system-helpers" in depends["aisrvd"], "aisrvd depends on init-system-helpers (deb-systemd-helper)")
        check(field(debs["python3-aisrv"], "Architecture") == "all" and "python3-numpy" in depends["python3-aisrv"],
              "python3-aisrv: architecture all, depends on python3-numpy")

        # --- contents -----------------------------------------------------------------------------------------------
        want = {
            "aisrvd": ["/usr/sbin/aisrvd", "/usr/lib/systemd/system/aisrvd.service", "/usr/lib/systemd/system/aisrvd.socket",
                       "/usr/lib/udev/rules.d/70-aisrv.rules", "/usr/lib/sysusers.d/aisrv.conf", "/etc/aisrv/aisrvd.conf",
                       "/usr/share/man/man8/aisrvd.8.gz", "/usr/share/bash-completion/completions/aisrvd"],
            "aisrv-tools": ["/usr/bin/aisrv", "/usr/share/man/man1/aisrv.1.gz",
                            "/usr/share/bash-completion/completions/aisrv"],
            "libaisrv-client0": ["libaisrv-client.so.0"],
            "libaisrv-server0": ["libaisrv-server.so.0"],
            "libaisrv-dev": ["/usr/include/aisrv/client/client.hpp", "libaisrv-client.so", "/cmake/aisrv/aisrvConfig.cmake",
                             "/pkgconfig/aisrv.pc", "/usr/share/aisrv/mcu/src/aisrv_mcu.c"],
            "python3-aisrv": ["/usr/lib/python3/dist-packages/aisrv/__init__.py",
                              "/usr/lib/python3/dist-packages/aisrv/client.py"],
        }
        for name, files in want.items():
            listing = contents(debs[name])
            for f in files:
                check(any(p.endswith(f) for p in listing), "%s contains %s" % (name, f))
            check(any(p.startswith("/usr/share/doc/%s/" % name) for p in listing), "%s has its /usr/share/doc" % name)
        lib_control = os.path.join(tmp, "lib-control")
        run("dpkg-deb", "-e", debs["libaisrv-client0"], lib_control)
        check("activate-noawait ldconfig" in open(os.path.join(lib_control, "triggers")).read(),
              "libaisrv-client0 refreshes the linker cache through the ldconfig trigger")
        check(os.path.exists(os.path.join(lib_control, "shlibs")), "libaisrv-client0 has a shlibs file")
        control = os.path.join(tmp, "control")
        run("dpkg-deb", "-e", debs["aisrvd"], control)
        with open(os.path.join(control, "conffiles")) as f:
            check("/etc/aisrv/aisrvd.conf" in f.read().split(), "aisrvd.conf is a conffile")
        for script in ("postinst", "prerm", "postrm"):
            path = os.path.join(control, script)
            check(os.access(path, os.X_OK) and subprocess.run(["sh", "-n", path]).returncode == 0,
                  "aisrvd %s is an executable shell script that parses" % script)

        # --- one synopsis per package (the first line of Description) ---------------------------------------------
        synopses = {name: field(deb, "Description").split("\n")[0].strip() for name, deb in debs.items()}
        check(all(synopses.values()) and len(set(synopses.values())) == len(synopses),
              "each package has its own synopsis: " + "; ".join("%s: %s" % kv for kv in synopses.items()))
        for name, deb in debs.items():  # one leading space: a second one would make the line verbatim (lintian)
            extended = run("dpkg-deb", "-f", deb, "Description").split("\n")[1:]
            check(all(l.startswith(" ") and not l.startswith("  ") for l in extended if l),
                  "%s: the extended description's lines start with one space" % name)

        # --- python3-aisrv installed and removed by dpkg: byte-compiled at install, nothing left after removal -------
        python_install_remove(tmp, debs["python3-aisrv"])

        # --- unpack and start the service as systemd would --------------------------------------------------------
        root = os.path.join(tmp, "root")
        for deb in debs.values():
            run("dpkg-deb", "-x", deb, root)
        unit = open(os.path.join(root, "usr/lib/systemd/system/aisrvd.service")).read()
        check("Type=notify" in unit and "NoNewPrivileges=yes" in unit and "DeviceAllow=" in unit,
              "the unit is Type=notify and hardened")
        check(re.search(r"^WatchdogSec=[1-9]", unit, re.M) is not None, "the unit has a watchdog (WatchdogSec=)")
        exec_start = shlex.split(re.search(r"^ExecStart=(.*)$", unit, re.M).group(1))
        sock_unit = open(os.path.join(root, "usr/lib/systemd/system/aisrvd.socket")).read()
        check("ListenStream=/run/aisrv/aisrv.sock" in sock_unit, "the socket unit listens on /run/aisrv/aisrv.sock")
        # The socket's directory belongs to the socket unit: a RuntimeDirectory=aisrv of the service would be re-owned
        # and deleted by systemd under the listening socket (tests/vm/systemd runs it under a real systemd).
        runtime_dirs = " ".join(re.findall(r"^RuntimeDirectory=(.*)$", unit, re.M)).split()
        check("aisrv" not in runtime_dirs and re.search(r"^DirectoryMode=0755$", sock_unit, re.M) is not None,
              "/run/aisrv belongs to aisrvd.socket (0755), not to the service's RuntimeDirectory= (%s)" % runtime_dirs)
        # The packaged configuration, with the admin group (created by sysusers on a real install) left out here.
        conf_path = exec_start[exec_start.index("--config") + 1]
        conf = open(root + conf_path).read()
        conf = re.sub(r"^admin-group.*$", "", conf, flags=re.M)
        test_conf = os.path.join(tmp, "aisrvd.conf")
        with open(test_conf, "w") as f:
            f.write(conf)
        argv = [root + exec_start[0]] + [test_conf if a == conf_path else a for a in exec_start[1:]]

        run_dir = os.path.join(tmp, "run")
        os.mkdir(run_dir, 0o755)
        listen = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listen.bind(os.path.join(run_dir, "aisrv.sock"))
        listen.listen(128)
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        notify.bind(os.path.join(tmp, "notify"))
        notify.settimeout(60)
        env = dict(os.environ, LISTEN_FDS="1", NOTIFY_SOCKET=os.path.join(tmp, "notify"))
        env.pop("LISTEN_PID", None)

        # As systemd: the socket as fd 3, LISTEN_FDS=1, LISTEN_PID the daemon's pid (a shell moves the socket to fd 3,
        # sets LISTEN_PID to its own pid and execs the daemon, which keeps that pid).
        fd = listen.fileno()
        log = open(os.path.join(tmp, "aisrvd.log"), "wb")
        move = "" if fd == 3 else "exec 3<&%d %d<&-; " % (fd, fd)
        proc = subprocess.Popen(["/bin/sh", "-c", move + 'export LISTEN_PID=$$; exec "$@"', "sh"] + argv,
                                env=env, pass_fds=(fd,), stdout=log, stderr=subprocess.STDOUT)
        messages = []
        try:
            while not any("READY=1" in m for m in messages):
                messages.append(notify.recv(4096).decode())
        except socket.timeout:
            pass
        check(any("READY=1" in m for m in messages), "aisrvd reported READY=1 on NOTIFY_SOCKET (%s)" %
              " | ".join(m.replace("\n", " ") for m in messages))
        listen.close()  # the daemon holds its copy, as with systemd
        target = "unix:" + os.path.join(run_dir, "aisrv.sock")

        tool = os.path.join(root, "usr/bin/aisrv")
        version = subprocess.run([tool, "--connect", target, "version"], capture_output=True, text=True)
        check(version.returncode == 0 and "protocol 1.3" in version.stdout,
              "the installed aisrv talks to the service: %s" % version.stdout.strip().replace("\n", "; ")[:120])
        model = os.path.join(TESTDATA, "tflite/tensorflow__tflite-micro/person_detect.tflite")
        if not os.path.exists(model):
            check(os.environ.get("AISRV_REQUIRE_TESTDATA") != "1", "test data present")
            print("test data absent: no inference through the packages")
        else:
            image = os.path.join(TESTDATA, "reference_io/tflite-micro/person_int8_96x96.bin")
            expected = open(os.path.join(TESTDATA, "expected/person_detect__person_int8_96x96.out0.bin"), "rb").read()
            r = subprocess.run([tool, "--connect", target, "load", model], capture_output=True, text=True)
            check(r.returncode == 0, "aisrv load through the service " + r.stderr.strip())
            r = subprocess.run([tool, "--connect", target, "--json", "infer", "-i", image, "-o",
                                os.path.join(tmp, "out.bin")], capture_output=True, text=True)
            check(r.returncode == 0 and open(os.path.join(tmp, "out.bin"), "rb").read() == expected,
                  "aisrv infer through the service gives TFLite Micro's output " + r.stderr.strip())
            code = ("import aisrv, numpy as np; c = aisrv.connect(%r); "
                    "print(aisrv.__file__); print(c.infer({0: np.fromfile(%r, np.int8)})[0].tobytes().hex())"
                    % (target, image))
            py_env = dict(os.environ, PYTHONPATH=os.path.join(root, "usr/lib/python3/dist-packages"))
            r = subprocess.run(["/usr/bin/python3", "-c", code], capture_output=True, text=True, env=py_env, cwd=tmp)
            lines = r.stdout.split()
            check(r.returncode == 0 and lines[0].startswith(root) and lines[1] == expected.hex(),
                  "the installed Python package runs an inference through the service " + r.stderr.strip()[-200:])

        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
        notify.settimeout(1)
        try:
            while True:
                messages.append(notify.recv(4096).decode())
        except socket.timeout:
            pass
        check(any("STOPPING=1" in m for m in messages), "aisrvd reported STOPPING=1")
        check(code == 0, "aisrvd exited 0 on SIGTERM (exit %d)" % code)
        proc = None
        log.close()
        if failures:
            print(open(os.path.join(tmp, "aisrvd.log"), errors="replace").read()[-3000:])
    finally:
        if proc is not None:
            proc.kill()
            proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


main()
print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
