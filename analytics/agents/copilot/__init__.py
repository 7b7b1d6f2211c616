"""GitHub Copilot CLI: its home, event logs, session store, OTel exports, SDK captures, the
log's own prices (``rates learn``) and the simulator of its session trees."""
