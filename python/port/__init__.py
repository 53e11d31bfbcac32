"""port: move the hotspots of a Python/NumPy program onto an NVIDIA GPU.

This package carries port's native binary (``bin/port``) and the C library
it was built against (``libc/``); ``port`` and ``python -m port`` run it
(see ``port._launch``). There is no Python API.
"""

from port._launch import bundled_loader, command, main

__all__ = ["bundled_loader", "command", "main"]
