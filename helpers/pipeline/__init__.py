"""The command line, ``python -m helpers`` (not for notebooks).

cli (argument parsing) · run (execute + verify + report.md; ``merge`` for a sharded run) · verify
(re-check an executed notebook from its outputs) · publish (a verified GPU run into chapters/) · sources
(chapter text sources ↔ notebooks) · lint (static checks on chapters) · guide (the instructor guide) ·
student (the student edition) · grade (score submitted notebooks with the course's own checks) ·
verification (the page of which chapters were verified where).
"""
