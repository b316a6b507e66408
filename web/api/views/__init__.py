"""REST API views: each parses, authorizes, calls one jobs.actions verb (or reads), serializes."""
