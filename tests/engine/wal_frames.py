"""The pages each commit wrote, read from a live writer's WAL, by b-tree name.

A WAL frame is a 24-byte header (page number, database size after the
commit for a commit's last frame, else 0; the salts) and one page. The
frames of the current WAL generation carry the header's salts; the first
frame that does not (a preallocated zero frame, an older generation's)
ends the log. Page numbers are named with `dbstat` at the time of reading,
so a workload should be small and read before its WAL is checkpointed
(under `wal_autocheckpoint` pages, and before the writer closes).
"""

from __future__ import annotations

import sqlite3
import struct
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

_HEADER = struct.Struct(">8I")
_FRAME = struct.Struct(">4I")
_FRAME_HEADER_SIZE = 24


def commits(db_path: Path) -> list[list[int]]:
    """Each commit in the WAL, as the page numbers it wrote, oldest first."""
    data = db_path.with_name(db_path.name + "-wal").read_bytes()
    if len(data) < _HEADER.size:
        return []
    _magic, _version, page_size, _seq, salt1, salt2, _c1, _c2 = _HEADER.unpack_from(
        data
    )
    found: list[list[int]] = []
    pages: list[int] = []
    offset = _HEADER.size
    while offset + _FRAME_HEADER_SIZE + page_size <= len(data):
        page, size_after, frame_salt1, frame_salt2 = _FRAME.unpack_from(data, offset)
        if (frame_salt1, frame_salt2) != (salt1, salt2):
            break
        pages.append(page)
        if size_after:
            found.append(pages)
            pages = []
        offset += _FRAME_HEADER_SIZE + page_size
    return found


def btree_names(db_path: Path) -> dict[int, str]:
    """The b-tree (table or index) each page of the file belongs to now."""
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        return {
            page: name for name, page in conn.execute("SELECT name, pageno FROM dbstat")
        }
    finally:
        conn.close()


def named_commits(db_path: Path, after: int = 0) -> list[list[str]]:
    """The commits after the first `after`, each as the b-tree names of its pages."""
    names = btree_names(db_path)
    return [
        [names.get(page, f"page {page}") for page in pages]
        for pages in commits(db_path)[after:]
    ]
