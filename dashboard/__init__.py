"""The researcher's dashboard: campaign list and pages, imports, publishing, settings."""
