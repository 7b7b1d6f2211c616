"""Rendering: text tables, JSON and CSV, charts, the HTML report and the progress bar."""
