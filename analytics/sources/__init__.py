"""Readers for vendor log formats. The only code that knows a vendor's on-disk layout."""
