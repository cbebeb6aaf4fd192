"""Incidents: partition intervals, events and broker outages grouped by what caused them."""
