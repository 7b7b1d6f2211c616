"""What agentcost keeps between runs, under the cache directory, and the keys that decide it."""
