"""Framework-agnostic core: configuration and logic shared by crawlers and flows."""
