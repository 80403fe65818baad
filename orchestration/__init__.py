"""Prefect flows (thin) and the local-mode jobs that drive the platform."""
