"""Lines of words (notes, errors) as a stream shows them: wrapped at a terminal's width, so no
line is longer than the screen, and whole elsewhere (a pipe, a file, a test), for scripts to
read. The command line and the replay of a stored output (``analytics.entry``) both write
their notes through it, so a replayed note is wrapped as the command wrapped it."""

from __future__ import annotations

from typing import TextIO


def for_stream(text: str, stream: TextIO) -> str:
    """``text`` as ``stream`` shows it: each line longer than a terminal's width wrapped at
    it (words not broken at hyphens); unchanged when ``stream`` is not a terminal."""
    if not stream.isatty():
        return text
    import shutil
    import textwrap

    width = shutil.get_terminal_size().columns
    return "\n".join(
        textwrap.fill(line, width, break_on_hyphens=False) if len(line) > width else line
        for line in text.splitlines()
    )
