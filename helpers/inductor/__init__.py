"""Part 3, TorchInductor (chapters 17-23): the generated code and the bytes it moves.

code (the generated module and its kernels; first look in chapter 2) · traffic (the bytes-moved model of
chapter 2, extended to reductions in chapter 20).
"""
