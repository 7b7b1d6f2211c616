"""agentcost: facts about LLM calls, tokens and money from AI coding-agent session logs."""

__version__ = "0.1.0"
