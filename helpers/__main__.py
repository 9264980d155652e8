"""``python -m helpers``: the course's command line (see helpers/pipeline/cli.py)."""
import sys

from .pipeline.cli import main

if __name__ == "__main__":
    sys.exit(main())
