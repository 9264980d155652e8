"""Part 3, TorchInductor (chapters 17-23): the generated code and the bytes it moves.

code (the generated module and its kernels; first look in chapter 2) · traffic (the bytes-moved model of
chapter 2, extended to reductions in chapter 20) · stages (Inductor's pipeline and its debug dump;
chapter 17) · lowering (the lowering table and the loop-level IR; chapter 18) · scheduler (scheduler
nodes, dependencies and fusion scores; chapter 19) · fusion (what fuses and what walls stop it;
chapter 20) · triton_kernels (reading a generated Triton kernel and its launch; chapter 21) ·
cpp_backend (the C++ backend's scalar, SIMD and OpenMP loops; chapter 22) · autotune (choices,
benchmarks and max-autotune; chapter 23).
"""
