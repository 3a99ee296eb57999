"""agentfy: the identity core of a multi-tenant AI-agent platform.

Identifiers enter at the edges, are checked once, and travel inside as values that cannot be confused.
The ID format itself lives in :mod:`agentfy.ids` (standard library only).
"""

__version__ = "0.1.0"
