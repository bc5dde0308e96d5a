"""Importing propositions and topic descriptions: file formats and the import job."""
