"""kraftlake: history, incidents and data quality from Kafka's KRaft metadata log.

Layers (docs/architecture.md; each imports only the ones before it):
codec -> sources -> lake -> fold -> detect -> quality -> cli.
"""

__version__ = "0.1.0"
