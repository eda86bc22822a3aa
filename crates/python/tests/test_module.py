"""The extension module as built from pyproject.toml: what a wheel ships."""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import pytest

from url_dedup import _native


def section_names(path: Path) -> set[str]:
    """The section names of a 64-bit little-endian ELF file."""
    data = path.read_bytes()
    assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, "not a 64-bit LE ELF"
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    strtab_offset = headers[shstrndx][4]
    names = set()
    for name, *_ in headers:
        start = strtab_offset + name
        names.add(data[start : data.index(b"\0", start)].decode())
    return names


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads ELF")
def test_the_module_is_stripped():
    """Debug information and the symbol table are most of an unstripped module's size; a
    wheel built from pyproject.toml leaves them out (maturin's strip)."""
    names = section_names(Path(_native.__file__))
    assert ".text" in names
    assert ".symtab" not in names
    assert not {n for n in names if n.startswith(".debug")}
