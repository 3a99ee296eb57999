"""The agent runtime: a message from a channel, through an agent's loop, to a reply and the session's memory."""
