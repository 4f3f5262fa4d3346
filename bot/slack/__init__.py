"""slack."""
