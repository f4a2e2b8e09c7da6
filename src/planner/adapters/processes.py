"""Child processes that do not outlive their parent."""

from __future__ import annotations

import signal
import sys


def _die_with_parent() -> None:
    import ctypes

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


# For subprocess.Popen(preexec_fn=...): the child gets SIGTERM when its parent dies, even by
# SIGKILL, so no orphaned node or LLM server keeps running (and answering on the DDS domain).
DIE_WITH_PARENT = _die_with_parent if sys.platform == "linux" else None
