"""The escape attempts of `test_sandbox_escapes.py`: what each one tries and what it needs.

Each `Attack` is one cell of generated code with placeholders the host fills in (`{outside}`,
`{secret}`, `{port}`, ...; see `Host.fill` in conftest) and the flags that say where it runs.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conftest import Host
    from tablequest.sandbox import ExecResult

#: honest pandas work that must still give the right answer after an attempt
HONEST = "float(sales['amount'].sum())"
HONEST_VALUE = "419.5"


@dataclass(frozen=True)
class Attack:
    """One escape attempt; `code` is formatted with the host's values."""

    id: str
    code: str
    must_fail: bool = True
    timeout: float = 3.0
    fatal: bool = False  # kills the child (it is restarted for the next run)
    poisons: bool = False  # wrecks the session's Python state: run in a fresh session
    kernel: bool = True  # kernel layers alone must contain it (False: audit-hook territory)
    needs_quota: bool = False  # only safe to attempt where the session is a capped tmpfs
    native: bool = False  # file access from C code: only bubblewrap's view or Landlock stop it
    check: Callable[[ExecResult, Host], None] | None = None


def no_file(name: str) -> Callable[[ExecResult, Host], None]:
    def check(result: ExecResult, host: Host) -> None:
        assert not os.path.exists(name), name

    return check


def stdout_capped(result: ExecResult, host: Host) -> None:
    assert result.ok and len(result.stdout) < 101_000


def value_capped(result: ExecResult, host: Host) -> None:
    assert result.ok and result.value is not None and len(result.value) < 101_000


def figures_capped(result: ExecResult, host: Host) -> None:
    assert result.ok and len(result.figures) == 8 and "dropped" in result.stdout


def later_thread(result: ExecResult, host: Host) -> None:
    time.sleep(1.5)  # the thread's deadline passes while we wait


def died_or_nothing(result: ExecResult, host: Host) -> None:
    assert result.ok or "restarted" in str(result.error), result


def value_is(expected: str) -> Callable[[ExecResult, Host], None]:
    def check(result: ExecResult, host: Host) -> None:
        assert result.value == expected, result

    return check


def at_most_threads(cap: int) -> Callable[[ExecResult, Host], None]:
    def check(result: ExecResult, host: Host) -> None:
        assert result.ok and int(str(result.value)) < cap, result

    return check


def no_root_setuid_file(result: ExecResult, host: Host) -> None:
    assert not (result.ok and str(result.value).startswith("(0, ")), result


def forged_figures_refused(result: ExecResult, host: Host) -> None:
    assert result.figures == [] and "not a valid PNG image" in str(result.error), result


