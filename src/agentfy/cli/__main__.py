"""``python -m agentfy.cli``: the command without the extras guard of :mod:`agentfy.__main__`."""

from agentfy.cli import main

main()
