"""The OpenAI-compatible endpoint: ``POST /v1/chat/completions`` and ``GET /v1/models``, so an existing OpenAI
client or SDK can talk to an agent (``base_url=<server>/v1``, ``api_key=<agentfy key>``, ``model=<agent>``).

One job per module: :mod:`.schemas` (the request and response bodies), :mod:`.errors` (OpenAI's error shape,
used under these routes only), :mod:`.sse` (the ``chat.completion.chunk`` stream), :mod:`.routes` (the
operations).  The rules are in ``docs/openai-compatible.md``.
"""
