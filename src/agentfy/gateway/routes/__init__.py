"""The ``/v1`` routes, one module per resource; :mod:`agentfy.gateway.routes.mount` mounts them."""
