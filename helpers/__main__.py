"""``python -m helpers``: the course's command line (see helpers/pipeline/cli.py).

``python -m helpers triage ...`` goes to ``helpers.runtime.triage.main`` (a station's tool, which the
pipeline may not import); every other command goes to the pipeline's command line.
"""
import sys


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["triage"]:
        from .runtime.triage import main as triage

        return triage(argv[1:])
    from .pipeline.cli import main as pipeline

    return pipeline(argv)


if __name__ == "__main__":
    sys.exit(main())
