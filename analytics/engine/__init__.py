"""The engine: log bytes to CALLS, SESSIONS and ISSUES (the native fold, ``analytics._scanner``,
and the Python stages that still run beside it). Everything agent-specific ends here."""
