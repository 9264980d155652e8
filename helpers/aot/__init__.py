"""Part 2, AOTAutograd (chapters 12-16): the ATen graphs and the operator layers.

graphs (first look in chapter 2) · operators (chapter 1; chapter 14 counts the layers).
"""
