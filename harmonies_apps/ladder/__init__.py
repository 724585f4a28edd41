"""`harmonies ladder`: a persistent, anchored, reproducible rating ladder (docs/ladder.md).

One SQLite file per rules pool holds the bots, every game played (in blocks of every seating) and the sequential
tests run on them; every number shown is refitted from the stored games. `stats` holds the pure statistics (fits,
intervals, sequential tests), `report` the leaderboard built from them (text, JSON, HTML).
"""
