"""Tenant-scoped repositories: functions of ``(tx, scope, …)``; the scope is required and never defaulted.

A row of another tenant is "not found", exactly like a missing one.  IDs are parsed with ``parse_id``
before every write and every read where an empty result would hide a bug.
"""
