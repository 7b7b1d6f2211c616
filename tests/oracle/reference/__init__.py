"""The polars stages the native engine replaced, kept as its oracle.

``calls.py`` (EVENTS -> CALLS) and ``sessions.py`` (-> SESSIONS and the sessions' warnings)
are the stages as they ran before the engine (``native/agents/copilot/fold.rs``) took
them over; nothing at run time imports them. ``tests/oracle/test_engine_differential.py`` compares
the two table for table, and the stage tests (``test_calls.py``, ``test_sessions.py``, ...)
keep stating the rules on literal events.
"""