OUT = "{outside}"
ATTACKS = [
    # -- reading host files
    Attack("read-etc-passwd", "open('/etc/passwd').read()"),
    Attack("read-secret", "open({secret!r}).read()"),
    Attack("read-private-0600", "open({private!r}).read()"),
    Attack("read-pathlib", "import pathlib\npathlib.Path({secret!r}).read_text()"),
    Attack("read-os-open", "import os\nos.read(os.open({secret!r}, os.O_RDONLY), 100)"),
    Attack("read-pandas", "pd.read_csv({secret!r}, header=None)"),
    Attack("read-numpy", "np.fromfile({secret!r}, dtype='uint8').tobytes()"),
    Attack("read-io-open-code", "import io\nio.open_code({secret!r}).read()"),
    Attack("read-via-symlink", "import os\nos.symlink({secret!r}, 'l')\nopen('l').read()"),
    Attack("read-via-hardlink", "import os\nos.link({secret!r}, 'h')\nopen('h').read()"),
    Attack("read-proc-root", "open('/proc/self/root' + {secret!r}).read()"),
    Attack(
        "read-dir-fd",
        "import os, sys\nd = os.open(sys.prefix, os.O_RDONLY)\n"
        "os.read(os.open('../../../../../../../..' + {secret!r}, os.O_RDONLY, dir_fd=d), 99)",
    ),
    Attack("read-root-only-in-roots", "open({root_private!r}).read()"),
    Attack("list-host-dir", "import os\nos.listdir({outside!r})"),
    Attack("copy-out", "import shutil\nshutil.copy({secret!r}, 'x.txt')\nopen('x.txt').read()"),
    Attack("linecache", "import linecache\nlinecache.getlines({secret!r})", must_fail=False),
    # -- writing outside the session
    Attack("write-outside", "open({outside!r} + '/pwned.txt', 'w').write('x')"),
    Attack("write-to-csv", "sales.to_csv({outside!r} + '/pwned.csv')"),
    Attack(
        "write-rename", "import os\nopen('a', 'w').write('x')\nos.rename('a', {outside!r} + '/p')"
    ),
    Attack("write-mkdir", "import os\nos.makedirs({outside!r} + '/pwned_dir')"),
    Attack("write-python-install", "import os\nopen(os.__file__, 'a').write('# pwned')"),
    Attack("write-host-tmp", "open('/tmp/tablequest-pwned.txt', 'w').write('x')"),
    Attack("sqlite-outside", "import sqlite3\nsqlite3.connect({outside!r} + '/pwned.db')"),
    # -- changing host files without writing them (Landlock does not cover these calls)
    Attack("write-chmod", "import os\nos.chmod({secret!r}, 0o777)"),
    Attack(
        "write-chmod-dir-fd",
        "import os\nd = os.open({outside!r}, os.O_PATH)\nos.chmod('secret.txt', 0o666, dir_fd=d)",
    ),
    Attack(
        "write-utime-dir-fd",
        "import os\nd = os.open({outside!r}, os.O_PATH)\nos.utime('private.txt', (0, 0), dir_fd=d)",
    ),
    Attack("write-setxattr", "import os\nos.setxattr({secret!r}, 'user.pwned', b'1')"),
    Attack("write-chown", "import os\nos.chown({secret!r}, os.getuid(), os.getgid())"),
    Attack(
        "write-setuid-copy",
        "import os, shutil, stat\nshutil.copy('/usr/bin/true', 'suid')\nos.chmod('suid', 0o4755)\n"
        "st = os.stat('suid')\n(st.st_uid, bool(st.st_mode & stat.S_ISUID))",
        must_fail=False,
        check=no_root_setuid_file,
    ),
    # -- file access from native code (no audit event: the kernel layers must hold)
    Attack("native-parquet-write", "sales.to_parquet({outside!r} + '/pwned.parquet')", native=True),
    Attack("native-arrow-read", "import pyarrow as pa\npa.OSFile({secret!r}).read()", native=True),
    Attack(
        "native-arrow-write",
        "import pyarrow as pa\npa.OSFile({outside!r} + '/pwned.bin', 'w').write(b'x')",
        native=True,
    ),
    Attack(
        "native-duckdb-read",
        "import duckdb\nduckdb.sql(\"select * from read_csv('{secret}')\").fetchall()",
        native=True,
    ),
    Attack("native-lxml-read", "from lxml import etree\netree.parse({secret!r})", native=True),
    # -- environment secrets and /proc
    Attack("env-dump", "import os\ndict(os.environ)", must_fail=False),
    Attack(
        "env-get",
        "import os\nos.environ.get({secret_env!r}, 'absent')",
        must_fail=False,
        check=value_is("'absent'"),
    ),
    Attack(
        "proc-parent-environ", "import os\nopen(f'/proc/{{os.getppid()}}/environ', 'rb').read()"
    ),
    Attack("proc-host-environ", "open('/proc/{host_pid}/environ', 'rb').read()"),
    Attack("proc-host-cmdline", "open('/proc/{host_pid}/cmdline', 'rb').read()"),
    Attack(
        "proc-scan",
        "import os\nout = []\nfor p in os.listdir('/proc'):\n    try:\n"
        "        out.append(open(f'/proc/{{p}}/environ', 'rb').read())\n"
        "    except Exception:\n        pass\nout",
    ),
    Attack("proc-self-environ", "open('/proc/self/environ', 'rb').read()", must_fail=False),
    # -- network
    Attack(
        "net-socket", "import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=1)"
    ),
    Attack(
        "net-urllib",
        "import urllib.request\nurllib.request.urlopen('http://127.0.0.1:{port}/', timeout=1)",
    ),
    Attack(
        "net-http-client",
        "import http.client\nc = http.client.HTTPConnection('127.0.0.1', {port}, timeout=1)\n"
        "c.request('GET', '/')",
    ),
    Attack("net-raw-socket-module", "import sys\nsys.modules['_socket'].socket()"),
    Attack(
        "net-unix-socket", "import socket\nsocket.socket(socket.AF_UNIX).connect('/run/x.sock')"
    ),
    Attack("net-dns", "import socket\nsocket.getaddrinfo('example.com', 80)"),
    Attack("net-socketpair", "import socket\nsocket.socketpair()"),
    Attack("net-socketpair-raw", "import sys\nsys.modules['_socket'].socketpair()"),
    # -- process creation
    Attack("proc-subprocess", "import subprocess\nsubprocess.run(['touch', {outside!r} + '/p1'])"),
    Attack("proc-os-system", "import os\nos.system('touch ' + {outside!r} + '/p2')"),
    Attack("proc-os-popen", "import os\nos.popen('id').read()"),
    Attack("proc-execv", "import os\nos.execv('/bin/sh', ['sh', '-c', 'touch {outside}/p3'])"),
    Attack("proc-fork", "import os\nos.fork()"),
    # leaving the process group the host stops between runs (issue 25): refused by seccomp
    Attack("proc-setsid", "import os\nos.setsid()"),
    Attack("proc-setpgid", "import os\nos.setpgid(0, 0)"),
    Attack(
        "proc-posix-spawn",
        "import os\nos.posix_spawn('/usr/bin/touch', ['t', '{outside}/p4'], {{}})",
    ),
    Attack(
        "proc-raw-fork-exec",
        "import subprocess, os\nr, w = os.pipe()\n"
        "subprocess._fork_exec([b'/usr/bin/touch', b'{outside}/p5'], [b'/usr/bin/touch'], True, "
        "(w,), None, None, -1, -1, -1, -1, -1, -1, r, w, True, False, -1, None, None, None, -1, "
        "None, False)",
    ),
    Attack(
        "proc-importlib", "import importlib\nimportlib.import_module('subprocess').Popen(['id'])"
    ),
    Attack("proc-dunder-import", "__import__('os').system('touch {outside}/p6')"),
    Attack("proc-reload-os", "import importlib, os\nimportlib.reload(os)\nos.system('id')"),
    Attack(
        "proc-subclasses-popen",
        "[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == 'Popen'][0](['id'])",
    ),
    Attack(
        "proc-subclasses-globals",
        "[c for c in ().__class__.__bases__[0].__subclasses__() if c.__name__ == '_wrap_close']"
        "[0].__init__.__globals__['system']('touch {outside}/p7')",
    ),
    Attack(
        "proc-builtins-dict",
        "b = __builtins__ if isinstance(__builtins__, dict) else __builtins__.__dict__\n"
        "b['__import__']('os').system('id')",
    ),
    Attack("proc-exec-compile", "exec(compile(\"import os; os.system('id')\", 'x', 'exec'))"),
    Attack("proc-eval-string", "eval(\"__import__('os').system('id')\")"),
    Attack(
        "proc-multiprocessing", "import multiprocessing as mp\nmp.Process(target=print).start()"
    ),
    Attack("proc-pty", "import pty\npty.fork()"),
    # -- ctypes / cffi
    Attack("ctypes-system", "import ctypes\nctypes.CDLL(None).system(b'touch {outside}/p8')"),
    Attack("ctypes-preloaded", "import sys\nsys.modules['ctypes'].CDLL(None).system(b'id')"),
    Attack(
        "ctypes-pythonapi",
        "import sys\nsys.modules['ctypes'].pythonapi.Py_Initialize",
        kernel=False,
    ),
    Attack("ctypes-memory", "import sys\nsys.modules['ctypes'].string_at(id(1), 8)", kernel=False),
    Attack("cffi", "import cffi\ncffi.FFI().dlopen(None).system(b'id')"),
    # -- signals to other processes
    Attack("kill-parent", "import os\nos.kill(os.getppid(), 9)"),
    Attack("kill-host", "import os, signal\nos.kill({host_pid}, signal.SIGTERM)"),
    Attack("kill-everything", "import os\nos.kill(-1, 9)"),
    Attack("killpg", "import os\nos.killpg(os.getpgid(0), 9)"),
    Attack(
        "pidfd-kill", "import os, signal\nsignal.pidfd_send_signal(os.pidfd_open({host_pid}), 9)"
    ),
    Attack("renice-host", "import os\nos.setpriority(os.PRIO_PROCESS, {host_pid}, 19)"),
    # pid 1 of a pid namespace (unshare) ignores its own SIGKILL; elsewhere the child dies
    Attack(
        "suicide",
        "import os\nos.kill(os.getpid(), 9)",
        must_fail=False,
        poisons=True,
        check=died_or_nothing,
    ),
    Attack("exit", "import os\nos._exit(0)", fatal=True),
    # -- bombs
    Attack("fork-bomb", "import os\nwhile True:\n    os.fork()"),
    Attack("memory-bomb", "x = bytearray(10 * 1024 ** 3)"),
    Attack("memory-bomb-numpy", "np.ones((10 ** 5, 10 ** 5))"),
    Attack(
        "memory-creep",
        "def grow():\n    keep = []\n    while True:\n        keep.append(bytearray(10 ** 8))\n"
        "grow()",
    ),
    Attack("cpu-bomb", "while True:\n    pass", timeout=1.0),
    Attack("cpu-bomb-c-level", "sum(range(10 ** 12))", timeout=1.0, fatal=True),
    Attack(
        "cpu-bomb-swallows-timeout",
        "import time\nwhile True:\n    try:\n        time.sleep(10)\n    except BaseException:\n"
        "        pass",
        timeout=1.0,
        fatal=True,
    ),
    Attack(
        "cpu-bomb-ignores-alarm",
        "import signal\nsignal.setitimer(signal.ITIMER_REAL, 0)\n"
        "signal.signal(signal.SIGALRM, signal.SIG_IGN)\nwhile True:\n    pass",
        timeout=1.0,
        fatal=True,
    ),
    Attack(
        "disk-bomb-one-file",
        "f = open('big', 'wb')\nfor _ in range(2048):\n    f.write(b'x' * 2 ** 20)",
    ),
    Attack(
        "disk-bomb-many-files",
        "for i in range(64):\n    open(f'f{{i}}', 'wb').write(b'x' * (60 * 2 ** 20))",
        needs_quota=True,
        poisons=True,
    ),
    Attack(
        "disk-bomb-inodes",
        "import os\nmade = 0\ntry:\n    for i in range(30_000):\n"
        "        open(f'i{{i}}', 'w').close()\n        made += 1\nfinally:\n"
        "    for i in range(made):\n        os.remove(f'i{{i}}')",
        timeout=20.0,
        needs_quota=True,
    ),
    Attack("memfd", "import os\nos.memfd_create('hold')"),
    Attack(
        "sysv-shm",
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "shm = libc.shmget(0, 64 << 20, 0o1600)\nif shm < 0:\n"
        "    raise PermissionError(ctypes.get_errno())\nshm",
    ),
    Attack(
        "thread-cap",
        "import threading\nthreading.stack_size(1 << 16)\nstop = threading.Event()\nstarted = 0\n"
        "try:\n    for _ in range(3000):\n"
        "        threading.Thread(target=stop.wait, daemon=True).start()\n        started += 1\n"
        "except RuntimeError:\n    pass\nfinally:\n    stop.set()\nstarted",
        timeout=20.0,
        must_fail=False,
        check=at_most_threads(64),
    ),
    Attack("stdout-bomb", "print('x' * 100_000_000)", must_fail=False, check=stdout_capped),
    Attack("value-bomb", "'v' * 50_000_000", must_fail=False, check=value_capped),
    Attack(
        "figure-bomb",
        "for _ in range(40):\n    plt.figure()",
        must_fail=False,
        check=figures_capped,
    ),
    Attack(
        "thread-bomb",
        "import threading, time\nfor _ in range(5000):\n"
        "    threading.Thread(target=time.sleep, args=(30,), daemon=True).start()",
        poisons=True,
    ),
    Attack(
        "thread-after-return",
        "import threading, time, socket\ndef later():\n    time.sleep(0.5)\n"
        "    try:\n        open({outside!r} + '/late.txt', 'w').write('x')\n    except Exception:\n"
        "        pass\n    try:\n        socket.create_connection(('127.0.0.1', {port}))\n"
        "    except Exception:\n        pass\nthreading.Thread(target=later, daemon=True).start()",
        must_fail=False,
        check=later_thread,
    ),
    Attack(
        "thread-cpu-escape",
        "import threading\ndef spin():\n    while True:\n        pass\n"
        "threading.Thread(target=spin, daemon=True).start()\nimport time\ntime.sleep(0.3)\n"
        "float(sales['amount'].sum())",
        must_fail=False,
        poisons=True,
        check=value_is(HONEST_VALUE),
    ),
    # -- tampering with the in-process layer
    Attack(
        "hook-add",
        "import sys\ncalls = []\nsys.addaudithook(lambda e, a: calls.append(e))\n"
        "open('x.txt', 'w').close()\nlen(calls)",
        must_fail=False,
        kernel=False,
        check=value_is("0"),
    ),
    Attack("hook-settrace", "import sys\nsys.settrace(lambda *a: None)", kernel=False),
    Attack("hook-gc", "import gc\n[o for o in gc.get_objects() if callable(o)]", kernel=False),
    Attack("hook-code-object", "(lambda: 0).__code__.replace(co_code=b'')", kernel=False),
    Attack("hook-marshal", "import marshal\nmarshal.loads(marshal.dumps(1))", kernel=False),
    Attack(
        "hook-sys-audit-override",
        "import sys\nsys.audit = lambda *a: None\nopen({secret!r}).read()",
        poisons=True,
    ),
    Attack(
        "hook-monkeypatch-os",
        "import os, posixpath\nos.path.realpath = posixpath.realpath = lambda p, **k: 'x'\n"
        "os.lstat = lambda *a, **k: None\nopen({secret!r}).read()",
        poisons=True,
    ),
    Attack(
        "hook-monkeypatch-builtins",
        "import builtins, io\nreal = io.open\nbuiltins.isinstance = lambda *a: True\n"
        "builtins.len = lambda x: 0\nbuiltins.any = lambda x: True\nreal({secret!r}).read()",
        poisons=True,
    ),
    Attack(
        "hook-frame-locals",
        "try:\n    open({secret!r})\nexcept PermissionError as e:\n    tb = e.__traceback__\n"
        "    while tb.tb_next:\n        tb = tb.tb_next\n    tb.tb_frame.f_locals.clear()\n"
        "open({secret!r}).read()",
        kernel=False,
    ),
    Attack(
        "sys-modules-os",
        "import sys, types\nsys.modules['os'] = types.ModuleType('os')\ndel sys.modules['os']\n"
        "import os\nos.system('touch {outside}/p9')",
        poisons=True,
    ),
    Attack(
        "sys-modules-reimport",
        "import sys\nfor m in ('_posixsubprocess', 'posix', '_ctypes'):\n"
        "    sys.modules.pop(m, None)\nimport _posixsubprocess",
        poisons=True,
        kernel=False,
    ),
    # -- the pipe back to the host
    Attack(
        "forge-oversized-reply",
        "import os\nfor fd in range(3, 64):\n    try:\n"
        "        os.write(fd, b'\\x7f\\xff\\xff\\xff')\n    except OSError:\n        pass",
        fatal=True,
    ),
    Attack(
        "forge-bad-reply",
        'import os, struct\nmsg = b\'{{"ok": true, "stdout": 5}}\'\nfor fd in range(3, 64):\n'
        "    try:\n        os.write(fd, struct.pack('>I', len(msg)) + msg)\n    except OSError:\n"
        "        pass",
        fatal=True,
    ),
    Attack(
        "forge-nested-reply",
        "import os, stat, struct\nmsg = b'[' * 100_000 + b']' * 100_000\nfor fd in range(3, 64):\n"
        "    try:\n        if stat.S_ISFIFO(os.fstat(fd).st_mode):\n"
        "            os.write(fd, struct.pack('>I', len(msg)) + msg)\n    except OSError:\n"
        "        pass",
        fatal=True,
    ),
    Attack(
        "forge-figures-with-the-right-id",
        "import base64, json, os, stat, struct, sys\nf = sys._getframe()\n"
        "while f is not None and 'request' not in f.f_locals:\n    f = f.f_back\n"
        "rid = f.f_locals['request'].get('id') if f is not None else None\n"
        "fake = base64.b64encode(b'\\x89PNG\\r\\n\\x1a\\n' + b'junk' * 64).decode()\n"
        "msg = json.dumps({{'id': rid, 'ok': True, 'stdout': '', 'value': None, 'error': None, "
        "'figures': [fake] * 8}}).encode()\nfor fd in range(3, 64):\n    try:\n"
        "        if stat.S_ISFIFO(os.fstat(fd).st_mode):\n"
        "            os.write(fd, struct.pack('>I', len(msg)) + msg)\n    except OSError:\n"
        "        pass",
        fatal=True,
        check=forged_figures_refused,
    ),
    Attack(
        "close-pipes",
        "import os\nfor fd in range(3, 64):\n    try:\n        os.close(fd)\n    except OSError:\n"
        "        pass",
        fatal=True,
    ),
]
