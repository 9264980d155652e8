"""The command line, ``python -m helpers``: run, verify, publish, lint, guide (not for notebooks).

cli (argument parsing) · run (execute + verify + report.md) · verify (re-check an executed notebook from
its outputs) · publish (a verified GPU run into chapters/) · lint (static checks on chapters) · guide (the
instructor guide).
"""
