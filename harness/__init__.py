"""Harness that runs real services (Redis, Elasticsearch, Prefect, demo site) on loopback."""
