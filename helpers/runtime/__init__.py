"""Part 4, the runtime and practice (chapters 24-30): caches, CUDA graphs, recompiles, tools, backends,
export, and the map of the whole course.

caches (a cold cache for measuring compiles; chapter 2, then chapter 24) · compile_time (where compile time
goes; chapter 2) · cache_layers (the on-disk caches, their keys, hits and misses; chapter 24) ·
cudagraphs (CUDA graph capture, replay and reduce-overhead; chapter 25) · recompiles (recompile causes,
the limit and the cures; chapter 26) · toolbox (logs, explain, the debug dump, the minifier; chapter 27) ·
backends (writing a torch.compile backend; chapter 28) · export_aoti (torch.export and AOTInductor;
chapter 29) · recap (the course's key experiments again, side by side; chapter 30) · bet (the compile
bet: after how many calls compiling pays off; chapters 2, 24, 26 and 30) · triage (`python -m helpers
triage` on a reader's own model: breaks, recompiles, guards, compile time, speed, kernels; chapter 30) ·
triage_checks (what the triage watches beyond one compile: every call's guard hits, shape causes, state and
randomness, autograd under CUDA graphs, ISA probes; chapter 30) · triage_fixes (`--try-fixes`: each cure
applied and measured; chapter 30).
"""
