"""The gateway: FastAPI HTTP and WebSocket API, authentication, the error contract, and ``agentfy serve``."""
