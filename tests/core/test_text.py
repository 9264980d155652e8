"""Unit tests of helpers/core/text.py."""
from helpers.core.text import columns


def test_columns_align_rows_cut_long_left_lines_and_pad_the_shorter_side():
    text = columns(["a", "a much longer line"], ["x"], ("L", "R"), 6).splitlines()
    assert text[0] == "L       R" and text[1] == "----    ----"
    assert text[2] == "a       x"
    assert text[3] == "a much  "  # cut at the width; nothing on the right
