"""Files only this user could have written. The parse cache is a pickle, and loading a pickle
runs whatever its writer chose: so it is read only from a directory no other user can write to
(nor replace: every directory above it is another user's to write only with the sticky bit, as
``/tmp``), and only when the file is this user's and writable by no one else."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH


class Untrusted(Exception):
    """A file or directory someone else could have written, in one line."""


def _owners() -> tuple[int, ...]:
    return (os.geteuid(), 0)


def check_directory(directory: Path) -> None:
    """Untrusted when another user could put or replace a file in ``directory`` (one not made yet
    is judged by those it would be made in)."""
    path = directory.resolve()
    for at in (path, *path.parents):
        try:
            st = at.stat()
        except FileNotFoundError:
            continue
        if st.st_uid not in _owners():
            raise Untrusted(f"{at} belongs to uid {st.st_uid}, neither this user nor root")
        shared = st.st_mode & _OTHERS_WRITE
        if shared and (at == path or not st.st_mode & stat.S_ISVTX):
            raise Untrusted(f"{at} is writable by other users (mode {stat.S_IMODE(st.st_mode):o})")


def open_private(path: Path) -> BinaryIO:
    """``path`` opened for reading, not through a symlink; Untrusted unless this user owns it and
    no one else may write it; OSError when it cannot be opened."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    st = os.fstat(fd)
    if st.st_uid != os.geteuid() or st.st_mode & _OTHERS_WRITE or not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise Untrusted(f"{path} is not a file of this user's that only it may write")
    return os.fdopen(fd, "rb")
