"""Reading a user's text files line by line, as every tokenizing, preparing and scoring step does.

Each line is decoded alone, so a byte that is not UTF-8 is reported with its file, line and column instead of
spoiling the whole file. A UTF-8 byte-order mark at the start of a file (Windows editors and PowerShell write
one) is dropped: it is not text, and left in place it would become part of the first row's first word, or make
the first JSON line unreadable.
"""

import os
from typing import Iterable, Iterator, List, Optional, Tuple

UTF8_BOM = b"\xef\xbb\xbf"


def decode_line(raw: bytes, number: int, source: str) -> str:
    """Line ``number`` (from 1) of ``source`` as text, without its line end.

    Raises:
        ValueError: the line is not UTF-8; the message names the file, the line and the byte.
    """
    if number == 1 and raw.startswith(UTF8_BOM):
        raw = raw[len(UTF8_BOM) :]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(
            f"{source}:{number}: not UTF-8 (byte {raw[error.start]:#04x} at column {error.start + 1})"
        ) from None
    return text.rstrip("\r\n")


def decoded_lines(reader: Iterable[bytes], source: str) -> Iterator[str]:
    """The lines of a binary reader (a file opened with ``"rb"``) as text; see ``decode_line``."""
    for number, raw in enumerate(reader, 1):
        yield decode_line(raw, number, source)


def read_lines(path: str) -> List[str]:
    """The lines of a UTF-8 text file; see ``decode_line``."""
    with open(path, "rb") as f:
        return list(decoded_lines(f, path))


def missing_output_folder(outputs: Iterable[Tuple[str, Optional[str]]]) -> Optional[str]:
    """For ``(flag, path)`` pairs of a script's output files (``None``: not asked for), the message for the
    first whose folder does not exist or that names a folder, so that a script says so before its work
    rather than after it."""
    for flag, path in outputs:
        if not path or path == "-":
            continue
        if os.path.isdir(path):
            return f"{flag} {path}: a folder, not a file"
        if not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            return f"{flag} {path}: its folder does not exist"
    return None
