"""numba's compile cache keyed on every source of this folder, not on the kernel's file alone.

numba checks a cached compile against a stamp of the one file the function is defined in. A
policy's kernel compiles skeleton.py's steps into itself, so an edit of skeleton.py alone left the
policies loading compiles of the old steps. The locators below add the digest of every module of
this folder to that stamp: an edit of any of them makes numba recompile (and overwrite) every
kernel here, and nothing has to be deleted by hand. numba chooses a function's locator from
``CacheImpl._locator_classes`` when the function is decorated, so this module installs them when
it is imported, and the package's __init__ imports it before any kernel module.
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

from numba.core import caching

HERE = Path(__file__).resolve().parent


def sources_digest(folder: Path) -> str:
    """sha256 over the names and bytes of the folder's modules, in name order."""
    h = hashlib.sha256()
    for path in sorted(folder.glob("*.py")):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


@cache
def folder_digest() -> str:
    """This folder's digest, read once a process (a process runs the compiles it loaded)."""
    return sources_digest(HERE)


class _FolderStamped:
    """Mixin for a numba locator: only for functions defined in this folder, and their stamp
    carries the folder's digest besides numba's own stamp of their file."""

    def get_source_stamp(self):
        return (super().get_source_stamp(), folder_digest())

    @classmethod
    def from_function(cls, py_func, py_file):
        if Path(py_file).resolve().parent != HERE:
            return None
        return super().from_function(py_func, py_file)


def install() -> None:
    """Put a folder-stamped locator before each of numba's file-backed ones (same cache places:
    NUMBA_CACHE_DIR, the __pycache__ beside the source, the user-wide one). Idempotent."""
    classes = caching.CacheImpl._locator_classes
    if any(issubclass(c, _FolderStamped) for c in classes):
        return
    for base in (caching.UserProvidedCacheLocator, caching.InTreeCacheLocator, caching.UserWideCacheLocator):
        stamped = type(f"FolderStamped{base.__name__}", (_FolderStamped, base), {})
        classes.insert(classes.index(base), stamped)


install()
