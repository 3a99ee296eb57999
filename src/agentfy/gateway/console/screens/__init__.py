"""The console's screens: one module each, every one reading and changing data through the API only."""
