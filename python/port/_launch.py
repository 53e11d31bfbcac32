"""The `port` command (and `python -m port`): replace this Python process by port's
native binary, with the same arguments, so its output, exit status and
signals are the user's own.

The binary was linked against the glibc named in ``bundle.json``. Where the
machine's C library is at least that one, it runs as any program does.
Where it is older (or not glibc), it runs through the loader and C library
this wheel carries in ``libc/`` (``ld-linux-x86-64.so.2 --library-path``),
which need nothing from the machine but a Linux kernel. Only port itself
runs that way: the Python and the tools it starts use the machine's own
libraries, as LD_LIBRARY_PATH is left as it was.

PORT_BUNDLED_LIBC=1 always uses the carried C library, =0 never does.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def _version(text):
    return tuple(int(part) for part in text.split(".")[:2])


def _machine_glibc():
    """The machine's glibc as (major, minor), or None (not glibc, unknown)."""
    try:
        name, version = os.confstr("CS_GNU_LIBC_VERSION").split()
        return _version(version) if name == "glibc" else None
    except (AttributeError, ValueError, OSError):
        return None


def _bundle():
    with open(os.path.join(HERE, "bundle.json"), encoding="utf-8") as f:
        return json.load(f)


def bundled_loader():
    """(loader, library folder) when port must run through the C library
    this wheel carries, None when the machine's own will do."""
    bundle = _bundle()
    choice = os.environ.get("PORT_BUNDLED_LIBC", "")
    have = _machine_glibc()
    if choice == "0" or (
        choice != "1" and have is not None and have >= _version(bundle["glibc"])
    ):
        return None
    libc = os.path.join(HERE, "libc")
    return os.path.join(libc, bundle["loader"]), libc


def command(argv):
    """The program to exec and its argument vector for `port ARGV...`."""
    exe = os.path.join(HERE, "bin", "port")
    loader = bundled_loader()
    if loader is None:
        return exe, [exe] + list(argv)
    loader, libc = loader
    # The loader's --library-path replaces LD_LIBRARY_PATH for port (the
    # CUDA libraries a machine points to with it stay reachable).
    paths = [libc] + [p for p in os.environ.get("LD_LIBRARY_PATH", "").split(":") if p]
    return loader, [
        loader,
        "--library-path",
        ":".join(paths),
        "--argv0",
        "port",
        exe,
    ] + list(argv)


def main():
    try:
        program, args = command(sys.argv[1:])
    except (OSError, ValueError, KeyError) as e:
        sys.stderr.write(
            f"port: this installation is incomplete ({e}); reinstall the port wheel\n"
        )
        return 1
    try:
        os.execv(program, args)
    except OSError as e:
        sys.stderr.write(f"port: cannot run {program}: {e.strerror or e}\n")
        return 126
