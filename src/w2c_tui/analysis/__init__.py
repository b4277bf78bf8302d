"""Analysis of finished sessions: paired comparison, cross-paradigm agreement, export."""
