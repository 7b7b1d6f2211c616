"""Pricing: rate tables, the vendor tables, model names across sellers, and dollars for calls
and sessions."""
