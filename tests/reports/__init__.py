"""Tests of reports/: the report's table, figures, headline and dashboard."""
