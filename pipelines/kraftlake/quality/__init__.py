"""Data quality: Great Expectations suites over the lake tables, results, reports, quarantine."""
