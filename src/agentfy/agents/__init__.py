"""Agents at run time: the router (loops cached by ``{tenant_id}:{agent_key}``), the loop's run state,
system-prompt configuration, workspace paths, and logging/tracing with the right identity in each place."""
