"""The course machinery every chapter uses; it never imports a station subpackage or private torch.

env (device, versions, caches) · state (the running notebook's chapter and Env) · session (the setup and
parameters cells) · figures (glue + expectations) · numbers (the series' values and the numbers table) ·
timing · plots · widgets · exercises (check, solution) · pointers (each chapter's "Where to read the
source", checked against a torch's files) · private (the one door to torch's private API,
used by the stations only). Notebooks reach these through ``helpers`` itself.
"""
