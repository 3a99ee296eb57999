"""The ID cutover: legacy identities to canonical IDs."""
