"""``make fuzz``: open-ended Schemathesis runs against a live server (see ``__main__``)."""
