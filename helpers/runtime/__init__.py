"""Part 4, the runtime and practice (chapters 24-30): caches and compile time.

caches (a cold cache for measuring compiles; chapter 2, then chapter 24) · compile_time (where compile time
goes; chapter 2).
"""
